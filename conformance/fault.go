package conformance

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall"

	"github.com/mqb-project/mqb/core"
)

// ErrInjected is matched (errors.Is) by every error a FaultFS makes up.
var ErrInjected = errors.New("injected fault")

// InjectedError is the error of an operation a FaultFS failed on purpose,
// wrapped in an *fs.PathError naming the operation and the file. It matches
// ErrInjected and its Errno with errors.Is.
type InjectedError struct {
	Op    Op
	Errno syscall.Errno // EIO or ENOSPC, say
	Nth   int           // which operation of its kind it was, counting from 0 when the FaultFS was made
}

// Error says which operation failed and with what.
func (e *InjectedError) Error() string {
	return fmt.Sprintf("%v (injected into %s #%d)", e.Errno, e.Op.Kind, e.Nth)
}

// Is reports ErrInjected.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }

// Unwrap returns the errno, so that errors.Is(err, syscall.ENOSPC) works.
func (e *InjectedError) Unwrap() error { return e.Errno }

// FaultFS wraps an FS and fails chosen operations with a made-up error, like
// Pebble's errorfs. Arm it with Fail; its FS method returns the faulty view
// to hand to the code under test. It is safe for concurrent use.
//
// An injected failure does not run the operation, except File.Write and
// Claim.WriteAt, which write the first half of their bytes before failing (a
// short write, as when a disk fills up; for WriteAt, half of the bytes
// before trailing spaces and newlines, so that a padded record is torn in
// its middle), and File.Close and Claim.Release, which release the file or
// lock before failing.
type FaultFS struct {
	inner core.FS
	view  core.FS

	mu       sync.Mutex
	counts   [numOpKinds]int
	armed    bool
	kind     OpKind
	nth      int // the counts[kind] value to fail at
	errno    syscall.Errno
	injected int
	last     *InjectedError
}

// NewFaultFS wraps inner. Nothing fails until Fail is called.
func NewFaultFS(inner core.FS) *FaultFS {
	f := &FaultFS{inner: inner}
	f.view = wrapFS(inner, f.before)
	return f
}

// FS returns the faulty view of the wrapped FS. It implements
// core.DirWatcher, core.FSSyncer, and core.WholeFileReader with
// core.WholeFileWriter, exactly when the wrapped FS does; a whole-file
// write is counted (and fails) as its create, write, sync and close, and a
// run of whole-file reads as each file's open and read.
func (f *FaultFS) FS() core.FS { return f.view }

// Fail arms the FaultFS to fail, once, the nth operation of kind counted
// from now (0 is the next one) with errno. A later Fail replaces it.
func (f *FaultFS) Fail(kind OpKind, nth int, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.kind, f.nth, f.errno = true, kind, f.counts[kind]+nth, errno
}

// Disarm cancels a pending Fail.
func (f *FaultFS) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
}

// Count returns how many operations of kind have been seen.
func (f *FaultFS) Count(kind OpKind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[kind]
}

// Injected returns how many operations have been failed on purpose.
func (f *FaultFS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// Last returns the last injected error, or nil.
func (f *FaultFS) Last() *InjectedError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *FaultFS) before(op Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.counts[op.Kind]
	f.counts[op.Kind]++
	if !f.armed || op.Kind != f.kind || n != f.nth {
		return nil
	}
	f.armed = false
	f.injected++
	ie := &InjectedError{Op: op, Errno: f.errno, Nth: n}
	f.last = ie
	name := op.Name
	if op.To != "" {
		name += " -> " + op.To
	}
	return &fs.PathError{Op: op.Kind.String(), Path: name, Err: ie}
}
