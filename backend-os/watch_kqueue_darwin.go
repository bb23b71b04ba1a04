//go:build !mqb_portable

package osfs

import "golang.org/x/sys/unix"

// watchOpenFlags opens a directory only to be notified about it: O_EVTONLY
// does not keep the volume from being unmounted.
const watchOpenFlags = unix.O_EVTONLY
