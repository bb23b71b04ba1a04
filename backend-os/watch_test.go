//go:build linux && !mqb_portable

package osfs_test

import (
	"fmt"
	"io/fs"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

func requireSignal(t testing.TB, w core.DirWatch, why string) {
	t.Helper()
	select {
	case <-w.C():
	case <-time.After(time.Second):
		t.Fatalf("no wake-up within 1s after %s", why)
	}
}

func requireQuiet(t testing.TB, w core.DirWatch, why string) {
	t.Helper()
	select {
	case <-w.C():
		t.Fatalf("unexpected wake-up after %s", why)
	case <-time.After(100 * time.Millisecond):
	}
}

func drain(w core.DirWatch) {
	for {
		select {
		case <-w.C():
		default:
			return
		}
	}
}

func TestWatchDir(t *testing.T) {
	withProc := func(t *testing.T, f *osfs.FS) {}
	for name, setup := range map[string]func(*testing.T, *osfs.FS){"procfd": withProc, "path": func(t *testing.T, f *osfs.FS) { osfs.ForceNoProcFD(f) }} {
		t.Run(name, func(t *testing.T) {
			forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
				setup(t, fsys)
				require.NoError(t, fsys.Mkdir("in"))
				createFS(t, fsys, "x.tmp", "x")

				w, err := fsys.WatchDir("in")
				require.NoError(t, err)
				require.Equal(t, 1, cap(w.C()), "signals are coalesced in a channel of one")
				requireQuiet(t, w, "nothing")

				require.NoError(t, fsys.Rename("x.tmp", "in/x"))
				requireSignal(t, w, "a rename into the directory")

				createFS(t, fsys, "in/y", "y")
				requireSignal(t, w, "a create in the directory")
				drain(w)

				createFS(t, fsys, "elsewhere", "")
				requireQuiet(t, w, "a create in another directory")

				// Two watches of one directory both fire; closing one
				// leaves the other working.
				w2, err := fsys.WatchDir("in")
				require.NoError(t, err)
				require.NoError(t, fsys.Mkdir("in/z"))
				requireSignal(t, w, "mkdir, first watch")
				requireSignal(t, w2, "mkdir, second watch")
				require.NoError(t, w2.Close())
				requirePathErr(t, w2.Close(), "in", fs.ErrClosed)
				createFS(t, fsys, "in/z2", "")
				requireSignal(t, w, "a create after the other watch closed")

				// Many events without a reader: the reader does not block.
				for i := range 100 {
					createFS(t, fsys, fmt.Sprintf("in/m%d", i), "")
				}
				requireSignal(t, w, "many creates")
				require.NoError(t, w.Close())
				drain(w)
				createFS(t, fsys, "in/after", "")
				requireQuiet(t, w, "Close")

				wr, err := fsys.WatchDir(".")
				require.NoError(t, err)
				createFS(t, fsys, "top", "")
				requireSignal(t, wr, "a create in the root")
				require.NoError(t, wr.Close())

				_, err = fsys.WatchDir("missing")
				requirePathErr(t, err, "missing", fs.ErrNotExist)
				_, err = fsys.WatchDir("top")
				requirePathErr(t, err, "top", syscall.ENOTDIR)
			})
		})
	}
}

func TestWatchRemovedDir(t *testing.T) {
	fsys := newFS(t, t.TempDir())
	require.NoError(t, fsys.Mkdir("d"))
	w, err := fsys.WatchDir("d")
	require.NoError(t, err)
	require.NoError(t, fsys.Remove("d"))
	require.NoError(t, fsys.Mkdir("d"))
	w2, err := fsys.WatchDir("d")
	require.NoError(t, err)
	createFS(t, fsys, "d/f", "")
	requireSignal(t, w2, "a create in the new directory")
	require.NoError(t, w.Close())
	require.NoError(t, w2.Close())
}

// TestWatchNoLeak checks that closing the FS stops the inotify reader, with
// or without watches still open.
func TestWatchNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 5 {
		fsys, err := osfs.New(t.TempDir(), osfs.Options{})
		require.NoError(t, err)
		w1, err := fsys.WatchDir(".")
		require.NoError(t, err)
		w2, err := fsys.WatchDir(".")
		require.NoError(t, err)
		require.NoError(t, w1.Close())
		require.NoError(t, fsys.Close())
		require.NoError(t, w2.Close(), "closing a watch after its FS is fine")
		_, err = fsys.WatchDir(".")
		require.ErrorIs(t, err, fs.ErrClosed)
	}
	// Not require.Eventually: it runs the condition in a goroutine of its own.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); after > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	require.LessOrEqual(t, after, before, "goroutines leaked")
}
