package osfs

import (
	"errors"
	"io/fs"
	"runtime"
	"syscall"
)

var (
	// ErrSymlink is returned, wrapped in an *fs.PathError, when reaching a
	// name would mean following a symbolic link, in any of its elements.
	// It also matches syscall.ELOOP, which is what the kernel reported.
	ErrSymlink error = &errnoError{msg: "refusing to follow a symbolic link", errno: syscall.ELOOP}

	// ErrNotRegular is returned, wrapped in an *fs.PathError, by Open and
	// Lock when the name is a directory, FIFO, socket or device rather
	// than a regular file.
	ErrNotRegular = errors.New("not a regular file")
)

// ErrUnsupportedOS is what New returns on a system this backend does not
// support yet (Windows among them). It matches errors.ErrUnsupported.
var ErrUnsupportedOS error = unsupportedOS{}

type unsupportedOS struct{}

func (unsupportedOS) Error() string {
	return "the os backend does not support " + runtime.GOOS + " yet; use backend=memfs for tests"
}

func (unsupportedOS) Is(target error) bool { return target == errors.ErrUnsupported }

// errnoError is a sentinel with a clearer message than the errno it stands
// for; errors.Is matches both.
type errnoError struct {
	msg   string
	errno syscall.Errno
}

func (e *errnoError) Error() string { return e.msg }
func (e *errnoError) Unwrap() error { return e.errno }

// pathErr wraps a failed operation on name as an *fs.PathError, keeping the
// errno (or sentinel) as the wrapped error so that errors.Is works.
func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// An *os.File error for the same name: keep its cause, use our op.
		err = pe.Err
	}
	if err == syscall.ELOOP {
		err = ErrSymlink
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}
