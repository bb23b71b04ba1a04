package cli

import (
	"io"
	"os"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFD(f.Fd())
}

// terminalWidth is the number of columns of the terminal w, 0 if unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	return terminalWidthFD(f.Fd())
}

// isTerminalPath reports whether path names the terminal tty is (/dev/tty,
// /dev/stderr, /dev/pts/N...), without opening it.
func isTerminalPath(path string, tty io.Writer) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if path == "/dev/tty" {
		return true
	}
	f, ok := tty.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && os.SameFile(fi, st)
}
