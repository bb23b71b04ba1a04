package core

import (
	"errors"
	"io"
	"io/fs"
)

// FS is the filesystem a spool lives on. Every name is slash-separated and
// relative to the spool root ("." is the root itself) and must satisfy
// fs.ValidPath; an implementation never lets a name reach outside the root and
// never follows a symbolic link.
//
// Durability rule: the bytes of a file are durable once File.Sync has
// returned nil. The creation, rename or removal of a directory entry is
// durable once SyncDir of the parent directory has returned nil. Nothing else
// is promised to survive a power cut; everything that returned nil survives a
// crash of the calling process.
//
// Errors are *fs.PathError values wrapping fs.ErrNotExist, fs.ErrExist,
// syscall.ENOTEMPTY or ErrLocked where those apply, to be tested with
// errors.Is.
//
// Optional abilities are separate interfaces found by type assertion:
// DirWatcher (wake-ups on new entries), DirScanner and DirInfoScanner
// (streamed listings), WholeFileReader and WholeFileWriter (a file read or
// written in one call) and FSSyncer (one flush for the whole filesystem); a
// File may be a SizedFile.
type FS interface {
	// CreateExcl creates name for writing. It fails with fs.ErrExist when
	// name already exists (even as a dangling symlink), and with
	// fs.ErrNotExist when its parent directory does not exist.
	CreateExcl(name string) (File, error)

	// Open opens the regular file name for reading. A symbolic link is not
	// followed: opening one fails.
	Open(name string) (File, error)

	// Rename moves oldname to newname atomically and never replaces an
	// existing newname: in that case it fails with fs.ErrExist and leaves
	// both names as they were. It fails with fs.ErrNotExist when oldname or
	// the parent of newname does not exist.
	Rename(oldname, newname string) error

	// Remove deletes a file or an empty directory. It fails with
	// fs.ErrNotExist when name does not exist and with syscall.ENOTEMPTY
	// when name is a directory that has entries.
	Remove(name string) error

	// Mkdir creates the directory name. It fails with fs.ErrExist when name
	// exists and fs.ErrNotExist when its parent does not.
	Mkdir(name string) error

	// ReadDir lists the entries of directory name sorted by name. Entry
	// types are reported without following symbolic links.
	ReadDir(name string) ([]fs.DirEntry, error)

	// Stat describes name without following a symbolic link (like lstat).
	Stat(name string) (fs.FileInfo, error)

	// SyncDir makes durable every creation, rename and removal of entries
	// of the directory name that has happened so far.
	SyncDir(name string) error

	// Lock takes a non-blocking exclusive lock on the claim file name,
	// creating the file when it is missing. When another holder has it,
	// Lock fails at once with an error wrapping ErrLocked. The lock is
	// released by Claim.Release or when the holding process dies; the claim
	// file itself is never removed.
	Lock(name string) (Claim, error)
}

// File is an open file of an FS. A file from CreateExcl is write-only, one
// from Open is read-only.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	// Sync makes the bytes written so far durable.
	Sync() error
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
}

// Claim is a held lock on a claim file. The holder record in it is kept by
// core (see the claim record format in docs/protocol.md): a backend only
// writes bytes in place and makes them durable.
type Claim interface {
	// WriteAt writes data at offset off of the claim file, in place: it
	// never truncates the file and leaves the bytes outside
	// [off, off+len(data)) as they were. A crash or power cut during the
	// call may leave any mix of old and new bytes in that range.
	WriteAt(data []byte, off int64) (int, error)
	// Sync makes the bytes written so far durable, and the claim file's
	// directory entry with them: both survive a power cut once Sync
	// returns nil.
	Sync() error
	// Release gives up the lock. The file stays in place.
	Release() error
}

// DirWatcher is implemented by an FS that can wake a waiting consumer when an
// entry appears in a directory (inotify on Linux).
type DirWatcher interface {
	// WatchDir reports on the returned DirWatch's channel, at least once and
	// possibly coalesced, after an entry is created in or renamed into the
	// directory name.
	WatchDir(name string) (DirWatch, error)
}

// DirWatch is a live watch on one directory.
type DirWatch interface {
	// C receives a value after the directory changed.
	C() <-chan struct{}
	// Close stops the watch and releases its resources.
	Close() error
}

// DirScanner is implemented by an FS that can stream a directory's entries
// without building the whole sorted listing, so that a consumer of a large
// flat backlog holds only the page it delivers next.
type DirScanner interface {
	// ScanDir calls fn for every entry of the directory name, in no
	// particular order, with the entry's type as ReadDir reports it (a
	// symbolic link is reported as one). fn must not call the FS.
	ScanDir(name string, fn func(name string, typ fs.FileMode)) error
}

// DirInfoScanner is implemented by an FS that can stream a directory's
// entries with what Stat reports of each, so that a walk that needs sizes
// (a spool's statistics) does not hold the listing either.
type DirInfoScanner interface {
	// ScanDirInfo calls fn for every entry of the directory name, in no
	// particular order, with what Stat would report of it (a symbolic
	// link is described, not followed). An entry removed while the
	// directory is read may be left out. fn must not call the FS.
	ScanDirInfo(name string, fn func(fs.FileInfo)) error
}

