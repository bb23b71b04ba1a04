package benchrun

import "golang.org/x/sys/unix"

// rawFsync is F_FULLFSYNC, what backend-os does for a durable sync on
// macOS (fsync leaves data in the drive's cache).
func rawFsync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	return err
}

// rawRename renames within the directory dirfd without replacing.
func rawRename(dirfd int, from, to string) error {
	return unix.RenameatxNp(dirfd, from, dirfd, to, unix.RENAME_EXCL)
}
