package memfs_test

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"testing"

	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/core"
)

// write creates name with data, syncing the bytes when sync is set.
func write(t testing.TB, fsys core.FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.CreateExcl(name)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	if sync {
		require.NoError(t, f.Sync())
	}
	require.NoError(t, f.Close())
}

func read(t testing.TB, fsys core.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	return string(b)
}

func mkdir(t testing.TB, fsys core.FS, name string) {
	t.Helper()
	require.NoError(t, fsys.Mkdir(name))
}

func syncDir(t testing.TB, fsys core.FS, name string) {
	t.Helper()
	require.NoError(t, fsys.SyncDir(name))
}

// tree returns every entry below the root: files map to their content,
// directories to "/".
func tree(t testing.TB, fsys core.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			if e.IsDir() {
				out[p] = "/"
				walk(p)
			} else {
				out[p] = read(t, fsys, p)
			}
		}
	}
	walk(".")
	return out
}

// requirePathErr checks that err is an *fs.PathError for name wrapping want.
func requirePathErr(t testing.TB, err error, name string, want error) {
	t.Helper()
	require.Error(t, err)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe), "want *fs.PathError, got %T: %v", err, err)
	require.Equal(t, name, pe.Path)
	require.ErrorIs(t, err, want)
}

func crash(fsys *memfs.FS) *memfs.FS { return fsys.Crash(memfs.CrashOptions{}) }
