//go:build darwin || freebsd

package benchrun

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// rawBatchStrategies are the fsync=batch baselines measured here: there is
// no syncfs.
var rawBatchStrategies = []string{RawPerFile, RawConcurrent}

// rawSyncfs is never called: RawSyncfs is not among rawBatchStrategies.
func rawSyncfs(int) error { return errors.ErrUnsupported }

// rawReadNames lists the directory fd (at offset 0) through a copy of the
// descriptor, with the standard library's reader (readdir(3) on macOS).
func rawReadNames(fd int, _ []byte) ([]string, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	return d.Readdirnames(-1)
}

// syncfsPath flushes what was written before the next trial: sync(2), as
// there is no syncfs.
func syncfsPath(string) error {
	unix.Sync()
	return nil
}

// rawCountNames counts the entries of the directory fd.
func rawCountNames(fd int, buf []byte) (int, error) {
	names, err := rawReadNames(fd, buf)
	return len(names), err
}
