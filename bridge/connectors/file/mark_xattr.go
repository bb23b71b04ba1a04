//go:build linux || darwin

package file

import (
	"os"

	"golang.org/x/sys/unix"
)

func getMark(f *os.File) ([]byte, bool) {
	b := make([]byte, 32)
	n, err := unix.Fgetxattr(int(f.Fd()), markAttr, b)
	if err != nil || n > len(b) {
		return nil, false
	}
	return b[:n], true
}

func setMark(f *os.File, v []byte) { _ = unix.Fsetxattr(int(f.Fd()), markAttr, v, 0) }
