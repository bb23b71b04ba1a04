//go:build darwin || freebsd

package osfs

import "golang.org/x/sys/unix"

// The *at system calls as golang.org/x/sys/unix makes them (see
// sysname_linux.go for why Linux has its own).

func sysOpenat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return unix.Openat(dirfd, name, flags, mode)
}

func sysUnlinkat(dirfd int, name string, flags int) error { return unix.Unlinkat(dirfd, name, flags) }

func sysMkdirat(dirfd int, name string, mode uint32) error { return unix.Mkdirat(dirfd, name, mode) }
