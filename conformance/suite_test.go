//go:build unix

package conformance_test

import (
	"regexp"
	"testing"

	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// The suite against the simplest backend there is. Its fault loops, which
// take half a minute on a real disk, run in long mode only: backend-memfs's
// TestConformance runs them on every run, and backend-os's on a real disk.
func TestRootFS(t *testing.T) {
	var cfg conformance.Config
	if !longMode() {
		cfg.Skip = regexp.MustCompile(`^FaultInjection`)
	}
	conformance.RunConfig(t, cfg, func(t *testing.T) core.FS { return newRootFS(t) })
}
