//go:build linux || darwin || freebsd

package osfs

import (
	"io/fs"
	"os"
	"path"
	"sync"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

// Lock takes a non-blocking exclusive flock(2) on the claim file name,
// creating it with Options.FileMode when missing. When another holder has it
// (another process, or another Claim of this process) Lock fails at once
// with an error matching core.ErrLocked. The kernel releases the lock when
// the holding process dies, so a claim is never stale. The file is never
// removed. Lock makes the file's directory entry durable, so that bytes
// Claim.Sync made durable survive a power cut with their entry. Like every
// name, a claim file is never reached through a symbolic link.
// Closing the FS does not release its claims.
//
// On NFS, Linux emulates flock with byte-range locks held by the server,
// which must support locking (see flock(2)).
func (f *FS) Lock(name string) (core.Claim, error) {
	var c *claim
	err := f.do("lock", name, func(rootfd int) error {
		// The lock is taken on a descriptor opened here, through the same
		// confined resolution as every other name, rather than by
		// gofrs/flock, which opens by path: O_NOFOLLOW there protects only
		// the last element, and it does not expose its descriptor for WriteAt.
		fd, err := f.openBeneath(rootfd, name,
			unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|oLargefile, f.fileMode)
		if err != nil {
			return err
		}
		_, err = regularSize(fd)
		if err == nil {
			err = clearNonblock(fd) // the claim is an *os.File, kept blocking
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
		// flock locks belong to the open file description, so a second
		// open of the file, even in this process, conflicts.
		err = ignoringEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
		if err == unix.EWOULDBLOCK {
			err = core.ErrLocked
		}
		if err == nil {
			// Whoever created the file, its entry must be durable before
			// Claim.Sync can promise that the record survives a power cut.
			err = f.fsyncDir(rootfd, path.Dir(name))
		}
		if err != nil {
			unix.Close(fd) // releases the lock, if taken
			return err
		}
		c = &claim{name: name, file: os.NewFile(uintptr(fd), name)}
		return nil
	}, name)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// claim is a held flock on an open claim file.
type claim struct {
	name string
	mu   sync.Mutex
	file *os.File // nil once released
}

// WriteAt writes data at offset off of the claim file in place (pwrite),
// never truncating it.
func (c *claim) WriteAt(data []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return 0, &fs.PathError{Op: "write", Path: c.name, Err: fs.ErrClosed}
	}
	return c.file.WriteAt(data, off)
}

// Sync makes the bytes written so far durable (fsync); Lock made the file's
// directory entry durable already.
func (c *claim) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return &fs.PathError{Op: "sync", Path: c.name, Err: fs.ErrClosed}
	}
	return c.file.Sync()
}

// Release unlocks and closes the claim file, leaving it in place. A second
// Release fails with an error matching fs.ErrClosed.
func (c *claim) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	file := c.file
	if file == nil {
		return &fs.PathError{Op: "release", Path: c.name, Err: fs.ErrClosed}
	}
	c.file = nil
	// Unlock explicitly: a child forked but not yet exec'd shares the open
	// file description, and closing our descriptor alone would leave it
	// holding the lock.
	rc, err := file.SyscallConn()
	if err == nil {
		if cerr := rc.Control(func(fd uintptr) {
			err = ignoringEINTR(func() error { return unix.Flock(int(fd), unix.LOCK_UN) })
		}); cerr != nil {
			err = cerr
		}
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return pathErr("release", c.name, err)
}
