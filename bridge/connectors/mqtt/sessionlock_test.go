//go:build unix

package mqtt

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

func lockConn(broker string) *conn {
	return newConn(&config{broker: broker}, slog.New(slog.DiscardHandler))
}

// A second connection with one client id at one broker, even spelled
// otherwise, fails at once naming the holder's pid; another id or broker
// does not; the lock goes with the first connection's close.
func TestSessionLock(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	first := lockConn("127.0.0.1:1883")
	require.NoError(t, first.lockSession("id"))
	require.NoError(t, first.lockSession("id"), "taking it again is a no-op")
	t.Cleanup(first.unlockSession)

	err := lockConn("localhost:1883").lockSession("id")
	require.ErrorIs(t, err, errSessionInUse)
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Contains(t, err.Error(), fmt.Sprintf(`client id "id" at localhost:1883 is held by pid %d on this host`, os.Getpid()))

	for _, other := range []struct{ broker, id string }{{"127.0.0.1:1883", "id2"}, {"127.0.0.1:1884", "id"}} {
		c := lockConn(other.broker)
		require.NoError(t, c.lockSession(other.id), "%v", other)
		c.unlockSession()
	}
	first.unlockSession()
	again := lockConn("127.0.0.1:1883")
	require.NoError(t, again.lockSession("id"))
	again.unlockSession()
	left, err := os.ReadDir(sessionLockDir())
	require.NoError(t, err)
	assert.Empty(t, left, "a lock let go leaves no file behind")
}

// A lock directory that is not the user's own private one (a symbolic
// link, or writable by others) is not used: the connection goes on
// without a lock, and nothing is written there.
func TestSessionLockNeedsAPrivateDirectory(t *testing.T) {
	real := t.TempDir()
	linked := t.TempDir()
	require.NoError(t, os.Symlink(real, filepath.Join(linked, "mqb")))
	open := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(open, "mqb"), 0o700))
	require.NoError(t, os.Chmod(filepath.Join(open, "mqb"), 0o777))
	for _, runtime := range []string{linked, open} {
		t.Setenv("XDG_RUNTIME_DIR", runtime)
		require.Error(t, privateDir(sessionLockDir()), runtime)
		c := lockConn("127.0.0.1:1883")
		require.NoError(t, c.lockSession("id"))
		assert.Nil(t, c.session, "no lock taken in %s", runtime)
	}
	entries, err := os.ReadDir(real)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written through the link")
}
