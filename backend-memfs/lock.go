package memfs

import (
	"io/fs"
	"os"
	"slices"
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

// WriteAt writes data at offset off of the claim file in place, never
// truncating it. The bytes are not durable until Sync: a Crash before then
// keeps each unsynced write whole, torn (some of its 8-byte blocks) or not
// at all, each over the bytes durable before. After Release it fails with
// fs.ErrClosed.
func (c *claim) WriteAt(data []byte, off int64) (int, error) {
	const op = "write"
	f := c.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.released {
		return 0, pathErr(op, c.name, fs.ErrClosed)
	}
	if off < 0 {
		return 0, pathErr(op, c.name, fs.ErrInvalid)
	}
	if c.n.placed == nil {
		cur, err := f.content(c.n)
		if err != nil {
			return 0, baseErr(op, c.name, err)
		}
		c.n.placed = &placed{durable: cur[:min(int64(len(cur)), c.n.syncedLen)]}
	}
	n, err := c.h.WriteAt(data, off)
	c.n.placed.writes = append(c.n.placed.writes, extent{off: off, data: slices.Clone(data[:n])})
	f.unsynced[c.n] = struct{}{}
	grew(f.unsynced, &f.unsyncedPeak)
	if err != nil {
		return n, baseErr(op, c.name, err)
	}
	return n, nil
}

// Sync makes the claim file's bytes durable, and its directory entry with
// them: after Sync returns nil, a Crash keeps the claim file under its
// current name with its current content. After Release it fails with
// fs.ErrClosed.
func (c *claim) Sync() error {
	const op = "sync"
	f := c.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.released {
		return pathErr(op, c.name, fs.ErrClosed)
	}
	if err := c.h.Sync(); err != nil {
		return baseErr(op, c.name, err)
	}
	if err := f.syncPlaced(c.n); err != nil {
		return baseErr(op, c.name, err)
	}
	delete(f.unsynced, c.n)
	f.unsynced = shrunk(f.unsynced, &f.unsyncedPeak)
	// "Durable" covers the file's entry too: commit its creation (what a
	// disk backend does by syncing the parent directory once).
	f.commit(c.n.pending)
	return nil
}

// placed is the durable state of a file written in place: its durable
// bytes, and the writes made over them since.
type placed struct {
	durable []byte
	writes  []extent
}

type extent struct {
	off  int64
	data []byte
}

// syncPlaced makes the whole current content of n durable.
func (f *FS) syncPlaced(n *node) error {
	cur, err := f.content(n)
	if err != nil {
		return err
	}
	n.syncedLen = int64(len(cur))
	if n.placed != nil {
		n.placed.durable, n.placed.writes = cur, nil
	}
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
