//go:build !unix

package mqtt

import (
	"errors"
	"os"
)

// lockFile takes no lock where the system has no flock.
func lockFile(dir, name string) (*os.File, int, error) {
	return nil, 0, errors.New("no client id lock on this system")
}

// unlockFile closes f; there is no lock to let go.
func unlockFile(f *os.File) { f.Close() }
