//go:build linux

package osfs

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The *at system calls a spool makes for every chunk, taking the name from
// a buffer on the caller's stack: golang.org/x/sys/unix allocates a copy of
// every name it passes to the kernel, several per message.

// cName holds a name for a system call, NUL-terminated. Base names always
// fit (NAME_MAX is 255); a longer path is copied to the heap.
type cName [256]byte

// ptr returns s as a C string, in b when it fits.
func (b *cName) ptr(s string) (unsafe.Pointer, error) {
	if len(s) >= len(b) {
		p, err := unix.BytePtrFromString(s)
		return unsafe.Pointer(p), err
	}
	if strings.IndexByte(s, 0) >= 0 {
		return nil, unix.EINVAL
	}
	copy(b[:], s)
	b[len(s)] = 0
	return unsafe.Pointer(&b[0]), nil
}

func sysOpenat(dirfd int, name string, flags int, mode uint32) (int, error) {
	var b cName
	p, err := b.ptr(name)
	if err != nil {
		return -1, err
	}
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(p), uintptr(flags), uintptr(mode), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func sysUnlinkat(dirfd int, name string, flags int) error {
	var b cName
	p, err := b.ptr(name)
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_UNLINKAT, uintptr(dirfd), uintptr(p), uintptr(flags)); errno != 0 {
		return errno
	}
	return nil
}

func sysMkdirat(dirfd int, name string, mode uint32) error {
	var b cName
	p, err := b.ptr(name)
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_MKDIRAT, uintptr(dirfd), uintptr(p), uintptr(mode)); errno != 0 {
		return errno
	}
	return nil
}

func sysRenameat2(odir int, oname string, ndir int, nname string, flags uint) error {
	var ob, nb cName
	op, err := ob.ptr(oname)
	if err != nil {
		return err
	}
	np, err := nb.ptr(nname)
	if err != nil {
		return err
	}
	_, _, errno := unix.Syscall6(unix.SYS_RENAMEAT2, uintptr(odir), uintptr(op), uintptr(ndir), uintptr(np), uintptr(flags), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
