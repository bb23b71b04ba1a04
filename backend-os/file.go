//go:build linux || darwin || freebsd

package osfs

import (
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

// CreateExcl creates the file name, write-only, with Options.FileMode. It
// fails with an error matching fs.ErrExist when name exists, even as a
// dangling symbolic link, and fs.ErrNotExist when its parent directory does
// not exist. Close the File: nothing else releases its descriptor.
func (f *FS) CreateExcl(name string) (core.File, error) {
	var opened *file
	err := f.do("create", name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			fd, err := openat(dirfd, base, oCreateExcl, f.fileMode)
			if err != nil {
				return err
			}
			opened = newFile(fd, name)
			opened.flush = f.flush
			return nil
		})
	}, name)
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// WriteNewFile creates name as CreateExcl does, writes data, syncs it when
// sync is set, and closes it (core.WholeFileWriter), with no File in
// between. Errors are *fs.PathError values with the Op of the step that
// failed: create, write, sync or close.
func (f *FS) WriteNewFile(name string, data []byte, sync bool) (made bool, err error) {
	op := "create"
	err = f.do(op, name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			op = "create"
			fd, err := openat(dirfd, base, oCreateExcl, f.fileMode)
			if err != nil {
				return err
			}
			made = true
			op, err = writeAllSync(fd, data, sync, f.flush)
			if cerr := unix.Close(fd); err == nil && cerr != nil {
				op, err = "close", cerr
			}
			return err
		})
	}, name)
	if pe, ok := err.(*fs.PathError); ok {
		pe.Op = op
	}
	return made, err
}

// oCreateExcl are the flags of a file created for writing: it must not
// exist, even as a dangling link.
const oCreateExcl = unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | oLargefile

// writeAllSync writes all of data to fd and, when sync is set, syncs it. It
// returns the step that failed with its error.
func writeAllSync(fd int, data []byte, sync bool, flush Flush) (string, error) {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return "write", err
		}
		data = data[n:]
	}
	if sync {
		if err := syncFD(fd, flush); err != nil {
			return "sync", err
		}
	}
	return "", nil
}

