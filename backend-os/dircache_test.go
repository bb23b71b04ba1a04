//go:build linux

package osfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// TestRemovedDirRefusesEntries checks the kernel behaviour the directory
// cache relies on: through a descriptor of a directory that was removed,
// even one made again under the same name, nothing can be created, renamed
// or linked (ENOENT), so no data can land in the unlinked directory. fsync
// of such a descriptor succeeds, which is why SyncDir checks the link count
// of a kept descriptor after syncing through it.
func TestRemovedDirRefusesEntries(t *testing.T) {
	root := t.TempDir()
	rootfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(rootfd)
	require.NoError(t, unix.Mkdirat(rootfd, "d", 0o700))
	for _, flags := range []int{unix.O_PATH, unix.O_RDONLY} {
		t.Run(fmt.Sprintf("flags=%#x", flags), func(t *testing.T) {
			dfd, err := unix.Openat(rootfd, "d", flags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			require.NoError(t, err)
			defer unix.Close(dfd)
			require.NoError(t, unix.Unlinkat(rootfd, "d", unix.AT_REMOVEDIR))
			require.NoError(t, unix.Mkdirat(rootfd, "d", 0o700)) // made again

			_, err = unix.Openat(dfd, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			require.Equal(t, unix.ENOENT, err, "create")
			require.Equal(t, unix.ENOENT, unix.Mkdirat(dfd, "s", 0o700), "mkdir")
			fd, err := unix.Openat(rootfd, "src", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			require.NoError(t, err)
			unix.Close(fd)
			require.Equal(t, unix.ENOENT, unix.Renameat2(rootfd, "src", dfd, "f", unix.RENAME_NOREPLACE), "rename into")
			require.Equal(t, unix.ENOENT, unix.Renameat(rootfd, "src", dfd, "f"), "plain rename into")
			require.Equal(t, unix.ENOENT, unix.Linkat(rootfd, "src", dfd, "f", 0), "link into")
			require.Equal(t, unix.ENOENT, unix.Unlinkat(dfd, "f", 0), "unlink")
			_, err = unix.Openat(dfd, "f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			require.Equal(t, unix.ENOENT, err, "open for reading")
			var st unix.Stat_t
			require.NoError(t, unix.Fstat(dfd, &st))
			require.Zero(t, st.Nlink, "a removed directory has no link: how SyncDir tells")
			require.Equal(t, unix.ENOENT, unix.Renameat2(dfd, "f", rootfd, "g", unix.RENAME_NOREPLACE), "rename from")
			require.NoError(t, unix.Unlinkat(rootfd, "src", 0))
			entries, err := os.ReadDir(filepath.Join(root, "d"))
			require.NoError(t, err)
			require.Empty(t, entries, "nothing reached the directory made again")
			if flags == unix.O_RDONLY {
				require.NoError(t, unix.Fsync(dfd), "fsync does not tell")
			}
			// SyncDir opens its readable descriptor through the kept one:
			// of the same directory, removed or not.
			sfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				var sst unix.Stat_t
				require.NoError(t, unix.Fstat(sfd, &sst))
				require.Equal(t, st.Ino, sst.Ino, "\".\" through a kept descriptor is its own directory")
				require.NoError(t, unix.Fsync(sfd))
				unix.Close(sfd)
			} else {
				require.Equal(t, unix.ENOENT, err, "opening \".\" in a removed directory")
			}
		})
	}
}

// TestDirCacheRemovedByOthers has the directory a kept descriptor refers to
// removed and made again behind the FS's back, as a consumer and a producer
// in other processes do with shard directories: every call must reach the
// new directory.
func TestDirCacheRemovedByOthers(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		dir := filepath.Join(root, "a", "b")
		remake := func() {
			t.Helper()
			require.NoError(t, os.RemoveAll(filepath.Join(root, "a")))
			require.NoError(t, os.MkdirAll(dir, 0o700))
		}
		require.NoError(t, os.MkdirAll(dir, 0o700))
		use := func() { // keeps a descriptor of a/b
			t.Helper()
			createFS(t, fsys, "a/b/k.tmp", "x")
			require.NoError(t, fsys.Rename("a/b/k.tmp", "a/b/k"))
			require.NoError(t, fsys.Remove("a/b/k"))
			require.NoError(t, fsys.Mkdir("a/b/k.d"))
			require.NoError(t, fsys.Remove("a/b/k.d"))
			createFS(t, fsys, "a/b/r", "r")
			require.Equal(t, "r", readFS(t, fsys, "a/b/r"))
			require.NoError(t, fsys.Remove("a/b/r"))
			require.NoError(t, fsys.SyncDir("a/b"))
		}
		inode := func(path string) uint64 {
			t.Helper()
			fi, err := os.Stat(path)
			require.NoError(t, err)
			return fi.Sys().(*syscall.Stat_t).Ino
		}

		use()
		remake()
		createFS(t, fsys, "a/b/t", "x")
		require.NoError(t, fsys.Rename("a/b/t", "a/b/u"), "rename in a directory made again")
		require.FileExists(t, filepath.Join(dir, "u"))

		use()
		remake()
		writeFile(t, filepath.Join(dir, "f"), "x")
		require.NoError(t, fsys.Remove("a/b/f"), "remove in a directory made again")
		requireNotExist(t, filepath.Join(dir, "f"))

		use()
		remake()
		require.NoError(t, fsys.Mkdir("a/b/s"), "mkdir in a directory made again")
		require.DirExists(t, filepath.Join(dir, "s"))

		use()
		remake()
		writeFile(t, filepath.Join(dir, "o"), "new")
		require.Equal(t, "new", readFS(t, fsys, "a/b/o"), "open in a directory made again")
		require.NoError(t, os.Remove(filepath.Join(dir, "o")))

		use()
		remake()
		createFS(t, fsys, "a/b/c", "x")
		require.FileExists(t, filepath.Join(dir, "c"), "create in a directory made again")

		use()
		remake()
		require.NoError(t, fsys.SyncDir("a/b"), "sync of a directory made again")
		ino, kept := osfs.KeptSyncDirIno(fsys, "a/b")
		require.True(t, kept)
		require.Equal(t, inode(dir), ino, "SyncDir keeps the new directory, not the removed one")

		use()
		remake()
		writeFile(t, filepath.Join(root, "top"), "x")
		require.NoError(t, fsys.Rename("top", "a/b/top"), "rename into a directory made again")
		require.FileExists(t, filepath.Join(dir, "top"))

		// Removed and not made again: the errors of a fresh resolution.
		use()
		require.NoError(t, os.RemoveAll(filepath.Join(root, "a")))
		requirePathErr(t, fsys.Rename("top", "a/b/top"), "top -> a/b/top", unix.ENOENT)
		requirePathErr(t, fsys.Remove("a/b/u"), "a/b/u", unix.ENOENT)
		requirePathErr(t, fsys.Mkdir("a/b/s"), "a/b/s", unix.ENOENT)
		requirePathErr(t, fsys.SyncDir("a/b"), "a/b", unix.ENOENT)
		_, err := fsys.Open("a/b/u")
		requirePathErr(t, err, "a/b/u", unix.ENOENT)
		_, err = fsys.CreateExcl("a/b/n")
		requirePathErr(t, err, "a/b/n", unix.ENOENT)

		// Replaced by a symbolic link to a directory outside the root:
		// nothing is reached through it, kept descriptors or not.
		outside := t.TempDir()
		writeFile(t, filepath.Join(outside, "u"), "secret")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		use()
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.Symlink(outside, dir))
		requirePathErr(t, fsys.SyncDir("a/b"), "a/b", osfs.ErrSymlink)
		_, err = fsys.Open("a/b/u")
		requirePathErr(t, err, "a/b/u", osfs.ErrSymlink)
		_, err = fsys.CreateExcl("a/b/n")
		requirePathErr(t, err, "a/b/n", osfs.ErrSymlink)
		requirePathErr(t, fsys.Remove("a/b/u"), "a/b/u", osfs.ErrSymlink)
		requireNotExist(t, filepath.Join(outside, "n"))
		require.FileExists(t, filepath.Join(outside, "u"))
	})
}

