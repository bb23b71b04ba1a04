//go:build linux

package osfs_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// resolution is one way an FS resolves names; every contract test runs
// under each.
type resolution struct {
	name  string
	setup func(t *testing.T, f *osfs.FS)
}

var resolutions = []resolution{
	{"openat2", func(t *testing.T, f *osfs.FS) {
		if !osfs.UsesOpenat2(f) {
			t.Skip("openat2 is not usable here")
		}
	}},
	{"walk", func(t *testing.T, f *osfs.FS) { osfs.ForceWalk(f) }},
}

// forEachResolution runs fn on a fresh FS over a fresh temporary root, once
// per resolution.
func forEachResolution(t *testing.T, fn func(t *testing.T, fsys *osfs.FS, root string)) {
	t.Helper()
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) {
			root := t.TempDir()
			fsys := newFS(t, root)
			r.setup(t, fsys)
			fn(t, fsys, root)
		})
	}
}

func newFS(t testing.TB, root string) *osfs.FS {
	t.Helper()
	fsys, err := osfs.New(root, osfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fsys.Close() })
	return fsys
}

// requirePathErr checks that err is an *fs.PathError for path matching target.
func requirePathErr(t testing.TB, err error, path string, target error) {
	t.Helper()
	require.Error(t, err)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe, "%v is not an *fs.PathError", err)
	require.Equal(t, path, pe.Path)
	require.ErrorIs(t, err, target)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func readFS(t testing.TB, fsys *osfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func createFS(t testing.TB, fsys *osfs.FS, name, content string) {
	t.Helper()
	f, err := fsys.CreateExcl(name)
	require.NoError(t, err)
	_, err = io.WriteString(f, content)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

func requireNotExist(t testing.TB, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "%s must not exist", path)
}

func perm(t testing.TB, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// addOptionalCalls adds to calls those of the optional interfaces this
// build's FS has (the mqb_portable build has none): WatchDir of dir, and
// with syncAll SyncAll, which takes no name.
func addOptionalCalls(calls map[string]func() error, fsys *osfs.FS, dir string, syncAll bool) {
	if s, ok := any(fsys).(core.FSSyncer); ok && syncAll {
		calls["SyncAll"] = s.SyncAll
	}
	if dw, ok := any(fsys).(core.DirWatcher); ok {
		calls["WatchDir"] = func() error { _, err := dw.WatchDir(dir); return err }
	}
}

// withUmask runs the test with a known umask; tests in this package do not
// run in parallel, so changing the process umask is safe.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}