// Open opens the regular file name read-only. A symbolic link is never
// followed (error matching ErrSymlink), and anything that is not a regular
// file is refused with ErrNotRegular; opening a FIFO does not block. Close
// the File: nothing else releases its descriptor. The File implements
// core.SizedFile with the size the file had when it was opened.
func (f *FS) Open(name string) (core.File, error) {
	var opened *file
	err := f.do("open", name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			fd, err := openat(dirfd, base, oReadOnly, 0)
			if err != nil {
				return err
			}
			size, err := regularSize(fd)
			if err != nil {
				unix.Close(fd)
				return err
			}
			// The descriptor stays O_NONBLOCK: Linux ignores the flag for
			// regular files, so clearing it would only cost a system call
			// (file.Read clears it if a filesystem ever honours it).
			opened = newFile(fd, name)
			opened.flush, opened.size = f.flush, size
			return nil
		})
	}, name)
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// ReadWholeFile reads the regular file name whole (core.WholeFileReader):
// open, the fstat that checks it is a regular file and gives its size, reads
// up to that size, close. No File is made, so a small file costs no
// allocation beyond the buffer, and no more system calls than Open, Read and
// Close would make.
func (f *FS) ReadWholeFile(name string, buf func(size int) []byte) ([]byte, error) {
	var out []byte
	err := f.do("read", name, func(rootfd int) error {
		var err error
		out, err = f.readWholeAt(rootfd, name, &core.WholeRead{Lend: buf})
		return err
	}, name)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadWholeFiles reads files whole, as ReadWholeFile does, under one hold
// of the root (core.WholeFileReader). Once it has read a large file, it
// reads the rest on several threads (readers, fansOut): Lend may then be
// called from more than one goroutine at once.
func (f *FS) ReadWholeFiles(reads []core.WholeRead) int {
	f.rootMu.RLock()
	defer f.rootMu.RUnlock()
	n := readers(reads)
	for i := range reads {
		r := &reads[i]
		f.readOneOf(r)
		if r.Stops() {
			return i + 1
		}
		if n > 1 && fansOut(r, len(reads)-i-1) {
			return i + 1 + f.readFannedOut(reads[i+1:], n)
		}
	}
	return len(reads)
}

// readOneOf is one read of ReadWholeFiles. The caller holds rootMu.
func (f *FS) readOneOf(r *core.WholeRead) {
	switch {
	case f.rootfd < 0:
		r.Data, r.Err = nil, &fs.PathError{Op: "read", Path: r.Name, Err: fs.ErrClosed}
	case !fs.ValidPath(r.Name):
		r.Data, r.Err = nil, &fs.PathError{Op: "read", Path: r.Name, Err: fs.ErrInvalid}
	default:
		r.Data, r.Err = f.readWholeAt(f.rootfd, r.Name, r)
		r.Err = pathErr("read", r.Name, r.Err)
	}
}

// readWholeAt opens name below rootfd and reads it whole into r's buffer
// (readWhole).
func (f *FS) readWholeAt(rootfd int, name string, r *core.WholeRead) (out []byte, err error) {
	err = f.inParent(rootfd, name, func(dirfd int, base string) error {
		fd, err := openat(dirfd, base, oReadOnly, 0)
		if err != nil {
			return err
		}
		out, err = readWhole(fd, r)
		if err == nil && r.Left > 0 && r.Keep && cap(r.Into) == 0 && cap(r.Probe) == 0 {
			// Left unread and not probed, so still at its start: kept open
			// for the caller (Keep).
			kept := newFile(fd, name)
			kept.flush, kept.size = f.flush, r.Left
			r.Kept = kept
			return nil
		}
		// Not retried on EINTR: Linux releases the descriptor even then.
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
		return err
	})
	return out, err
}

// oReadOnly are the flags of a file opened for reading: never through a
// link, and O_NONBLOCK so that a FIFO planted under a chunk's name cannot
// block the open (regularSize then refuses it; see probeRead).
const oReadOnly = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | oLargefile

// readWhole reads the file open on fd whole. One that ends inside r's probe
// (probeRead; Into is lent first when r.LendFirst asks) needs no fstat;
// any other is checked to be a regular file and read up to the size fstat
// gives, into r.Buffer(size), or new memory when that has no room. A file
// larger than r.LeaveAbove (when set) is not read on, and r.Left says its
// size.
func readWhole(fd int, r *core.WholeRead) ([]byte, error) {
	r.Left = 0
	if r.LendFirst > 0 && cap(r.Into) == 0 && r.Lend != nil {
		r.Into = r.Lend(r.LendFirst)[:0]
	}
	head, short := probeRead(fd, r)
	if short {
		if leave(r, int64(len(head))) {
			return nil, nil
		}
		return fromProbe(r, head), nil
	}
	size, err := regularSize(fd)
	if err != nil || leave(r, size) {
		return nil, err
	}
	b := r.Buffer(int(size))
	if cap(b) < int(size) {
		b = make([]byte, size)
	}
	b = b[:size]
	n := copy(b, head) // what the probe read already, when it filled
	for n < len(b) {
		k, err := unix.Read(fd, b[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			// O_NONBLOCK honoured for a regular file: block like any read.
			if err := clearNonblock(fd); err != nil {
				return nil, err
			}
			continue
		case err != nil:
			return nil, err
		case k == 0:
			return b[:n], nil // it shrank since the fstat
		}
		n += k
	}
	return b, nil
}

// leave reports whether a file of size bytes is left unread by r's
// LeaveAbove, and notes its size in r.Left when it is.
func leave(r *core.WholeRead, size int64) bool {
	if r.LeaveAbove <= 0 || size <= r.LeaveAbove {
		return false
	}
	r.Left = size
	return true
}

// probeRead reads the start of the file open on fd into r's probe: Into
// when it has room, else Probe. short reports that the file ended inside
// it: a read of a regular file comes back short only at the file's end
// (on Linux, also when a fatal signal is pending, and then the process
// delivers nothing). A file that is not regular but reads like a short one,
// a FIFO that a writer holds open with bytes waiting, is read as one: only
// someone who may write chunks into the spool's directories can put it
// there. An empty read, a full one or an error leave the file to the fstat,
// which checks its type and size.
func probeRead(fd int, r *core.WholeRead) (head []byte, short bool) {
	p := r.Into
	if cap(p) == 0 {
		p = r.Probe
	}
	if cap(p) == 0 {
		return nil, false
	}
	p = p[:cap(p)]
	for {
		k, err := unix.Read(fd, p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false // nothing read: the fstat says why
		}
		return p[:k], k > 0 && k < len(p)
	}
}

// fromProbe returns the file probeRead found whole in r's probe: in place
// when the probe was Into, else copied to r.Buffer(n), or new memory.
func fromProbe(r *core.WholeRead, head []byte) []byte {
	if cap(r.Into) > 0 {
		return head
	}
	b := r.Buffer(len(head))
	if cap(b) < len(head) {
		b = make([]byte, len(head))
	}
	return b[:copy(b[:len(head)], head)]
}

// regularSize checks that fd, opened with O_NONBLOCK so that a FIFO could
// not block the open, is a regular file, and returns its size.
func regularSize(fd int) (int64, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, ErrNotRegular
	}
	return st.Size, nil
}

// clearNonblock makes fd, opened with O_NONBLOCK, blocking. Of the flags
// F_SETFL can change, the callers set no other, hence no F_GETFL.
func clearNonblock(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0)
	return err
}