// SizedFile is implemented by a File from FS.Open that learned its size as
// it was opened (backend-os does, from the fstat that checks it is a
// regular file), so that reading a whole file costs neither a Stat nor a
// read that only finds the end.
type SizedFile interface {
	// OpenSize returns the file's size when it was opened, or -1 when it
	// is not known.
	OpenSize() int64
}

// WholeFileReader is implemented by an FS that reads a whole regular file
// in one call, with no File in between: open, size, read, close. The
// consumer reads payloads and sidecars through it when it can, which costs
// less than Open, Read and Close in turn (no File to allocate, and less
// code run between the system calls).
type WholeFileReader interface {
	// ReadWholeFile reads the regular file name, which had size bytes when
	// it was opened, into buf(size) when that has room for size bytes, else
	// into a new buffer, and returns the bytes read: size of them, or fewer
	// when the file shrank while it was read. Bytes written after the open
	// beyond size are not read. A symbolic link is not followed.
	ReadWholeFile(name string, buf func(size int) []byte) ([]byte, error)

	// ReadWholeFiles reads the files of reads in order, each as
	// ReadWholeFile reads one, and sets each one's Data and Err. It stops
	// after the first that fails, unless that one is Optional and missing
	// (an error matching fs.ErrNotExist), and returns how many it tried.
	// One call for many files keeps the code that runs between their
	// system calls short: the consumer reads ahead through it.
	//
	// The files may be read in any order and on several goroutines at
	// once, so no two reads may share an Into buffer, and Lend must be
	// safe to call concurrently; reads that share a Probe are read one
	// after the other. Reads past the one that stops the call may have
	// been made meanwhile: they are undone (Data nil, Kept closed).
	ReadWholeFiles(reads []WholeRead) int
}

// WholeRead is one file of WholeFileReader.ReadWholeFiles.
type WholeRead struct {
	Name string
	// Into is used when it has room for the file; else Lend(size), when
	// Lend is set and returns room; else new memory. Into is scratch: as
	// the file's probe (see Probe) it may be written even when the file
	// then does not fit.
	Into []byte
	Lend func(size int) []byte
	// Probe, when set, is scratch memory the file is read into first,
	// before its size is known; a file that ends inside it (a read that
	// comes back short, so at its end) is then copied to Buffer(n). Into
	// serves as its own probe when it has spare room. A file read that way
	// costs no fstat: on the small files of a drain, one system call in
	// four. A file that fills the probe, reads as empty or fails is sized
	// and checked the usual way. An FS may ignore Probe.
	Probe []byte
	// LendFirst, when positive and Into is empty, asks Lend(LendFirst) for
	// Into as soon as the file is open, before its size is known: a file
	// that ends inside it is read in place, with no fstat, and one that
	// fills it is sized and read into Lend(size). A consumer sets it to one
	// byte more than the last payload. An FS may ignore it.
	LendFirst int
	Optional  bool // a missing file does not stop the reads
	// LeaveAbove, when positive, leaves a file larger than it unread: Data
	// is nil and Left holds its size. A file that ends inside the probe is
	// read before its size is known, and left all the same when larger.
	// An FS must honour it.
	LeaveAbove int64
	// Keep, with LeaveAbove and without a probe (Into and Probe empty),
	// keeps a file left unread open: Kept is then that file, at its start,
	// and the caller must close it. Reading it later costs no second open
	// and no lookup of its name. An FS may ignore Keep and leave Kept nil.
	Keep bool

	Data []byte // the bytes read, sharing Into's or Lend's memory when used
	Left int64  // the size of a file left unread (LeaveAbove); 0 when read
	Kept File   // the file left unread, open (Keep); nil otherwise
	Err  error
}

// Buffer returns the memory to read a file of size bytes into: Into when
// it has room, else Lend(size) when Lend is set, else nil (new memory).
func (r *WholeRead) Buffer(size int) []byte {
	if cap(r.Into) >= size || r.Lend == nil {
		return r.Into
	}
	return r.Lend(size)
}

// Stops reports whether ReadWholeFiles stops after this read: it failed,
// and not merely because an Optional file is missing.
func (r *WholeRead) Stops() bool {
	return r.Err != nil && !(r.Optional && errors.Is(r.Err, fs.ErrNotExist))
}

// WholeFileWriter is implemented by an FS that creates, writes and closes a
// file in one call, with no File in between. The producer writes payloads
// given as bytes, and sidecars, through it when it can.
type WholeFileWriter interface {
	// WriteNewFile creates name exclusively, as CreateExcl does, writes
	// data, syncs it when sync is set (as File.Sync) and closes it. made
	// reports whether the file was created, even when a later step failed
	// and left it partly written. Errors are *fs.PathError values whose Op
	// says which step failed: "create", "write", "sync" or "close".
	WriteNewFile(name string, data []byte, sync bool) (made bool, err error)
}

// FSSyncer is implemented by an FS that can flush every written file at
// once (syncfs on Linux). After SyncAll returns nil, the bytes of every file
// written before the call are durable, as if each had been synced. Directory
// entries are not covered by this promise: they still need SyncDir.
type FSSyncer interface {
	SyncAll() error
}
