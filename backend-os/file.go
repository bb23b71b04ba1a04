//go:build linux

package osfs

import (
	"os"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

// CreateExcl creates the file name, write-only, with Options.FileMode. It
// fails with an error matching fs.ErrExist when name exists, even as a
// dangling symbolic link, and fs.ErrNotExist when its parent directory does
// not exist. The File is an *os.File, so io.Copy can use its fast paths.
func (f *FS) CreateExcl(name string) (core.File, error) {
	var file *os.File
	err := f.do("create", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name,
			unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_LARGEFILE, f.fileMode)
		if err != nil {
			return err
		}
		file = os.NewFile(uintptr(fd), name)
		return nil
	}, name)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// Open opens the regular file name read-only. A symbolic link is never
// followed (error matching ErrSymlink), and anything that is not a regular
// file is refused with ErrNotRegular; opening a FIFO does not block. The
// File is an *os.File, so io.Copy can use its fast paths.
func (f *FS) Open(name string) (core.File, error) {
	var file *os.File
	err := f.do("open", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name,
			unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_LARGEFILE, 0)
		if err != nil {
			return err
		}
		if err := mustBeRegular(fd); err != nil {
			unix.Close(fd)
			return err
		}
		file = os.NewFile(uintptr(fd), name)
		return nil
	}, name)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// mustBeRegular checks that fd, opened with O_NONBLOCK so that a FIFO could
// not block the open, is a regular file, and makes it blocking again.
func mustBeRegular(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return ErrNotRegular
	}
	return unix.SetNonblock(fd, false)
}
