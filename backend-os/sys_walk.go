//go:build (linux && mqb_portable) || darwin || freebsd

package osfs

// Name resolution with what every Unix has: one element at a time with
// O_NOFOLLOW (walkOpen). macOS has nothing like openat2's
// RESOLVE_NO_SYMLINKS. FreeBSD's O_RESOLVE_BENEATH keeps a lookup below the
// root but follows the links inside it, which this package never does, so
// FreeBSD walks too. On Linux the mqb_portable build takes this path, so
// that the code of macOS and FreeBSD is tested where CI runs.

import (
	"golang.org/x/sys/unix"
)

// oDirPath opens the directories that names are resolved from. O_RDONLY
// needs read permission on them, which the FS's own directories (0700)
// give.
const oDirPath = unix.O_RDONLY

// resolveUsable reports whether a kernel facility resolves names beneath
// the root without following links: none here.
func resolveUsable(int) bool { return false }

// openBeneath opens name relative to the directory rootfd without leaving it
// and without following any symbolic link: a link in any element fails with
// ELOOP. O_CLOEXEC is always added. name must satisfy fs.ValidPath, so it
// has no ".." elements.
func (f *FS) openBeneath(rootfd int, name string, flags int, mode uint32) (int, error) {
	return walkOpen(rootfd, name, flags|unix.O_CLOEXEC, mode)
}
