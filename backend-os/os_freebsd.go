package osfs

import (
	"time"

	"golang.org/x/sys/unix"
)

const oLargefile = 0 // off_t is 64 bits

// syncFD makes what was written to fd durable: fsync(2), which on FreeBSD
// also flushes the drive's volatile cache. Every Flush mode is the same.
func syncFD(fd int, _ Flush) error {
	return ignoringEINTR(func() error { return unix.Fsync(fd) })
}

func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.sys.Mtimespec.Unix()) }
