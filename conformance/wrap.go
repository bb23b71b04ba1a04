package conformance

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/mqb-project/mqb/core"
)

// OpKind names a kind of filesystem operation, for FaultFS.
type OpKind int

// The kinds of operations a FaultFS counts and can fail.
const (
	OpCreate  OpKind = iota // FS.CreateExcl
	OpOpen                  // FS.Open
	OpRead                  // File.Read
	OpWrite                 // File.Write and Claim.WriteAt
	OpSync                  // File.Sync, Claim.Sync and FSSyncer.SyncAll
	OpClose                 // File.Close
	OpRename                // FS.Rename
	OpRemove                // FS.Remove
	OpMkdir                 // FS.Mkdir
	OpReadDir               // FS.ReadDir
	OpStat                  // FS.Stat and File.Stat
	OpSyncDir               // FS.SyncDir
	OpLock                  // FS.Lock
	OpRelease               // Claim.Release
	OpWatch                 // DirWatcher.WatchDir
	numOpKinds
)

var opNames = [numOpKinds]string{"create", "open", "read", "write", "sync", "close", "rename", "remove",
	"mkdir", "readdir", "stat", "syncdir", "lock", "release", "watch"}

// String returns the short name of k (create, syncdir, ...), as used in
// errors and logs.
func (k OpKind) String() string {
	if k >= 0 && k < numOpKinds {
		return opNames[k]
	}
	return "op?"
}

// Op is one operation seen by a wrapping FS.
type Op struct {
	Kind OpKind
	Name string // the name operated on ("." for SyncAll)
	To   string // the new name, for OpRename
}

// hookFS wraps an FS and calls before ahead of every operation; a non-nil
// error from before fails the operation with that error instead of running
// it (a File.Write first writes half of its bytes, like a disk filling up).
type hookFS struct {
	inner  core.FS
	before func(Op) error
}

// wrapFS returns inner wrapped by before, with exactly the optional
// interfaces (DirWatcher, FSSyncer, and WholeFileReader with
// WholeFileWriter) that inner has.
func wrapFS(inner core.FS, before func(Op) error) core.FS {
	h := &hookFS{inner: inner, before: before}
	_, w := inner.(core.DirWatcher)
	_, s := inner.(core.FSSyncer)
	_, x := inner.(core.WholeFileWriter)
	if _, r := inner.(core.WholeFileReader); r != x {
		panic("conformance: an FS with only one of WholeFileReader and WholeFileWriter")
	}
	type W = watchOf
	type S = syncAllOf
	type X = wholeOf
	switch {
	case w && s && x:
		return struct {
			*hookFS
			W
			S
			X
		}{h, W{h}, S{h}, X{h}}
	case w && s:
		return struct {
			*hookFS
			W
			S
		}{h, W{h}, S{h}}
	case w && x:
		return struct {
			*hookFS
			W
			X
		}{h, W{h}, X{h}}
	case s && x:
		return struct {
			*hookFS
			S
			X
		}{h, S{h}, X{h}}
	case w:
		return struct {
			*hookFS
			W
		}{h, W{h}}
	case s:
		return struct {
			*hookFS
			S
		}{h, S{h}}
	case x:
		return struct {
			*hookFS
			X
		}{h, X{h}}
	}
	return h
}

// wholeOf gives a wrapped FS the whole-file calls of its inner FS. A write
// is made of the wrapper's own CreateExcl, Write, Sync and Close, so that
// each step is seen, and can fail, on its own; a read is seen as an open
// and a read, then done by the inner FS.
type wholeOf struct{ h *hookFS }

