package memfs

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"

	"github.com/spf13/afero"
)

// file is an open file: write-only from CreateExcl, read-only from Open.
type file struct {
	fsys     *FS
	n        *node
	name     string
	writable bool

	mu      sync.Mutex
	h       afero.File
	closed  bool
	written int64 // bytes written, the size of the file (it was created empty)
}

// Read reads from a file opened with Open. On a file from CreateExcl it fails
// with syscall.EBADF; after Close with fs.ErrClosed. It returns io.EOF
// unwrapped at the end.
func (fl *file) Read(p []byte) (int, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := fl.usable("read", !fl.writable); err != nil {
		return 0, err
	}
	n, err := fl.h.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = baseErr("read", fl.name, err)
	}
	return n, err
}

// Write appends to a file from CreateExcl. On a file from Open it fails with
// syscall.EBADF; after Close with fs.ErrClosed.
func (fl *file) Write(p []byte) (int, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := fl.usable("write", fl.writable); err != nil {
		return 0, err
	}
	n, err := fl.h.Write(p)
	fl.written += int64(n)
	if err != nil {
		err = baseErr("write", fl.name, err)
	}
	return n, err
}

// Sync makes every byte written to the file so far durable, whichever name
// the file has now (or none: a crash that undoes its removal brings back the
// synced bytes).
func (fl *file) Sync() error {
	const op = "sync"
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := fl.usable(op, true); err != nil {
		return err
	}
	if err := fl.h.Sync(); err != nil {
		return baseErr(op, fl.name, err)
	}
	fi, err := fl.h.Stat()
	if err != nil {
		return baseErr(op, fl.name, err)
	}
	fl.fsys.mu.Lock()
	fl.n.syncedLen = fi.Size()
	fl.fsys.mu.Unlock()
	return nil
}

// Stat describes the open file; its Name is the last element of the name it
// was opened with.
func (fl *file) Stat() (fs.FileInfo, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := fl.usable("stat", true); err != nil {
		return nil, err
	}
	fi, err := fl.h.Stat()
	if err != nil {
		return nil, baseErr("stat", fl.name, err)
	}
	return &fileInfo{FileInfo: fi, name: path.Base(fl.name)}, nil
}

// Close closes the file. A second Close fails with fs.ErrClosed.
func (fl *file) Close() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed {
		return pathErr("close", fl.name, fs.ErrClosed)
	}
	fl.closed = true
	if fl.writable {
		// Nothing can be written to the file any more: once its bytes
		// are synced, SyncAll has nothing to do for it.
		f := fl.fsys
		f.mu.Lock()
		fl.n.writing = false
		if fl.n.syncedLen >= fl.written {
			delete(f.unsynced, fl.n)
			f.unsynced = shrunk(f.unsynced, &f.unsyncedPeak)
		}
		f.mu.Unlock()
	}
	if err := fl.h.Close(); err != nil {
		return baseErr("close", fl.name, err)
	}
	return nil
}

func (fl *file) usable(op string, allowed bool) error {
	if fl.closed {
		return pathErr(op, fl.name, fs.ErrClosed)
	}
	if !allowed {
		return pathErr(op, fl.name, syscall.EBADF)
	}
	return nil
}