// file is the core.File of CreateExcl and Open: a bare descriptor. Unlike an
// *os.File it needs no system calls beyond the open (no flag probing, no
// poller registration) and no finalizer, so nothing closes the descriptor
// of a file that is never closed. Errors are *fs.PathError values carrying
// the name given to the FS. It is safe for concurrent use; Close waits for
// the calls in progress, so a descriptor is never used after it is closed
// (and perhaps reused).
type file struct {
	name  string
	flush Flush        // how Sync reaches the disk
	mu    sync.RWMutex // held shared by I/O calls, exclusively by Close
	fd    int          // -1 once closed
	size  int64        // from Open: the size when opened; -1 otherwise
}

func newFile(fd int, name string) *file { return &file{name: name, fd: fd, size: -1} }

// OpenSize returns the size the file had when Open opened it, or -1 for a
// file from CreateExcl (core.SizedFile).
func (f *file) OpenSize() int64 { return f.size }

// Read reads up to len(p) bytes; at the end of the file it returns 0, io.EOF.
func (f *file) Read(p []byte) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return 0, f.closedErr("read")
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			// Open left O_NONBLOCK set, and this filesystem honours it
			// for a regular file: block like any file read.
			if err := clearNonblock(f.fd); err != nil {
				return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
			}
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p, or returns how much it wrote and why it stopped.
func (f *file) Write(p []byte) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return 0, f.closedErr("write")
	}
	done := 0
	for done < len(p) {
		n, err := unix.Write(f.fd, p[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, &fs.PathError{Op: "write", Path: f.name, Err: err}
		}
		if n == 0 {
			return done, &fs.PathError{Op: "write", Path: f.name, Err: io.ErrShortWrite}
		}
		done += n
	}
	return done, nil
}

// Sync makes the bytes written so far durable (fsync; F_FULLFSYNC on macOS,
// see Flush).
func (f *file) Sync() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return f.closedErr("sync")
	}
	return pathErr("sync", f.name, syncFD(f.fd, f.flush))
}

// Stat describes the open file, as os.File.Stat does: Name is the last
// element of the name and Sys returns a *syscall.Stat_t.
func (f *file) Stat() (fs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return nil, f.closedErr("stat")
	}
	fi := &fileInfo{name: path.Base(f.name)}
	if err := ignoringEINTR(func() error { return syscall.Fstat(f.fd, &fi.sys) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return fi, nil
}

// Close closes the descriptor. A second Close, and any call after it, fails
// with an error matching fs.ErrClosed.
func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return f.closedErr("close")
	}
	fd := f.fd
	f.fd = -1
	// Not retried on EINTR: Linux releases the descriptor even then.
	return pathErr("close", f.name, unix.Close(fd))
}

func (f *file) closedErr(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
}

// fileInfo is the fs.FileInfo of file.Stat and FS.Stat.
type fileInfo struct {
	name string
	sys  syscall.Stat_t
}

func (fi *fileInfo) Name() string { return fi.name }
func (fi *fileInfo) Size() int64  { return fi.sys.Size }
func (fi *fileInfo) IsDir() bool  { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any     { return &fi.sys }

// Mode converts st_mode as os.Stat does.
func (fi *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.sys.Mode&0o777) | modeType(uint32(fi.sys.Mode)&syscall.S_IFMT)
	if fi.sys.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.sys.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.sys.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// SameFile reports whether a and b, from Stat of this backend or of an
// os function, describe the same file: the same device and inode.
func SameFile(a, b fs.FileInfo) bool {
	x, ok1 := a.Sys().(*syscall.Stat_t)
	y, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && x.Dev == y.Dev && x.Ino == y.Ino
}
