package osfs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// resolveFlags keep openat2 below the root and refuse every symbolic link,
// magic /proc links included.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat2Usable reports whether openat2 with resolveFlags works here. It can
// be missing (kernels before 5.6: ENOSYS) or blocked by a seccomp profile
// (EPERM, ENOSYS); any failure selects the component walk, which is just as
// confined, only slower.
func openat2Usable(rootfd int) bool {
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

// walkOpen is openBeneath for kernels without openat2: it opens one element
// at a time with O_NOFOLLOW, each relative to the directory before it.
func walkOpen(rootfd int, name string, flags int, mode uint32) (int, error) {
	dirfd, base := rootfd, name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		var err error
		if dirfd, err = walkDir(rootfd, name[:i]); err != nil {
			return -1, err
		}
		defer unix.Close(dirfd)
		base = name[i+1:]
	}
	fd, err := openat(dirfd, base, flags|unix.O_NOFOLLOW, mode)
	if err == unix.ENOTDIR && flags&unix.O_DIRECTORY != 0 && isSymlinkAt(dirfd, base) {
		err = unix.ELOOP
	}
	return fd, err
}

// walkDir opens the directory dir (relative to rootfd, no trailing slash)
// as an O_PATH descriptor, refusing symbolic links in every element.
func walkDir(rootfd int, dir string) (int, error) {
	fd := rootfd
	for elem := range strings.SplitSeq(dir, "/") {
		next, err := openat(fd, elem, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOTDIR && isSymlinkAt(fd, elem) {
			// O_DIRECTORY|O_NOFOLLOW reports a link as "not a directory";
			// say what it is.
			err = unix.ELOOP
		}
		if fd != rootfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func isSymlinkAt(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// parentAt returns a descriptor of the directory that holds name, and
// name's last element, for the *at system calls. Release the descriptor with
// closeParent.
func (f *FS) parentAt(rootfd int, name string) (dirfd int, base string, err error) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return rootfd, name, nil
	}
	fd, err := f.openBeneath(rootfd, name[:i], unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", err
	}
	return fd, name[i+1:], nil
}

func closeParent(rootfd, dirfd int) {
	if dirfd != rootfd {
		unix.Close(dirfd)
	}
}

// ignoringEINTR retries fn while it is interrupted by a signal.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
