//go:build darwin || freebsd

package cli

import "golang.org/x/sys/unix"

func isTerminalFD(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}
