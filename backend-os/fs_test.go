//go:build linux

package osfs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
)

func TestNew(t *testing.T) {
	withUmask(t, 0o022)
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "file"), "x")
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "real"), 0o700))
	require.NoError(t, os.Symlink(filepath.Join(tmp, "real"), filepath.Join(tmp, "link")))

	tests := []struct {
		name    string
		root    string
		opts    osfs.Options
		wantErr error
	}{
		{"relative root", "spool", osfs.Options{}, option.ErrInvalid},
		{"relative root with CreateRoot", "./spool", osfs.Options{CreateRoot: true}, option.ErrInvalid},
		{"missing root", filepath.Join(tmp, "missing"), osfs.Options{}, fs.ErrNotExist},
		{"root is a file", filepath.Join(tmp, "file"), osfs.Options{}, syscall.ENOTDIR},
		{"file mode with setuid", tmp, osfs.Options{FileMode: fs.ModeSetuid | 0o600}, option.ErrInvalid},
		{"dir mode with type bits", tmp, osfs.Options{DirMode: fs.ModeDir | 0o700}, option.ErrInvalid},
		{"existing root", tmp, osfs.Options{}, nil},
		{"root reached through a link", filepath.Join(tmp, "link"), osfs.Options{}, nil},
		{"created root", filepath.Join(tmp, "a", "b", "c"), osfs.Options{CreateRoot: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys, err := osfs.New(tt.root, tt.opts)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				require.Nil(t, fsys)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.root, fsys.Root())
			require.NoError(t, fsys.Close())
		})
	}

	t.Run("created root has DirMode", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "x", "spool")
		fsys, err := osfs.New(root, osfs.Options{CreateRoot: true})
		require.NoError(t, err)
		defer fsys.Close()
		assert.Equal(t, fs.FileMode(0o700), perm(t, root))
		assert.Equal(t, fs.FileMode(0o700), perm(t, filepath.Dir(root)))
	})

	t.Run("Root is cleaned", func(t *testing.T) {
		root := t.TempDir()
		fsys, err := osfs.New(root+"/./", osfs.Options{})
		require.NoError(t, err)
		defer fsys.Close()
		require.Equal(t, root, fsys.Root())
	})
}

func TestRootStaysOpen(t *testing.T) {
	// The FS keeps the directory it opened even when the path moves.
	tmp := t.TempDir()
	root := filepath.Join(tmp, "spool")
	require.NoError(t, os.Mkdir(root, 0o700))
	fsys := newFS(t, root)
	require.NoError(t, os.Rename(root, filepath.Join(tmp, "moved")))
	require.NoError(t, os.Mkdir(root, 0o700))

	createFS(t, fsys, "a", "x")
	require.FileExists(t, filepath.Join(tmp, "moved", "a"))
	requireNotExist(t, filepath.Join(root, "a"))
}

func TestClose(t *testing.T) {
	fsys, err := osfs.New(t.TempDir(), osfs.Options{})
	require.NoError(t, err)
	createFS(t, fsys, "a", "x")
	require.NoError(t, fsys.Close())
	require.ErrorIs(t, fsys.Close(), fs.ErrClosed)

	calls := map[string]func() error{
		"CreateExcl": func() error { _, err := fsys.CreateExcl("b"); return err },
		"Open":       func() error { _, err := fsys.Open("a"); return err },
		"Rename":     func() error { return fsys.Rename("a", "b") },
		"Remove":     func() error { return fsys.Remove("a") },
		"Mkdir":      func() error { return fsys.Mkdir("d") },
		"ReadDir":    func() error { _, err := fsys.ReadDir("."); return err },
		"Stat":       func() error { _, err := fsys.Stat("a"); return err },
		"SyncDir":    func() error { return fsys.SyncDir(".") },
		"Lock":       func() error { _, err := fsys.Lock("L"); return err },
	}
	addOptionalCalls(calls, fsys, ".", true)
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, fs.ErrClosed)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe)
		})
	}
}

