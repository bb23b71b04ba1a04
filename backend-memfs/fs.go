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
// How the contents are stored depends on the constructor. An FS from New (or
// Crash) owns a private afero.MemMapFs and keeps each file's bytes there
// under a key of its own, its inode number, that never changes: a rename or
// a directory exists only in the FS's tree and costs the same however many
// files there are. An FS from NewOn mirrors its tree into the base by name,
// so that the base stays a readable copy of the spool (that is what a caller
// passing a base expects: a directory on disk to inspect, or files put there
// beforehand); each operation makes a fixed number of calls into the base,
// and costs whatever those cost there (afero.MemMapFs.Rename, for one, scans
// every file of the MemMapFs, so use New rather than NewOn(afero.NewMemMapFs())
// for large spools).
type FS struct {
	mu      sync.Mutex
	base    afero.Fs
	byIno   bool   // the base is private and holds the bytes under inode keys
	lastIno uint64 // byIno: the key of the newest file
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
	kindOther // a symbolic link or special file found in the base by NewOn
)

// node is one file or directory (an inode): it keeps its identity across
// renames, which is what the crash model tracks.
type node struct {
	kind nodeKind
	mode fs.FileMode // type bits, for kindOther
	ino  uint64      // a file of a byIno FS: the key of its bytes in the base
	born time.Time   // directories: the modification time Stat reports (byIno)

	// Current location; parent is nil for the root and for an unlinked node.
	parent *node
	name   string

	// Files.
	syncedLen int64      // the first syncedLen bytes of the content are durable
	writing   bool       // its handle from CreateExcl is open
	orphan    afero.File // read handle on the content once unlinked
	claim     *claim     // the holder of the in-process lock, if any
	placed    *placed    // written in place through a Claim: what is durable

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

// newFile returns a new file node, not linked yet, with its key when f
// stores bytes by inode.
func (f *FS) newFile() *node {
	n := newNode(kindFile)
	if f.byIno {
		f.lastIno++
		n.ino = f.lastIno
	}
	return n
}

// at returns the base name of the bytes of the file n, whose current name is
// name: its inode key, or the name itself under "/" of the base.
func (f *FS) at(n *node, name string) string {
	if f.byIno {
		return "/" + strconv.FormatUint(n.ino, 10)
	}
	return basePath(name)
}

// where is at for a node whose name the caller does not know (it may have
// none: an unlinked file of a byIno FS still has its key).
func (f *FS) where(n *node) string {
	if f.byIno {
		return f.at(n, "")
	}
	return basePath(n.rel())
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
	return newByIno(afero.NewMemMapFs())
}

// newByIno returns an empty FS that keeps file bytes in base, which nobody
// else sees, under inode keys; directories exist only in the FS's tree.
func newByIno(base afero.Fs) *FS {
	return &FS{base: base, byIno: true, root: newNode(kindDir), files: map[*node]struct{}{}, unsynced: map[*node]struct{}{}}
}

// NewOn returns an FS over base: the spool root is "/" of base (wrap a disk
// in afero.NewBasePathFs to root it elsewhere). Whatever base already holds is
// taken as durable. base must not be changed by anyone else while the FS is in
// use. If base cannot be listed, every method of the FS fails with that error
// wrapped in an *fs.PathError.
//
// The base holds the spool's files and directories under their current names
// (an unlinked file is kept open until no crash can bring it back), so it can
// be inspected, or reopened with NewOn, at any time. The price is that each
// Rename is a Rename of the base: cheap on a disk, but linear in the number of
// files on an afero.MemMapFs, for which New is the fast choice.
func NewOn(base afero.Fs) *FS {
	f := &FS{base: base, root: newNode(kindDir), files: map[*node]struct{}{}, unsynced: map[*node]struct{}{}}
	if err := f.scan(f.root, "/"); err != nil {
		f.initErr = err
	}
	return f
}

// scan loads the existing tree of the base into the model, all of it durable.
func (f *FS) scan(d *node, dir string) error {
	infos, err := afero.ReadDir(f.base, dir)
	if err != nil {
		return err
	}
	for _, fi := range infos {
		name := fi.Name()
		if !fs.ValidPath(name) || strings.Contains(name, "/") {
			continue
		}
		var c *node
		switch mode := fi.Mode(); {
		case mode.IsDir():
			c = newNode(kindDir)
			if err := f.scan(c, path.Join(dir, name)); err != nil {
				return err
			}
		case mode.IsRegular():
			c = newNode(kindFile)
			c.syncedLen = fi.Size()
			f.files[c] = struct{}{}
		default:
			c = newNode(kindOther)
			c.mode = mode.Type()
		}
		c.parent, c.name = d, name
		d.children[name] = c
		d.durable[name] = c
		c.durRefs = 1
	}
	return nil
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

func basePath(rel string) string {
	return path.Join("/", rel)
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
		switch n.kind {
		case kindFile:
			return nil, pathErr(op, name, syscall.ENOTDIR)
		case kindOther:
			return nil, pathErr(op, name, syscall.ELOOP)
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
	switch d.kind {
	case kindFile:
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	case kindOther:
		return nil, "", pathErr(op, name, syscall.ELOOP)
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
	h, err := f.base.OpenFile(f.at(n, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
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
// when name does not exist, syscall.EISDIR for a directory and syscall.ELOOP
// for a symbolic link (never followed).
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
	switch n.kind {
	case kindDir:
		return nil, pathErr(op, name, syscall.EISDIR)
	case kindOther:
		return nil, pathErr(op, name, syscall.ELOOP)
	}
	h, err := f.base.Open(f.at(n, name))
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
	if !f.byIno {
		if err := f.base.Rename(basePath(oldname), basePath(newname)); err != nil {
			return baseErr(op, oldname, err)
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
	var orphan afero.File
	if !f.byIno {
		// The base mirrors the tree. Keep the content reachable: a crash
		// may undo this removal. (By inode, the bytes stay under their
		// key until the node is forgotten.)
		if n.kind == kindFile {
			if orphan, err = f.base.Open(basePath(name)); err != nil {
				return baseErr(op, name, err)
			}
		}
		if err := f.base.Remove(basePath(name)); err != nil {
			if orphan != nil {
				_ = orphan.Close()
			}
			return baseErr(op, name, err)
		}
	}
	from := slot{n.parent, n.name}
	unlink(n)
	n.parent = nil
	n.orphan = orphan
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
	if !f.byIno {
		if err := f.base.Mkdir(basePath(name), 0o755); err != nil {
			return baseErr(op, name, err)
		}
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
		switch c.kind {
		case kindDir:
			typ = fs.ModeDir
		case kindOther:
			typ = c.mode
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
	if f.byIno && n.kind == kindDir {
		return &dirInfo{name: path.Base(name), mod: n.born}, nil
	}
	fi, err := f.lstat(f.at(n, name))
	if err != nil {
		return nil, baseErr(op, name, err)
	}
	return &fileInfo{FileInfo: fi, name: path.Base(name)}, nil
}

func (f *FS) lstat(p string) (fs.FileInfo, error) {
	if l, ok := f.base.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(p)
		return fi, err
	}
	return f.base.Stat(p)
}

// fileInfo reports the name as the caller spelled its last element.
type fileInfo struct {
	fs.FileInfo
	name string
}

func (fi *fileInfo) Name() string { return fi.name }

// dirInfo describes a directory of a byIno FS, which has none in the base.
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
