package cli

import "golang.org/x/sys/windows"

func isTerminalFD(fd uintptr) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(fd), &mode) == nil
}
