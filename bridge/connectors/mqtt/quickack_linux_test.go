package mqtt

import (
	"net"
	"net/url"
	"testing"
	"time"

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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	echoOnce(t, l)
	c, err := dial(&url.URL{Scheme: "tcp", Host: l.Addr().String()}, dialOptions(5*time.Second, nil))
	require.NoError(t, err)
	defer c.Close()
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
