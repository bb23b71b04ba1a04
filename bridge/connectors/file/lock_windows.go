//go:build windows

package file

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockWriter takes an exclusive lock, failing at once, on one byte far
// beyond any file's end: it excludes every other writer that asks for it
// and leaves the file's bytes free to read and write.
func lockWriter(f *os.File) error {
	ol := &windows.Overlapped{Offset: 0xFFFFFFFF, OffsetHigh: 0x7FFFFFFF}
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err == windows.ERROR_LOCK_VIOLATION {
		return errWriterBusy
	}
	return err
}

// writerPID is 0: Windows does not say who holds a lock.
func writerPID(*os.File) int { return 0 }
