//go:build linux

package osfs_test

import (
	"os"
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the conformance suite against the real filesystem,
// each check on fresh temporary directories.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return newFS(t, t.TempDir()) })
}

// scratchDir returns a fresh directory for one test: below
// MQB_CONFORMANCE_DIR when it is set (a mount to test, say), else a
// temporary one. It is removed when the test ends.
func scratchDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("MQB_CONFORMANCE_DIR")
	if base == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(base, "mqb-conformance-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestOSDir runs the suite on the filesystem that holds
// MQB_CONFORMANCE_DIR, for example a network mount. Set
// MQB_CONFORMANCE_SHARED_LOCKS=1 where claims do not conflict within one
// process (flock on NFS). The process tests use that directory too.
func TestOSDir(t *testing.T) {
	if os.Getenv("MQB_CONFORMANCE_DIR") == "" {
		t.Skip("set MQB_CONFORMANCE_DIR to a directory on the filesystem to test")
	}
	cfg := conformance.Config{SharedLocks: os.Getenv("MQB_CONFORMANCE_SHARED_LOCKS") == "1"}
	conformance.RunConfig(t, cfg, func(t *testing.T) core.FS {
		fsys, err := osfs.New(scratchDir(t), osfs.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { fsys.Close() })
		return fsys
	})
}
