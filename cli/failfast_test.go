package cli_test

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An MQTT broker address where nothing listens fails each connection
// attempt at once, as PostgreSQL and NATS do, instead of waiting out the
// 30s connect_timeout: the route's connect retries then end within their
// budget.
func TestMQTTRefusedConnectionFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	for _, tc := range []struct{ name, from, to string }{
		{"target", "stdin://", "mqtt://" + addr + "?topic=t"},
		{"source", "mqtt://" + addr + "?topic=t", "stdout://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route := writeFile(t, filepath.Join(dir, tc.name+".yaml"), fmt.Sprintf("input: {url: %q}\noutput: {url: %q}\nretry: {budget: 1s}\n", tc.from, tc.to))
			start := time.Now()
			r := run(t, "x\n", "run", route)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.NotEqual(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stderr, "connection refused")
		})
	}
}
