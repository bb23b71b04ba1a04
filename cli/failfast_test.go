package cli_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An MQTT broker address where nothing listens fails the route at once,
// as PostgreSQL and NATS do, not after the 30s connect_timeout.
func TestMQTTRefusedConnectionFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	for _, tc := range []struct{ name, from, to string }{
		{"target", "stdin://", "mqtt://" + addr + "?topic=t"},
		{"source", "mqtt://" + addr + "?topic=t", "stdout://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := run(t, "x\n", "copy", "--from", tc.from, "--to", tc.to)
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, "connection refused")
		})
	}
}
