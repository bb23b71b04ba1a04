//go:build linux || darwin || freebsd

package osfs

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// dirCacheSize is how many subdirectory descriptors an FS keeps: enough for
// a producer's and a consumer's current shard directories and their parents.
const dirCacheSize = 16

// dirCache keeps descriptors of the subdirectories that calls used last,
// so that a spool working in a shard directory does not resolve (openat2)
// and close that directory again for every name in it. Every call reaches
// the names in a directory through the kept descriptor (O_PATH on Linux),
// and SyncDir syncs through a readable descriptor opened from it, so that
// it syncs the very directory the calls changed.
//
// A kept descriptor stays on the directory it was resolved to. When that
// directory is removed, by this FS or by another process (a consumer
// removes drained shard directories), creating, opening, renaming, linking
// or removing an entry through the descriptor fails with ENOENT (ESTALE
// over NFS): the kernel refuses new entries in a removed directory, and a
// removed directory has no old ones (TestRemovedDirRefusesEntries checks
// this). On those errors the callers drop the descriptor and try once more
// on a fresh resolution (see inParent), so a directory that was removed and
// made again is never used through the old descriptor, and the result is
// the one a fresh resolution gives. fsync of a removed directory succeeds,
// so SyncDir checks (fstat) that a kept directory still has a link, unless
// a call through it succeeded since the last SyncDir: then the directory
// to sync is the one that call changed, whatever happened to its name
// since (see FS.SyncDir). The FS's own Remove, Rename and Mkdir drop the
// descriptors they make out of date at once.
type dirCache struct {
	mu      sync.Mutex
	entries []*dirRef // least recently used first
	closed  bool
}

// dirRef is a descriptor of a directory below the root, kept or not.
type dirRef struct {
	name    string
	fd      int
	sync    int  // readable descriptor of the same directory for fsync, -1 until SyncDir opens it (fd when fd is readable)
	refs    int  // calls using fd; guarded by dirCache.mu
	dropped bool // not (or no longer) in the cache: close at refs == 0
	// changed is set when a call through fd succeeds and cleared by
	// SyncDir: the directory fd refers to was in place at that call.
	changed atomic.Bool
}

// closeFDs closes d's descriptors.
func (d *dirRef) closeFDs() {
	if d.sync >= 0 && d.sync != d.fd {
		unix.Close(d.sync)
	}
	unix.Close(d.fd)
}

// get returns a descriptor of the directory name (not "."), from the cache
// or opened with open and then kept. With fresh it never returns a kept
// descriptor: it drops any for name and opens a new one. cached reports
// whether the descriptor came from the cache. Give it back with put.
func (c *dirCache) get(name string, fresh bool, open func() (int, error)) (d *dirRef, cached bool, err error) {
	c.mu.Lock()
	if i := c.find(name); i >= 0 {
		if !fresh {
			d = c.entries[i]
			d.refs++
			if last := len(c.entries) - 1; i != last {
				copy(c.entries[i:], c.entries[i+1:])
				c.entries[last] = d
			}
			c.mu.Unlock()
			return d, true, nil
		}
		c.removeAt(i)
	}
	c.mu.Unlock()

	fd, err := open()
	if err != nil {
		return nil, false, err
	}
	d = &dirRef{name: name, fd: fd, sync: -1, refs: 1}
	if oDirPath == unix.O_RDONLY {
		d.sync = fd // readable already
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		d.dropped = true // closed by put
		return d, false, nil
	}
	if i := c.find(name); i >= 0 {
		c.removeAt(i) // opened by another call meanwhile: keep the newest
	}
	if len(c.entries) == dirCacheSize {
		c.removeAt(0)
	}
	c.entries = append(c.entries, d)
	return d, false, nil
}

// put gives back a descriptor from get.
func (c *dirCache) put(d *dirRef) {
	c.mu.Lock()
	d.refs--
	closeIt := d.refs == 0 && d.dropped
	c.mu.Unlock()
	if closeIt {
		d.closeFDs()
	}
}

// syncFD returns a readable descriptor of d's directory, for fsync: fd
// itself where the kept descriptors are readable, else one opened through
// fd (so of the same directory, even one whose name was removed since) and
// kept with d.
func (c *dirCache) syncFD(d *dirRef) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.sync < 0 {
		fd, err := openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		d.sync = fd
	}
	return d.sync, nil
}

// forget drops the descriptors of name and of every directory below it.
func (c *dirCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.entries) - 1; i >= 0; i-- {
		n := c.entries[i].name
		if n == name || (len(n) > len(name) && n[len(name)] == '/' && strings.HasPrefix(n, name)) {
			c.removeAt(i)
		}
	}
}

// close drops every descriptor and keeps no new ones.
func (c *dirCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for len(c.entries) > 0 {
		c.removeAt(len(c.entries) - 1)
	}
}

// find returns the index of name's entry, or -1. It looks from the most
// recently used end, where a spool working in one shard directory finds it
// at once.
func (c *dirCache) find(name string) int {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].name == name {
			return i
		}
	}
	return -1
}

// removeAt takes entry i out of the cache, closing its descriptor unless a
// call is using it (put closes it then). c.mu is held.
func (c *dirCache) removeAt(i int) {
	d := c.entries[i]
	c.entries = slices.Delete(c.entries, i, i+1)
	d.dropped = true
	if d.refs == 0 {
		d.closeFDs()
	}
}
