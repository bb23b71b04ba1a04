package osfs

import (
	"time"

	"golang.org/x/sys/unix"
)

const oLargefile = 0 // off_t is 64 bits

// syncFD makes what was written to fd durable as mode says (see Flush).
// macOS's fsync(2) does not flush the drive's cache, so FlushFull is
// F_FULLFSYNC, and FlushBarrier F_BARRIERFSYNC. A filesystem that refuses
// the fcntl (some network and FUSE mounts) gets fsync, as Go's os.File.Sync
// does.
func syncFD(fd int, mode Flush) error {
	op := unix.F_FULLFSYNC
	if mode == FlushBarrier {
		op = unix.F_BARRIERFSYNC
	}
	err := ignoringEINTR(func() error {
		_, err := unix.FcntlInt(uintptr(fd), op, 0)
		return err
	})
	if err == unix.ENOTSUP || err == unix.ENOTTY || err == unix.EINVAL {
		err = ignoringEINTR(func() error { return unix.Fsync(fd) })
	}
	return err
}

func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.sys.Mtimespec.Unix()) }
