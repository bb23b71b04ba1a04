//go:build unix

package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockWriter takes a non-blocking exclusive flock(2) on f. Locks belong to
// the open file description, so a second open of the file conflicts even
// in this process; the kernel drops the lock when f is closed or the
// process dies.
func lockWriter(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := sc.Control(func(fd uintptr) {
		for {
			lockErr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
			if lockErr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if lockErr == unix.EWOULDBLOCK {
		return errWriterBusy
	}
	return lockErr
}
