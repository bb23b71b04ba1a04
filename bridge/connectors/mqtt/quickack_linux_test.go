package mqtt

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func quickAckOn(t *testing.T, c net.Conn) int {
	t.Helper()
	var err error
	v := -1
	require.NoError(t, c.(*quickAckConn).raw.Control(func(fd uintptr) {
		v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK)
	}))
	require.NoError(t, err)
	return v
}

// After each read the connection is back in quick acknowledgement mode,
// however the kernel left it: a broker that waits for an acknowledgement
// before it sends the next PUBACK gets it at once.
func TestReadRestoresQuickAck(t *testing.T) {
	c := dialEcho(t)
	require.IsType(t, &quickAckConn{}, c)
	for range 3 {
		// Delayed acknowledgements, as the kernel chooses for a
		// connection that answers what it reads.
		require.NoError(t, c.(*quickAckConn).raw.Control(func(fd uintptr) {
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 0))
		}))
		require.Equal(t, 0, quickAckOn(t, c))
		roundTrip(t, c)
		assert.Equal(t, 1, quickAckOn(t, c))
	}
}
