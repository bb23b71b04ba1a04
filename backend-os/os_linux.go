package osfs

import (
	"time"

	"golang.org/x/sys/unix"
)

const oLargefile = unix.O_LARGEFILE

// syncFD makes what was written to fd durable: fsync(2), which on Linux
// also flushes the drive's volatile cache. Every Flush mode is the same.
func syncFD(fd int, _ Flush) error {
	return ignoringEINTR(func() error { return unix.Fsync(fd) })
}

func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.sys.Mtim.Unix()) }
