//go:build !mqb_portable

package osfs

import "golang.org/x/sys/unix"

// watchOpenFlags opens a directory to watch it with kqueue.
const watchOpenFlags = unix.O_RDONLY
