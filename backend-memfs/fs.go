package memfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/mqb-project/mqb/core"
)

var (
	_ core.FS         = (*FS)(nil)
	_ core.DirWatcher = (*FS)(nil)
	_ core.FSSyncer   = (*FS)(nil)
)

// FS is an in-memory spool filesystem with a crash model. It implements
// core.FS, core.DirWatcher and core.FSSyncer, and all its methods are safe for
// concurrent use.
//
// The namespace is kept by FS itself (one FS-wide mutex), so the contract
// holds even where the afero.Fs that holds the file contents is looser:
// CreateExcl is exclusive, Rename never replaces, Remove refuses non-empty
// directories, ReadDir is sorted.
//
// The file contents live in a private afero.MemMapFs, each file's bytes
// under a key of its own, its inode number, that never changes: a rename or
// a directory exists only in the FS's tree and costs the same however many
// files there are.
type FS struct {
	mu      sync.Mutex
	base    afero.Fs
	lastIno uint64 // the key of the newest file
	root    *node
	initErr error

	// files holds every file node whose bytes may still matter: the linked
	// ones and the unlinked ones a crash could bring back (see crash.go).
	files map[*node]struct{}
	// unsynced holds the nodes of files that may have bytes past their
	// synced length: those open for writing, and those closed with bytes
	// not synced yet. SyncAll visits only these, so its cost is that of
	// the files written since the last one, not of all files.
	unsynced     map[*node]struct{}
	unsyncedPeak int // see shrunk

	// log holds the directory operations that are not yet durable, in the
	// order they happened (entries with done set are dropped lazily).
	log   []*dirOp
	nDone int
	seq   uint64

	crashTrace func(p string, n *node, dup bool) // tests only: sees each entry Crash writes
}

type nodeKind uint8

const (
	kindFile nodeKind = iota
	kindDir
)

// node is one file or directory (an inode): it keeps its identity across
// renames, which is what the crash model tracks.
type node struct {
	kind nodeKind
	ino  uint64    // files: the key of the bytes in the base
	born time.Time // directories: the modification time Stat reports

	// Current location; parent is nil for the root and for an unlinked node.
	parent *node
	name   string

	// Files.
	syncedLen int64   // the first syncedLen bytes of the content are durable
	writing   bool    // its handle from CreateExcl is open
	claim     *claim  // the holder of the in-process lock, if any
	placed    *placed // written in place through a Claim: what is durable

	// Directories.
	children  map[string]*node
	childPeak int // see shrunk
	slotPeak  int
	durable   map[string]*node    // the entries a crash would leave
	slotOps   map[string][]*dirOp // pending ops naming an entry of this dir
	watchers  map[*watch]struct{} // live WatchDir watches

	// Crash bookkeeping (crash.go).
	pending []*dirOp // pending ops that move this node, oldest first
	durRefs int      // how many durable entries name this node
	dropped bool     // can no longer appear after a crash: forgotten
}

func newNode(kind nodeKind) *node {
	n := &node{kind: kind}
	if kind == kindDir {
		n.children = map[string]*node{}
		n.durable = map[string]*node{}
		n.slotOps = map[string][]*dirOp{}
		n.born = time.Now()
	}
	return n
}

// newFile returns a new file node, not linked yet, with its key.
func (f *FS) newFile() *node {
	n := newNode(kindFile)
	f.lastIno++
	n.ino = f.lastIno
	return n
}

// where returns the name in the base of the bytes of the file n: its key,
// which stays the same across renames and after n is unlinked.
func (f *FS) where(n *node) string {
	return "/" + strconv.FormatUint(n.ino, 10)
}

// rel returns the current name of n relative to the root ("." for the root).
func (n *node) rel() string {
	if n.parent == nil {
		return "."
	}
	var elems []string
	for m := n; m.parent != nil; m = m.parent {
		elems = append(elems, m.name)
	}
	slices.Reverse(elems)
	return strings.Join(elems, "/")
}

// New returns an empty FS. Its file contents live in a private
// afero.MemMapFs under keys that are inode numbers rather than names, so no
// operation's cost grows with the number of files (Crash and ReadDir aside:
// they copy the tree and list a directory; SyncAll visits the files written
// since the last SyncAll).
func New() *FS {
	return newWithBase(afero.NewMemMapFs())
}

// newWithBase returns an empty FS that keeps its file bytes in base, which
// nobody else may use (tests count the calls into it).
func newWithBase(base afero.Fs) *FS {
	return &FS{base: base, root: newNode(kindDir), files: map[*node]struct{}{}, unsynced: map[*node]struct{}{}}
}

