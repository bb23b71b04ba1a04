//go:build unix

package cli

import "golang.org/x/sys/unix"

func terminalWidthFD(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