// TestSyncDirSyncsWhatChanged has another process remove and make again a
// directory right after this FS renamed a file into it: the SyncDir that
// follows syncs the directory the rename went into (the removed one; a
// power cut must not undo the rename before the removal), with no fstat
// to check its link. Once synced, the next SyncDir looks again and moves to
// the directory made again.
func TestSyncDirSyncsWhatChanged(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		dir := filepath.Join(root, "a", "b")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		inode := func() uint64 {
			t.Helper()
			fi, err := os.Stat(dir)
			require.NoError(t, err)
			return fi.Sys().(*syscall.Stat_t).Ino
		}
		require.NoError(t, fsys.SyncDir("a/b")) // kept, nothing changed since
		old := inode()
		createFS(t, fsys, "a/b/t", "x")
		require.NoError(t, fsys.Rename("a/b/t", "a/b/u"))
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NotEqual(t, old, inode())

		require.NoError(t, fsys.SyncDir("a/b"))
		ino, kept := osfs.KeptSyncDirIno(fsys, "a/b")
		require.True(t, kept)
		require.Equal(t, old, ino, "the directory the rename changed was synced")

		require.NoError(t, fsys.SyncDir("a/b"))
		ino, kept = osfs.KeptSyncDirIno(fsys, "a/b")
		require.True(t, kept)
		require.Equal(t, inode(), ino, "with nothing changed since, SyncDir moves to the directory at the name")
	})
}

