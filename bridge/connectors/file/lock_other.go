//go:build !unix && !windows

package file

import "os"

// lockWriter takes no lock where the system has no flock.
func lockWriter(*os.File) error { return nil }

// writerPID is 0: no lock, no holder.
func writerPID(*os.File) int { return 0 }
