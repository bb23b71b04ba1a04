//go:build linux || darwin || freebsd

package osfs

import (
	"io/fs"
	"path"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// walkOpen is openBeneath without openat2 (other kernels, and the
// mqb_portable build): it opens one element at a time with O_NOFOLLOW, each
// relative to the directory before it. flags must include O_CLOEXEC.
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
// with oDirPath, refusing symbolic links in every element.
func walkDir(rootfd int, dir string) (int, error) {
	fd := rootfd
	for elem := range strings.SplitSeq(dir, "/") {
		next, err := openat(fd, elem, oDirPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
		fd, err := sysOpenat(dirfd, name, flags, mode)
		if err == unix.EMLINK && flags&unix.O_NOFOLLOW != 0 {
			// FreeBSD's answer to O_NOFOLLOW on a link; open(2) has
			// no other use for EMLINK.
			err = unix.ELOOP
		}
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

// parent is the directory that holds a name, for the *at system calls.
type parent struct {
	fd     int
	base   string  // the name's last element
	dir    *dirRef // nil when the directory is the root
	cached bool    // fd was kept from an earlier call
}

// parentAt returns the directory that holds name, a kept descriptor when
// there is one (unless fresh) or a newly resolved one, which is then kept.
// Give it back with release.
func (f *FS) parentAt(rootfd int, name string, fresh bool) (parent, error) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return parent{fd: rootfd, base: name}, nil
	}
	dir := name[:i]
	d, cached, err := f.dirs.get(dir, fresh, func() (int, error) {
		return f.openBeneath(rootfd, dir, oDirPath|unix.O_DIRECTORY, 0)
	})
	if err != nil {
		return parent{}, err
	}
	return parent{fd: d.fd, base: name[i+1:], dir: d, cached: cached}, nil
}

// succeeded notes that a call through p's directory succeeded (see
// FS.SyncDir).
func (p parent) succeeded() {
	if p.dir != nil {
		p.dir.changed.Store(true)
	}
}

func (f *FS) release(p parent) {
	if p.dir != nil {
		f.dirs.put(p.dir)
	}
}

// inParent runs op with the directory that holds name and name's last
// element. When op fails through a kept descriptor in a way that can mean
// the directory was removed since (see dirCache), it runs op again on a
// fresh resolution; failing had no effect, so the result is the one a
// fresh resolution gives. An ENOENT through a directory that still has a
// link is the name's own (a removed directory never gets its link back),
// so a consumer looking for a chunk that is not there yet pays one fstat
// rather than a fresh resolution.
func (f *FS) inParent(rootfd int, name string, op func(dirfd int, base string) error) error {
	for fresh := false; ; fresh = true {
		p, err := f.parentAt(rootfd, name, fresh)
		if err != nil {
			return err
		}
		err = op(p.fd, p.base)
		if err == nil {
			p.succeeded()
		}
		stale := p.cached && mayBeStale(err) && (err != unix.ENOENT || dirRemoved(p.fd))
		f.release(p)
		if !stale {
			return err
		}
	}
}

// mayBeStale reports whether err, from a call through a kept directory
// descriptor, can mean that the directory was removed: Linux fails new
// entries in a removed directory with ENOENT, NFS a removed file handle
// with ESTALE.
func mayBeStale(err error) bool { return err == unix.ENOENT || err == unix.ESTALE }

// ignoringEINTR retries fn while it is interrupted by a signal.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// syscall.Stat_t and unix.Stat_t are the same C struct stat.
const (
	_ = uint(unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{}))
	_ = uint(unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{}))
)

// Stat describes name without following a symbolic link, like os.Lstat;
// Sys returns a *syscall.Stat_t. It is fstatat(AT_SYMLINK_NOFOLLOW) in the
// directory holding name, through its kept descriptor when there is one:
// one system call, where resolving name and fstat-ing it would cost three.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	info := &fileInfo{name: path.Base(name)}
	st := (*unix.Stat_t)(unsafe.Pointer(&info.sys))
	err := f.do("stat", name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			return ignoringEINTR(func() error { return unix.Fstatat(dirfd, base, st, unix.AT_SYMLINK_NOFOLLOW) })
		})
	}, name)
	if err != nil {
		return nil, err
	}
	return info, nil
}
