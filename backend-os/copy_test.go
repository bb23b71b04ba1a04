//go:build linux

package osfs_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFromCopiesEverySource copies into a file of the FS from each kind
// of source ReadFrom knows (another file of the FS, an *os.File, both
// under an *io.LimitedReader) and from those it must copy by hand (a pipe,
// a /proc file that reports size 0, a plain reader): the bytes arrive
// exactly, and a limit is kept and counted down.
func TestReadFromCopiesEverySource(t *testing.T) {
	root := t.TempDir()
	fsys := newFS(t, root)
	want := bytes.Repeat([]byte("0123456789abcdef"), 300_000/16) // more than one copy buffer
	writeFile(t, filepath.Join(root, "src"), string(want))
	sources := map[string]func(t *testing.T) io.Reader{
		"fs file": func(t *testing.T) io.Reader {
			f, err := fsys.Open("src")
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			return f
		},
		"os file": func(t *testing.T) io.Reader {
			f, err := os.Open(filepath.Join(root, "src"))
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
			return f
		},
		"pipe": func(t *testing.T) io.Reader {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			go func() { _, _ = w.Write(want); w.Close() }()
			t.Cleanup(func() { r.Close() })
			return r
		},
		"plain reader": func(t *testing.T) io.Reader { return bytes.NewReader(want) },
	}
	for name, open := range sources {
		for _, limit := range []int64{-1, 0, 1, 70_000, int64(len(want))} {
			dst := name + "-" + string(rune('a'+limit%26))
			_ = fsys.Remove(dst)
			f, err := fsys.CreateExcl(dst)
			require.NoError(t, err)
			rf := f.(io.ReaderFrom)
			var n int64
			if limit < 0 {
				n, err = rf.ReadFrom(open(t))
				limit = int64(len(want))
			} else {
				lr := &io.LimitedReader{R: open(t), N: limit}
				n, err = rf.ReadFrom(lr)
				assert.Zero(t, lr.N, "%s, limit %d: the limit is counted down", name, limit)
			}
			require.NoError(t, err, name)
			require.NoError(t, f.Close())
			assert.Equal(t, limit, n, name)
			got, err := os.ReadFile(filepath.Join(root, dst))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want[:limit], got), "%s, limit %d: %d bytes arrived, not the first %d of the source", name, limit, len(got), limit)
		}
	}
	t.Run("proc file", func(t *testing.T) {
		want, err := os.ReadFile("/proc/self/mounts")
		require.NoError(t, err)
		src, err := os.Open("/proc/self/mounts")
		require.NoError(t, err)
		defer src.Close()
		f, err := fsys.CreateExcl("mounts")
		require.NoError(t, err)
		n, err := f.(io.ReaderFrom).ReadFrom(src)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.Greater(t, n, int64(0), "a file that reports size 0 is copied by hand, not skipped")
		assert.Equal(t, string(want[:10]), readFS(t, fsys, "mounts")[:10])
	})
	t.Run("closed destination", func(t *testing.T) {
		f, err := fsys.CreateExcl("closed")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		_, err = f.(io.ReaderFrom).ReadFrom(sources["fs file"](t))
		require.Error(t, err)
	})
}
