package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// updateMetrics rewrites the generated part of docs/reference/metrics.md:
//
//	go test ./cli -run TestMetricsReference -update-metrics
var updateMetrics = flag.Bool("update-metrics", false, "rewrite the generated part of docs/reference/metrics.md")

const (
	metricsBegin = "<!-- metrics:begin (generated from metricDefs in cli/metrics.go; do not edit) -->"
	metricsEnd   = "<!-- metrics:end -->"
)

func metricsTable() string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | meaning |\n|---|---|---|---|\n")
	for _, d := range metricDefs {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, "`"+strings.Join(d.Labels, "`, `")+"`", d.Help)
	}
	return b.String()
}

// The metrics reference lists exactly the metrics of metricDefs, which are
// the only ones newMetrics registers besides the Go and process collectors.
func TestMetricsReference(t *testing.T) {
	const page = "../docs/reference/metrics.md"
	old, err := os.ReadFile(page)
	require.NoError(t, err)
	doc := string(old)
	i, j := strings.Index(doc, metricsBegin), strings.Index(doc, metricsEnd)
	require.True(t, i >= 0 && j > i, "markers %q and %q not found in order in %s", metricsBegin, metricsEnd, page)
	want := doc[:i+len(metricsBegin)] + "\n" + metricsTable() + doc[j:]
	if *updateMetrics {
		require.NoError(t, os.WriteFile(page, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, doc, "%s is out of date: run go test ./cli -run TestMetricsReference -update-metrics", page)
}
