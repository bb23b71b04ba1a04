package memfs

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/spf13/afero"

	"github.com/mqb-project/mqb/core"
)

// Lock takes the in-process exclusive lock on the claim file name, creating
// the file when it is missing. The lock belongs to the file, like flock: while
// one Claim holds it, Lock fails at once with an *fs.PathError wrapping
// core.ErrLocked; a file removed and created again under the same name is a
// new file with a free lock (which is why claim files are never removed).
// Lock fails with fs.ErrNotExist when the parent directory is missing and
// syscall.EISDIR when name is a directory. Locks are not carried over by
// Crash.
func (f *FS) Lock(name string) (core.Claim, error) {
	const op = "lock"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "." {
		return nil, pathErr(op, name, syscall.EISDIR)
	}
	d, elem, err := f.parentOf(op, name)
	if err != nil {
		return nil, err
	}
	n := d.children[elem]
	var h afero.File
	if n == nil {
		n = f.newFile()
		if h, err = f.base.OpenFile(f.where(n), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return nil, baseErr(op, name, err)
		}
		f.link(d, elem, n)
	} else {
		switch {
		case n.kind == kindDir:
			return nil, pathErr(op, name, syscall.EISDIR)
		case n.claim != nil:
			return nil, pathErr(op, name, core.ErrLocked)
		}
		if h, err = f.base.OpenFile(f.where(n), os.O_RDWR, 0); err != nil {
			return nil, baseErr(op, name, err)
		}
	}
	c := &claim{fsys: f, n: n, name: name, h: h}
	n.claim = c
	return c, nil
}

// claim is a held lock. Its methods are safe for concurrent use.
type claim struct {
	fsys     *FS
	n        *node
	name     string
	h        afero.File
	released bool
}

// Write replaces the whole content of the claim file with data and makes it
// durable: after Write returns nil, a Crash keeps the claim file under its
// current name, holding data. After Release it fails with fs.ErrClosed.
func (c *claim) Write(data []byte) error {
	const op = "write"
	f := c.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.released {
		return pathErr(op, c.name, fs.ErrClosed)
	}
	if err := c.h.Truncate(0); err != nil {
		return baseErr(op, c.name, err)
	}
	if _, err := c.h.WriteAt(data, 0); err != nil {
		return baseErr(op, c.name, err)
	}
	if err := c.h.Sync(); err != nil {
		return baseErr(op, c.name, err)
	}
	c.n.syncedLen = int64(len(data))
	// "Durable" covers the file's entry too: commit its creation (what a
	// disk backend does by syncing the parent directory once).
	f.commit(c.n.pending)
	return nil
}

// Release gives up the lock; the claim file stays. A second Release fails
// with fs.ErrClosed.
func (c *claim) Release() error {
	f := c.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.released {
		return pathErr("release", c.name, fs.ErrClosed)
	}
	c.released = true
	c.n.claim = nil
	if err := c.h.Close(); err != nil {
		return baseErr("release", c.name, err)
	}
	return nil
}