func TestInvalidNames(t *testing.T) {
	fsys := newFS(t, t.TempDir())
	names := []string{"", "..", "../x", "a/../../x", "/etc/passwd", "a/", "./a", "a//b", "a/./b"}
	for _, name := range names {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			calls := map[string]func() error{
				"CreateExcl": func() error { _, err := fsys.CreateExcl(name); return err },
				"Open":       func() error { _, err := fsys.Open(name); return err },
				"RenameFrom": func() error { return fsys.Rename(name, "ok") },
				"RenameTo":   func() error { return fsys.Rename("ok", name) },
				"Remove":     func() error { return fsys.Remove(name) },
				"Mkdir":      func() error { return fsys.Mkdir(name) },
				"ReadDir":    func() error { _, err := fsys.ReadDir(name); return err },
				"Stat":       func() error { _, err := fsys.Stat(name); return err },
				"SyncDir":    func() error { return fsys.SyncDir(name) },
				"Lock":       func() error { _, err := fsys.Lock(name); return err },
			}
			addOptionalCalls(calls, fsys, name, false)
			for op, call := range calls {
				err := call()
				require.ErrorIs(t, err, fs.ErrInvalid, op)
				var pe *fs.PathError
				require.ErrorAs(t, err, &pe, op)
			}
		})
	}
}

func TestRename(t *testing.T) {
	for _, link := range []bool{false, true} {
		t.Run(map[bool]string{false: "renameat2", true: "link-unlink"}[link], func(t *testing.T) {
			forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
				if link {
					osfs.ForceLinkRename(fsys)
				}
				require.NoError(t, fsys.Mkdir("sub"))
				createFS(t, fsys, "a", "A")
				createFS(t, fsys, "b", "B")

				// Onto an existing name: refused, both left alone.
				err := fsys.Rename("a", "b")
				requirePathErr(t, err, "a -> b", fs.ErrExist)
				require.Equal(t, "A", readFS(t, fsys, "a"))
				require.Equal(t, "B", readFS(t, fsys, "b"))

				// Onto an existing directory or dangling link: refused too.
				requirePathErr(t, fsys.Rename("a", "sub"), "a -> sub", fs.ErrExist)
				require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
				requirePathErr(t, fsys.Rename("a", "dangling"), "a -> dangling", fs.ErrExist)

				// Into a subdirectory and back out.
				require.NoError(t, fsys.Rename("a", "sub/a"))
				requireNotExist(t, filepath.Join(root, "a"))
				require.Equal(t, "A", readFS(t, fsys, "sub/a"))
				require.NoError(t, fsys.Rename("sub/a", "c"))
				require.Equal(t, "A", readFS(t, fsys, "c"))

				requirePathErr(t, fsys.Rename("missing", "d"), "missing -> d", fs.ErrNotExist)
				requirePathErr(t, fsys.Rename("c", "nodir/c"), "c -> nodir/c", fs.ErrNotExist)
				require.FileExists(t, filepath.Join(root, "c"))

				if osfs.RenamesDirectories(fsys) {
					require.NoError(t, fsys.Rename("sub", "sub2"), "directories move with renameat2")
					require.DirExists(t, filepath.Join(root, "sub2"))
				}
			})
		})
	}
}

// TestRenameRace has 8 goroutines rename 8 different files to one name at
// once: exactly one must win, and nothing may be lost.
func TestRenameRace(t *testing.T) {
	const racers, rounds = 8, 25
	for _, link := range []bool{false, true} {
		t.Run(map[bool]string{false: "renameat2", true: "link-unlink"}[link], func(t *testing.T) {
			forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
				if link {
					osfs.ForceLinkRename(fsys)
				}
				for round := range rounds {
					dst := fmt.Sprintf("dst%d", round)
					for i := range racers {
						createFS(t, fsys, fmt.Sprintf("src%d-%d", round, i), fmt.Sprint(i))
					}
					errs := make([]error, racers)
					start := make(chan struct{})
					var wg sync.WaitGroup
					for i := range racers {
						wg.Go(func() {
							<-start
							errs[i] = fsys.Rename(fmt.Sprintf("src%d-%d", round, i), dst)
						})
					}
					close(start)
					wg.Wait()

					winner := -1
					for i, err := range errs {
						src := fmt.Sprintf("src%d-%d", round, i)
						if err == nil {
							require.Equal(t, -1, winner, "two renames won")
							winner = i
							requireNotExist(t, filepath.Join(root, src))
							continue
						}
						require.ErrorIs(t, err, fs.ErrExist)
						require.Equal(t, fmt.Sprint(i), readFS(t, fsys, src), "a loser's file changed")
					}
					require.NotEqual(t, -1, winner, "no rename won")
					require.Equal(t, fmt.Sprint(winner), readFS(t, fsys, dst))
				}
			})
		})
	}
}

