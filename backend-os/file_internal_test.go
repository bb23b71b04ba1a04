//go:build linux

package osfs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestFileReadBlocksDespiteNonblock covers a descriptor whose O_NONBLOCK is
// honoured, as Open leaves it set: Read must wait for data rather than fail
// with EAGAIN. No regular file on Linux does that, so a pipe stands in.
func TestFileReadBlocksDespiteNonblock(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
	defer unix.Close(p[1])
	f := newFile(p[0], "pipe")
	defer f.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = unix.Write(p[1], []byte("late"))
	}()
	buf := make([]byte, 8)
	n, err := f.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "late", string(buf[:n]))
}
