//go:build unix

package core

import (
	"os"
	"syscall"
)

// flockNB takes a non-blocking exclusive flock on f, for rootFS.Lock.
func flockNB(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