func TestRemove(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		createFS(t, fsys, "f", "x")
		require.NoError(t, fsys.Mkdir("empty"))
		require.NoError(t, fsys.Mkdir("full"))
		createFS(t, fsys, "full/f", "x")

		require.NoError(t, fsys.Remove("f"))
		requireNotExist(t, filepath.Join(root, "f"))
		require.NoError(t, fsys.Remove("empty"))
		requireNotExist(t, filepath.Join(root, "empty"))

		requirePathErr(t, fsys.Remove("full"), "full", syscall.ENOTEMPTY)
		require.FileExists(t, filepath.Join(root, "full", "f"))
		requirePathErr(t, fsys.Remove("f"), "f", fs.ErrNotExist)
		requirePathErr(t, fsys.Remove("nodir/f"), "nodir/f", fs.ErrNotExist)
		require.NoError(t, fsys.Remove("full/f"))
		require.NoError(t, fsys.Remove("full"))
		require.Error(t, fsys.Remove("."))
	})
}

func TestMkdir(t *testing.T) {
	withUmask(t, 0o022)
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		require.NoError(t, fsys.Mkdir("a"))
		require.NoError(t, fsys.Mkdir("a/b"))
		assert.Equal(t, fs.FileMode(0o700), perm(t, filepath.Join(root, "a")))
		assert.Equal(t, fs.FileMode(0o700), perm(t, filepath.Join(root, "a", "b")))

		createFS(t, fsys, "f", "x")
		require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
		requirePathErr(t, fsys.Mkdir("a"), "a", fs.ErrExist)
		requirePathErr(t, fsys.Mkdir("f"), "f", fs.ErrExist)
		requirePathErr(t, fsys.Mkdir("dangling"), "dangling", fs.ErrExist)
		requirePathErr(t, fsys.Mkdir("."), ".", fs.ErrExist)
		requirePathErr(t, fsys.Mkdir("x/y"), "x/y", fs.ErrNotExist)
		requirePathErr(t, fsys.Mkdir("f/y"), "f/y", syscall.ENOTDIR)
	})
}

func TestModes(t *testing.T) {
	withUmask(t, 0o022)
	t.Run("defaults", func(t *testing.T) {
		root := t.TempDir()
		fsys := newFS(t, root)
		createFS(t, fsys, "f", "x")
		require.NoError(t, fsys.Mkdir("d"))
		c, err := fsys.Lock("CLAIM")
		require.NoError(t, err)
		require.NoError(t, c.Release())
		assert.Equal(t, fs.FileMode(0o600), perm(t, filepath.Join(root, "f")))
		assert.Equal(t, fs.FileMode(0o700), perm(t, filepath.Join(root, "d")))
		assert.Equal(t, fs.FileMode(0o600), perm(t, filepath.Join(root, "CLAIM")))
	})
	t.Run("options", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "spool")
		fsys, err := osfs.New(root, osfs.Options{FileMode: 0o640, DirMode: 0o750, CreateRoot: true})
		require.NoError(t, err)
		defer fsys.Close()
		createFS(t, fsys, "f", "x")
		require.NoError(t, fsys.Mkdir("d"))
		c, err := fsys.Lock("CLAIM")
		require.NoError(t, err)
		require.NoError(t, c.Release())
		assert.Equal(t, fs.FileMode(0o750), perm(t, root))
		assert.Equal(t, fs.FileMode(0o640), perm(t, filepath.Join(root, "f")))
		assert.Equal(t, fs.FileMode(0o750), perm(t, filepath.Join(root, "d")))
		assert.Equal(t, fs.FileMode(0o640), perm(t, filepath.Join(root, "CLAIM")))
	})
}

