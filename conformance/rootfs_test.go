//go:build unix

package conformance_test

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mqb-project/mqb/core"
)

// rootFS is the simplest core.FS there is, for the suite to test itself
// against: os.Root for confinement, an Lstat of every element so that no
// symbolic link is followed, link+unlink for a rename that never replaces,
// flock for claims. It has no wake-ups, no SyncAll and no crash model.
type rootFS struct {
	dir string
	r   *os.Root
}

func newRootFS(t testing.TB) *rootFS {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &rootFS{dir: dir, r: r}
}

// Root names the OS directory, so that the suite can plant symbolic links.
func (r *rootFS) Root() string { return r.dir }

// check refuses invalid names and names that go through a symbolic link.
func (r *rootFS) check(op, name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return nil
	}
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		fi, err := r.r.Lstat(strings.Join(parts[:i], "/"))
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
	}
	return nil
}

type rootFile struct{ *os.File }

func (f rootFile) Stat() (fs.FileInfo, error) { return f.File.Stat() }

func (r *rootFS) CreateExcl(name string) (core.File, error) {
	if err := r.check("create", name); err != nil {
		return nil, err
	}
	f, err := r.r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return rootFile{f}, nil
}

func (r *rootFS) Open(name string) (core.File, error) {
	if err := r.check("open", name); err != nil {
		return nil, err
	}
	fi, err := r.r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.r.Open(name)
	if err != nil {
		return nil, err
	}
	return rootFile{f}, nil
}

func (r *rootFS) Rename(oldname, newname string) error {
	if err := r.check("rename", oldname); err != nil {
		return err
	}
	if err := r.check("rename", newname); err != nil {
		return err
	}
	if err := r.r.Link(oldname, newname); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return &fs.PathError{Op: "rename", Path: oldname + " -> " + newname, Err: le.Err}
		}
		return err
	}
	return r.r.Remove(oldname)
}

func (r *rootFS) Remove(name string) error {
	if err := r.check("remove", name); err != nil {
		return err
	}
	return r.r.Remove(name)
}

func (r *rootFS) Mkdir(name string) error {
	if err := r.check("mkdir", name); err != nil {
		return err
	}
	return r.r.Mkdir(name, 0o700)
}

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := r.check("readdir", name); err != nil {
		return nil, err
	}
	if fi, err := r.r.Lstat(name); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	f, err := r.r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

func (r *rootFS) Stat(name string) (fs.FileInfo, error) {
	if err := r.check("stat", name); err != nil {
		return nil, err
	}
	return r.r.Lstat(name)
}

func (r *rootFS) SyncDir(name string) error {
	if err := r.check("syncdir", name); err != nil {
		return err
	}
	f, err := r.r.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

type rootClaim struct{ f *os.File }

func (r *rootFS) Lock(name string) (core.Claim, error) {
	if err := r.check("lock", name); err != nil {
		return nil, err
	}
	if fi, err := r.r.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.r.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: core.ErrLocked}
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return rootClaim{f}, nil
}

func (c rootClaim) WriteAt(b []byte, off int64) (int, error) { return c.f.WriteAt(b, off) }

func (c rootClaim) Sync() error { return c.f.Sync() }

func (c rootClaim) Release() error { return c.f.Close() }