func (x wholeOf) WriteNewFile(name string, data []byte, sync bool) (made bool, err error) {
	f, err := x.h.CreateExcl(name)
	if err != nil {
		return false, err
	}
	op := "write"
	_, err = f.Write(data)
	if err == nil && sync {
		op, err = "sync", f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err != nil {
		return true, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return true, nil
}

func (x wholeOf) ReadWholeFile(name string, buf func(int) []byte) ([]byte, error) {
	if err := x.h.before(Op{Kind: OpOpen, Name: name}); err != nil {
		return nil, err
	}
	if err := x.h.before(Op{Kind: OpRead, Name: name}); err != nil {
		return nil, err
	}
	return x.h.inner.(core.WholeFileReader).ReadWholeFile(name, buf)
}

// ReadWholeFiles reads each file as ReadWholeFile does, each seen on its
// own, and stops as the interface says. The inner FS reads each as one
// WholeRead, so that its probe and LeaveAbove apply.
func (x wholeOf) ReadWholeFiles(reads []core.WholeRead) int {
	for i := range reads {
		r := &reads[i]
		if err := x.h.before(Op{Kind: OpOpen, Name: r.Name}); err != nil {
			r.Data, r.Err = nil, err
		} else if err := x.h.before(Op{Kind: OpRead, Name: r.Name}); err != nil {
			r.Data, r.Err = nil, err
		} else {
			x.h.inner.(core.WholeFileReader).ReadWholeFiles(reads[i : i+1])
			if r.Kept != nil {
				r.Kept = &hookFile{h: x.h, f: r.Kept, name: r.Name}
			}
		}
		if r.Stops() {
			return i + 1
		}
	}
	return len(reads)
}

type watchOf struct{ h *hookFS }

func (w watchOf) WatchDir(name string) (core.DirWatch, error) {
	if err := w.h.before(Op{Kind: OpWatch, Name: name}); err != nil {
		return nil, err
	}
	return w.h.inner.(core.DirWatcher).WatchDir(name)
}

type syncAllOf struct{ h *hookFS }

func (s syncAllOf) SyncAll() error {
	if err := s.h.before(Op{Kind: OpSync, Name: "."}); err != nil {
		return err
	}
	return s.h.inner.(core.FSSyncer).SyncAll()
}

func (h *hookFS) CreateExcl(name string) (core.File, error) {
	if err := h.before(Op{Kind: OpCreate, Name: name}); err != nil {
		return nil, err
	}
	f, err := h.inner.CreateExcl(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{h: h, f: f, name: name}, nil
}

func (h *hookFS) Open(name string) (core.File, error) {
	if err := h.before(Op{Kind: OpOpen, Name: name}); err != nil {
		return nil, err
	}
	f, err := h.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{h: h, f: f, name: name}, nil
}

func (h *hookFS) Rename(oldname, newname string) error {
	if err := h.before(Op{Kind: OpRename, Name: oldname, To: newname}); err != nil {
		return err
	}
	return h.inner.Rename(oldname, newname)
}

func (h *hookFS) Remove(name string) error {
	if err := h.before(Op{Kind: OpRemove, Name: name}); err != nil {
		return err
	}
	return h.inner.Remove(name)
}

func (h *hookFS) Mkdir(name string) error {
	if err := h.before(Op{Kind: OpMkdir, Name: name}); err != nil {
		return err
	}
	return h.inner.Mkdir(name)
}

func (h *hookFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := h.before(Op{Kind: OpReadDir, Name: name}); err != nil {
		return nil, err
	}
	return h.inner.ReadDir(name)
}

func (h *hookFS) Stat(name string) (fs.FileInfo, error) {
	if err := h.before(Op{Kind: OpStat, Name: name}); err != nil {
		return nil, err
	}
	return h.inner.Stat(name)
}

func (h *hookFS) SyncDir(name string) error {
	if err := h.before(Op{Kind: OpSyncDir, Name: name}); err != nil {
		return err
	}
	return h.inner.SyncDir(name)
}

func (h *hookFS) Lock(name string) (core.Claim, error) {
	if err := h.before(Op{Kind: OpLock, Name: name}); err != nil {
		return nil, err
	}
	c, err := h.inner.Lock(name)
	if err != nil {
		return nil, err
	}
	return &hookClaim{h: h, c: c, name: name}, nil
}

type hookFile struct {
	h    *hookFS
	f    core.File
	name string
}

func (f *hookFile) Read(p []byte) (int, error) {
	if err := f.h.before(Op{Kind: OpRead, Name: f.name}); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *hookFile) Write(p []byte) (int, error) {
	if err := f.h.before(Op{Kind: OpWrite, Name: f.name}); err != nil {
		n, _ := f.f.Write(p[:len(p)/2])
		return n, err
	}
	return f.f.Write(p)
}

func (f *hookFile) Sync() error {
	if err := f.h.before(Op{Kind: OpSync, Name: f.name}); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *hookFile) Close() error {
	if err := f.h.before(Op{Kind: OpClose, Name: f.name}); err != nil {
		_ = f.f.Close() // the descriptor is gone either way, as with close(2)
		return err
	}
	return f.f.Close()
}

func (f *hookFile) Stat() (fs.FileInfo, error) {
	if err := f.h.before(Op{Kind: OpStat, Name: f.name}); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

type hookClaim struct {
	h    *hookFS
	c    core.Claim
	name string
}

func (c *hookClaim) WriteAt(data []byte, off int64) (int, error) {
	if err := c.h.before(Op{Kind: OpWrite, Name: c.name}); err != nil {
		// Half of what it writes, not counting trailing padding: a
		// record torn in its middle.
		n, _ := c.c.WriteAt(data[:len(bytes.TrimRight(data, " \n"))/2], off)
		return n, err
	}
	return c.c.WriteAt(data, off)
}

func (c *hookClaim) Sync() error {
	if err := c.h.before(Op{Kind: OpSync, Name: c.name}); err != nil {
		return err
	}
	return c.c.Sync()
}

func (c *hookClaim) Release() error {
	if err := c.h.before(Op{Kind: OpRelease, Name: c.name}); err != nil {
		_ = c.c.Release() // like close(2): the lock is gone either way
		return err
	}
	return c.c.Release()
}

// CrashModel is implemented by an FS that can tell what a power cut would
// leave. The suite's PowerCut checks run only on such an FS.
//
// An FS with a method Crash(opts O) R, where O is a struct with the fields
// Seed int64 and KeepUnsynced float64 and R implements core.FS (the shape of
// backend-memfs), has a crash model too.
type CrashModel interface {
	// CrashState returns a new FS holding what a power cut at this
	// instant would leave: everything made durable per the core.FS
	// durability rule, plus, with probability keepUnsynced each, a
	// random, seed-determined share of what was not. keepUnsynced 0 is
	// exactly the durable state, 1 the state a crash of the process alone
	// leaves. The receiver is not changed.
	CrashState(seed int64, keepUnsynced float64) core.FS
}

// crashModelOf returns the crash model of fsys, or nil.
func crashModelOf(fsys core.FS) func(seed int64, keep float64) core.FS {
	if cm, ok := fsys.(CrashModel); ok {
		return cm.CrashState
	}
	m := reflect.ValueOf(fsys).MethodByName("Crash")
	if !m.IsValid() {
		return nil
	}
	mt := m.Type()
	fsType := reflect.TypeFor[core.FS]()
	if mt.NumIn() != 1 || mt.NumOut() != 1 || mt.In(0).Kind() != reflect.Struct || !mt.Out(0).Implements(fsType) {
		return nil
	}
	ot := mt.In(0)
	seedF, ok1 := ot.FieldByName("Seed")
	keepF, ok2 := ot.FieldByName("KeepUnsynced")
	if !ok1 || !ok2 || seedF.Type.Kind() != reflect.Int64 || keepF.Type.Kind() != reflect.Float64 {
		return nil
	}
	return func(seed int64, keep float64) core.FS {
		o := reflect.New(ot).Elem()
		o.FieldByIndex(seedF.Index).SetInt(seed)
		o.FieldByIndex(keepF.Index).SetFloat(keep)
		return m.Call([]reflect.Value{o})[0].Interface().(core.FS)
	}
}

// Symlinker is implemented by an FS that can plant symbolic links, so that
// the suite can check that none is ever followed. An FS with a method
// Root() string returning the OS directory it lives in gets the same checks
// through os.Symlink.
type Symlinker interface {
	// Symlink creates newname as a symbolic link to target.
	Symlink(target, newname string) error
}

func symlinkerOf(fsys core.FS) func(target, newname string) error {
	if s, ok := fsys.(Symlinker); ok {
		return s.Symlink
	}
	if r, ok := fsys.(interface{ Root() string }); ok {
		root := r.Root()
		if !filepath.IsAbs(root) {
			return nil
		}
		return func(target, newname string) error {
			return os.Symlink(target, filepath.Join(root, filepath.FromSlash(newname)))
		}
	}
	return nil
}

// rootOf returns the OS directory of fsys, or "".
func rootOf(fsys core.FS) string {
	if r, ok := fsys.(interface{ Root() string }); ok && filepath.IsAbs(r.Root()) {
		return r.Root()
	}
	return ""
}
