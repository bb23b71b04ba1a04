package benchrun

import "golang.org/x/sys/unix"

func rawFsync(fd int) error { return unix.Fsync(fd) }

// rawRename renames within the directory dirfd without replacing: link,
// which fails rather than replace, then unlink, as backend-os does here.
func rawRename(dirfd int, from, to string) error {
	if err := unix.Linkat(dirfd, from, dirfd, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, from, 0)
}