// TestDirCacheOwnChanges covers the FS's own Remove, Rename and Mkdir of
// directories it keeps descriptors of.
func TestDirCacheOwnChanges(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		for _, d := range []string{"a", "a/b"} {
			require.NoError(t, fsys.Mkdir(d))
		}
		createFS(t, fsys, "a/b/t", "x")
		require.NoError(t, fsys.Rename("a/b/t", "a/b/u")) // keeps a/b

		if osfs.RenamesDirectories(fsys) {
			// A directory renamed by this FS is not reached under its old name.
			require.NoError(t, fsys.Rename("a", "z"))
			require.NoError(t, fsys.Mkdir("a"))
			require.NoError(t, fsys.Mkdir("a/b"))
			createFS(t, fsys, "a/b/t", "y")
			require.NoError(t, fsys.Rename("a/b/t", "a/b/u"))
			require.Equal(t, "y", readFS(t, fsys, "a/b/u"))
			require.Equal(t, "x", readFS(t, fsys, "z/b/u"))
		} else { // link renames move no directory: make z/b/u as it would be
			require.NoError(t, fsys.Mkdir("z"))
			require.NoError(t, fsys.Mkdir("z/b"))
			createFS(t, fsys, "z/b/u", "x")
		}

		// Nor one removed and made again.
		require.NoError(t, fsys.Remove("z/b/u"))
		require.NoError(t, fsys.Remove("z/b"))
		require.NoError(t, fsys.Mkdir("z/b"))
		createFS(t, fsys, "z/b/t", "w")
		require.NoError(t, fsys.Rename("z/b/t", "z/b/v"))
		require.Equal(t, "w", readFS(t, fsys, "z/b/v"))
	})
}

// TestDirCacheMany uses more directories than the cache keeps, from several
// goroutines (run with -race), and checks that Close releases every
// descriptor.
func TestDirCacheMany(t *testing.T) {
	root := t.TempDir()
	before := openFDs(t)
	fsys, err := osfs.New(root, osfs.Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 40 {
				d := fmt.Sprintf("d%02d", (i*7+g)%40)
				if err := fsys.Mkdir(d); err != nil && !errors.Is(err, fs.ErrExist) {
					t.Error(err)
					return
				}
				name := fmt.Sprintf("%s/f%d", d, g)
				f, err := fsys.CreateExcl(name + ".tmp")
				if err == nil {
					err = f.Close()
				}
				if err == nil {
					err = fsys.Rename(name+".tmp", name)
				}
				if err == nil {
					err = fsys.SyncDir(d)
				}
				if err == nil {
					err = fsys.Remove(name)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, fsys.Close())
	require.Equal(t, before, openFDs(t))
}
