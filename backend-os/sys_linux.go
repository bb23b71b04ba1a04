//go:build linux && !mqb_portable

package osfs

// The Linux mechanisms: openat2 resolution, renameat2, syncfs, and (in
// watch_linux.go) inotify. The mqb_portable build leaves them all out.

import (
	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

var (
	_ core.DirWatcher = (*FS)(nil)
	_ core.FSSyncer   = (*FS)(nil)
)

// oDirPath opens the directories that names are resolved from: O_PATH
// needs no permission on the directory and does no I/O.
const oDirPath = unix.O_PATH

// resolveFlags keep openat2 below the root and refuse every symbolic link,
// magic /proc links included.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// resolveUsable reports whether openat2 with resolveFlags works here. It can
// be missing (kernels before 5.6: ENOSYS) or blocked by a seccomp profile
// (EPERM, ENOSYS); any failure selects the component walk, which is just as
// confined, only slower.
func resolveUsable(rootfd int) bool {
	fd, err := unix.Openat2(rootfd, ".", &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: resolveFlags,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// openBeneath opens name relative to the directory rootfd without leaving it
// and without following any symbolic link: a link in any element fails with
// ELOOP, except that O_PATH|O_NOFOLLOW opens a trailing link itself (lstat
// semantics). O_CLOEXEC is always added. name must satisfy fs.ValidPath, so
// it has no ".." elements.
func (f *FS) openBeneath(rootfd int, name string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if f.walk {
		return walkOpen(rootfd, name, flags, mode)
	}
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags}
	if flags&unix.O_CREAT != 0 {
		how.Mode = uint64(mode)
	}
	for {
		fd, err := unix.Openat2(rootfd, name, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func (f *FS) renameNoReplace(odir int, obase string, ndir int, nbase string) error {
	if f.noRenameat2 {
		return linkRename(odir, obase, ndir, nbase, nil)
	}
	err := ignoringEINTR(func() error {
		return sysRenameat2(odir, obase, ndir, nbase, unix.RENAME_NOREPLACE)
	})
	if err != unix.EINVAL && err != unix.ENOSYS {
		return err
	}
	return linkRename(odir, obase, ndir, nbase, err) // the filesystem lacks the flag
}

// SyncAll makes the bytes of every file written before the call durable, as
// if each had been synced, by syncfs on the filesystem holding the root.
// Directories mounted below the root are not covered.
func (f *FS) SyncAll() error {
	return f.do("syncfs", ".", func(rootfd int) error {
		return ignoringEINTR(func() error { return unix.Syncfs(rootfd) })
	})
}

// renamesDirs reports whether renameNoReplace can move a directory.
func (f *FS) renamesDirs() bool { return !f.noRenameat2 }