// grew records that m may have reached a new peak size.
func grew[K comparable, V any](m map[K]V, peak *int) {
	*peak = max(*peak, len(m))
}

// shrunk returns m, or a fresh copy of it once it holds less than a quarter
// of its peak. A Go map never gives its space back, and ranging over one
// costs the most it ever held: a directory drained of 10,000 entries would
// list (and SyncDir, and SyncAll) as slowly as a full one. The copy costs
// len(m), paid for by the three times as many deletions since the peak.
func shrunk[K comparable, V any](m map[K]V, peak *int) map[K]V {
	if *peak < 64 || len(m) >= *peak/4 {
		return m
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	*peak = len(m)
	return c
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// baseErr rewraps an error of the base so that its Path is the relative name.
func baseErr(op, name string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return pathErr(op, name, err)
}

// check validates name; call it before taking the lock.
func (f *FS) check(op, name string) error {
	if !fs.ValidPath(name) {
		return pathErr(op, name, fs.ErrInvalid)
	}
	if f.initErr != nil {
		return baseErr(op, name, f.initErr)
	}
	return nil
}

// lookup finds the node called name. It never follows a symbolic link.
func (f *FS) lookup(op, name string) (*node, error) {
	n := f.root
	if name == "." {
		return n, nil
	}
	for elem := range strings.SplitSeq(name, "/") {
		if n.kind == kindFile {
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		c := n.children[elem]
		if c == nil {
			return nil, pathErr(op, name, fs.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parentOf finds the directory that holds name (not ".") and the last element.
func (f *FS) parentOf(op, name string) (*node, string, error) {
	dir, elem := path.Split(name)
	d, err := f.lookup(op, path.Clean(dir))
	if err != nil {
		return nil, "", pathErr(op, name, err.(*fs.PathError).Err)
	}
	if d.kind == kindFile {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return d, elem, nil
}

// link records a new entry elem -> n in dir d, already created in the base.
func (f *FS) link(d *node, elem string, n *node) {
	n.parent, n.name = d, elem
	d.children[elem] = n
	grew(d.children, &d.childPeak)
	if n.kind == kindFile {
		f.files[n] = struct{}{}
	}
	f.logOp(&dirOp{kind: opCreate, n: n, to: slot{d, elem}})
	f.notify(d)
}

// unlink takes n out of the entries of its parent.
func unlink(n *node) {
	d := n.parent
	delete(d.children, n.name)
	d.children = shrunk(d.children, &d.childPeak)
}

// CreateExcl creates name for writing. It fails with fs.ErrExist when name
// exists (whatever it is) and with fs.ErrNotExist when its parent directory
// does not. The new entry is durable after SyncDir of the parent, the bytes
// after File.Sync.
func (f *FS) CreateExcl(name string) (core.File, error) {
	const op = "create"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "." {
		return nil, pathErr(op, name, fs.ErrExist)
	}
	d, elem, err := f.parentOf(op, name)
	if err != nil {
		return nil, err
	}
	if d.children[elem] != nil {
		return nil, pathErr(op, name, fs.ErrExist)
	}
	n := f.newFile()
	h, err := f.base.OpenFile(f.where(n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, baseErr(op, name, err)
	}
	f.link(d, elem, n)
	n.writing = true
	f.unsynced[n] = struct{}{}
	grew(f.unsynced, &f.unsyncedPeak)
	return &file{fsys: f, n: n, name: name, h: h, writable: true}, nil
}

// Open opens the regular file name for reading. It fails with fs.ErrNotExist
// when name does not exist and syscall.EISDIR for a directory.
func (f *FS) Open(name string) (core.File, error) {
	const op = "open"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if n.kind == kindDir {
		return nil, pathErr(op, name, syscall.EISDIR)
	}
	h, err := f.base.Open(f.where(n))
	if err != nil {
		return nil, baseErr(op, name, err)
	}
	return &file{fsys: f, n: n, name: name, h: h}, nil
}

// Rename moves oldname (a file or a directory) to newname atomically. It
// never replaces: when newname exists it fails with fs.ErrExist and changes
// nothing. It fails with fs.ErrNotExist when oldname or the parent of newname
// is missing, syscall.EINVAL when a directory would move into itself, and
// syscall.EBUSY for the root. The move is durable after SyncDir of both
// parents; until then a crash leaves the entry at one of the two names, never
// both.
func (f *FS) Rename(oldname, newname string) error {
	const op = "rename"
	if err := f.check(op, oldname); err != nil {
		return err
	}
	if err := f.check(op, newname); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if oldname == "." {
		return pathErr(op, oldname, syscall.EBUSY)
	}
	n, err := f.lookup(op, oldname)
	if err != nil {
		return err
	}
	if newname == "." {
		return pathErr(op, newname, fs.ErrExist)
	}
	d, elem, err := f.parentOf(op, newname)
	if err != nil {
		return err
	}
	if d.children[elem] != nil {
		return pathErr(op, newname, fs.ErrExist)
	}
	for a := d; a != nil; a = a.parent {
		if a == n {
			return pathErr(op, newname, syscall.EINVAL)
		}
	}
	from := slot{n.parent, n.name}
	unlink(n)
	n.parent, n.name = d, elem
	d.children[elem] = n
	grew(d.children, &d.childPeak)
	o := &dirOp{kind: opRename, n: n, from: from, to: slot{d, elem}}
	if from.dir != d {
		// A move across directories must not be able to land in a
		// directory that a crash would lose: it depends on the ops that
		// put the target directory (and its ancestors) where they are.
		for a := d; a != nil; a = a.parent {
			o.anc = append(o.anc, a)
		}
	}
	f.logOp(o)
	f.notify(d)
	return nil
}

// Remove deletes a file or an empty directory. It fails with fs.ErrNotExist
// when name is missing, syscall.ENOTEMPTY for a directory with entries and
// syscall.EBUSY for the root. The removal is durable after SyncDir of the
// parent; until then a crash may bring the entry back with its synced bytes.
func (f *FS) Remove(name string) error {
	const op = "remove"
	if err := f.check(op, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "." {
		return pathErr(op, name, syscall.EBUSY)
	}
	n, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	if n.kind == kindDir && len(n.children) > 0 {
		return pathErr(op, name, syscall.ENOTEMPTY)
	}
	// The bytes stay under their key until the node is forgotten: a crash
	// may undo this removal.
	from := slot{n.parent, n.name}
	unlink(n)
	n.parent = nil
	f.logOp(&dirOp{kind: opRemove, n: n, from: from})
	f.maybeDrop(n)
	return nil
}

// Mkdir creates the directory name. It fails with fs.ErrExist when name
// exists and fs.ErrNotExist when its parent does not. The new directory is
// durable after SyncDir of its parent.
func (f *FS) Mkdir(name string) error {
	const op = "mkdir"
	if err := f.check(op, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "." {
		return pathErr(op, name, fs.ErrExist)
	}
	d, elem, err := f.parentOf(op, name)
	if err != nil {
		return err
	}
	if d.children[elem] != nil {
		return pathErr(op, name, fs.ErrExist)
	}
	f.link(d, elem, newNode(kindDir))
	return nil
}

// ReadDir lists the directory name sorted by entry name. Entry types are
// those of the entries themselves (a symbolic link is reported as one). It
// fails with fs.ErrNotExist when name is missing and syscall.ENOTDIR when it is
// not a directory.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	const op = "readdir"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if n.kind != kindDir {
		return nil, pathErr(op, name, syscall.ENOTDIR)
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for elem, c := range n.children {
		var typ fs.FileMode
		if c.kind == kindDir {
			typ = fs.ModeDir
		}
		out = append(out, &dirEntry{fsys: f, name: elem, full: path.Join(name, elem), typ: typ})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// Stat describes name without following a symbolic link. It fails with
// fs.ErrNotExist when name is missing.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	const op = "stat"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if n.kind == kindDir {
		return &dirInfo{name: path.Base(name), mod: n.born}, nil
	}
	fi, err := f.base.Stat(f.where(n))
	if err != nil {
		return nil, baseErr(op, name, err)
	}
	return &fileInfo{FileInfo: fi, name: path.Base(name)}, nil
}

// fileInfo reports the name as the caller spelled its last element.
type fileInfo struct {
	fs.FileInfo
	name string
}

func (fi *fileInfo) Name() string { return fi.name }

// dirInfo describes a directory, which has none in the base.
type dirInfo struct {
	name string
	mod  time.Time
}

func (di *dirInfo) Name() string       { return di.name }
func (di *dirInfo) Size() int64        { return 0 }
func (di *dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (di *dirInfo) ModTime() time.Time { return di.mod }
func (di *dirInfo) IsDir() bool        { return true }
func (di *dirInfo) Sys() any           { return nil }

type dirEntry struct {
	fsys *FS
	name string
	full string
	typ  fs.FileMode
}

func (e *dirEntry) Name() string               { return e.name }
func (e *dirEntry) IsDir() bool                { return e.typ.IsDir() }
func (e *dirEntry) Type() fs.FileMode          { return e.typ }
func (e *dirEntry) Info() (fs.FileInfo, error) { return e.fsys.Stat(e.full) }
func (e *dirEntry) String() string             { return fs.FormatDirEntry(e) }
