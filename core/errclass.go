package core

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/mqb-project/mqb/core/option"
)

// permanentErrors are the errors that trying the same operation again
// cannot fix: the spool, its configuration or the process has to change
// first. Everything else (ENOSPC, EIO, timeouts, a lost connection) may pass.
var permanentErrors = []error{
	ErrProducerFailed, ErrSequenceExhausted, ErrClosed, ErrClaimed,
	option.ErrInvalid, ErrBadSidecar, ErrLayoutMismatch, ErrUnseenChunks,
	fs.ErrExist,      // a name taken by another writer, or a link: never retried with the same name
	fs.ErrPermission, // EACCES, EPERM
	syscall.ELOOP,    // a symbolic link where the spool expects a file or directory
	syscall.EROFS, syscall.ENOTDIR, syscall.EISDIR, syscall.ENAMETOOLONG, syscall.EXDEV,
}

// Permanent reports whether err, from a spool operation, is one that trying
// again unchanged cannot fix. A route stops at once on such an error instead
// of retrying it. Errors it does not recognise are transient: a full disk
// (ENOSPC), an I/O error (EIO) or a timeout may pass.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	for _, target := range permanentErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// SymlinkError is the error for a symbolic link found inside a spool where a
// chunk file, a temporary name or a shard directory should be. mqb never
// follows a link in a spool, so the operation cannot succeed until the link
// is removed. It matches syscall.ELOOP.
type SymlinkError struct {
	Spool string // the spool root as the user named it
	Link  string // the link, relative to the spool root
	Op    string // what was being done, e.g. "create 000000007.bin.tmp"
	Err   error  // what the filesystem said
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("spool %s: %s: %s is a symbolic link; mqb never follows links in a spool (remove it): %v", e.Spool, e.Op, e.Link, e.Err)
}

// Unwrap returns what the filesystem said.
func (e *SymlinkError) Unwrap() error { return e.Err }

// Is reports syscall.ELOOP, so that Permanent and callers that test for a
// refused link match.
func (e *SymlinkError) Is(target error) bool { return target == syscall.ELOOP }

// explainLink turns err, from op on name, into a *SymlinkError naming the
// first element of name that is a symbolic link, when there is one.
// Otherwise it returns nil.
func explainLink(fsys FS, spool, op, name string, err error) error {
	if err == nil || !(errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrExist)) {
		return nil
	}
	parts := strings.Split(name, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, serr := fsys.Stat(p)
		if serr != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &SymlinkError{Spool: spool, Link: p, Op: op, Err: err}
		}
	}
	return nil
}