func TestStat(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		createFS(t, fsys, "f", "hello")
		require.NoError(t, fsys.Mkdir("d"))
		createFS(t, fsys, "d/g", "")
		require.NoError(t, os.Symlink("f", filepath.Join(root, "link")))

		fi, err := fsys.Stat("f")
		require.NoError(t, err)
		assert.Equal(t, "f", fi.Name())
		assert.Equal(t, int64(5), fi.Size())
		assert.True(t, fi.Mode().IsRegular())
		st, ok := fi.Sys().(*syscall.Stat_t)
		require.True(t, ok, "Sys is %T", fi.Sys())
		assert.NotZero(t, st.Ino)

		fi, err = fsys.Stat("d/g")
		require.NoError(t, err)
		assert.Equal(t, "g", fi.Name())

		fi, err = fsys.Stat("d")
		require.NoError(t, err)
		assert.True(t, fi.IsDir())

		fi, err = fsys.Stat(".")
		require.NoError(t, err)
		assert.True(t, fi.IsDir())

		fi, err = fsys.Stat("link")
		require.NoError(t, err)
		assert.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "Stat must not follow the link")

		_, err = fsys.Stat("missing")
		requirePathErr(t, err, "missing", fs.ErrNotExist)
		_, err = fsys.Stat("f/x")
		requirePathErr(t, err, "f/x", syscall.ENOTDIR)
	})
}

func TestSync(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		require.NoError(t, fsys.Mkdir("d"))
		createFS(t, fsys, "d/f", "x")
		require.NoError(t, fsys.SyncDir("d"))
		require.NoError(t, fsys.SyncDir("."))
		if s, ok := any(fsys).(core.FSSyncer); ok {
			require.NoError(t, s.SyncAll())
		}

		requirePathErr(t, fsys.SyncDir("missing"), "missing", fs.ErrNotExist)
		requirePathErr(t, fsys.SyncDir("d/f"), "d/f", syscall.ENOTDIR)
	})
}

func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// TestNoDescriptorLeak runs every operation, failing ones included, and
// checks that only what was handed out keeps a descriptor.
func TestNoDescriptorLeak(t *testing.T) {
	for _, r := range resolutions {
		t.Run(r.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
			before := openFDs(t)
			fsys, err := osfs.New(root, osfs.Options{})
			require.NoError(t, err)
			r.setup(t, fsys)
			for _, d := range []string{"a", "a/b", "a/b/c"} {
				require.NoError(t, fsys.Mkdir(d))
			}
			for _, dir := range []string{".", "a/b/c", "link", "missing/x"} {
				name := dir + "/f"
				createFS(t, fsys, "a/b/c/tmp", "x")
				_ = fsys.Rename("a/b/c/tmp", name)
				_, _ = fsys.Stat(name)
				_, _ = fsys.ReadDir(dir)
				_ = fsys.SyncDir(dir)
				if f, err := fsys.Open(name); err == nil {
					require.NoError(t, f.Close())
				}
				if c, err := fsys.Lock(dir + "/L"); err == nil {
					require.NoError(t, c.Release())
				}
				if dw, ok := any(fsys).(core.DirWatcher); ok {
					if w, err := dw.WatchDir(dir); err == nil {
						require.NoError(t, w.Close())
					}
				}
				_ = fsys.Remove(name)
				_ = fsys.Remove("a/b/c/tmp")
			}
			if s, ok := any(fsys).(core.FSSyncer); ok {
				require.NoError(t, s.SyncAll())
			}
			require.NoError(t, fsys.Close())
			require.Equal(t, before, openFDs(t))
		})
	}
}
