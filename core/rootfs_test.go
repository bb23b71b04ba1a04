package core

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// rootFS is the simplest FS there is, for core's own tests: os.Root gives
// confinement, link+remove gives rename-without-replace, flock gives claims.
// The real backends live in their own modules.
type rootFS struct{ r *os.Root }

func newRootFS(t testing.TB) *rootFS {
	t.Helper()
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &rootFS{r}
}

type rootFile struct{ *os.File }

func (f rootFile) Stat() (fs.FileInfo, error) { return f.File.Stat() }

func (r *rootFS) CreateExcl(name string) (File, error) {
	f, err := r.r.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return rootFile{f}, nil
}

func (r *rootFS) Open(name string) (File, error) {
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
	if err := r.r.Link(oldname, newname); err != nil {
		return err
	}
	return r.r.Remove(oldname)
}

func (r *rootFS) Remove(name string) error { return r.r.Remove(name) }
func (r *rootFS) Mkdir(name string) error  { return r.r.Mkdir(name, 0o700) }

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

func (r *rootFS) Stat(name string) (fs.FileInfo, error) { return r.r.Lstat(name) }

func (r *rootFS) SyncDir(name string) error {
	f, err := r.r.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

type rootClaim struct{ f *os.File }

func (r *rootFS) Lock(name string) (Claim, error) {
	f, err := r.r.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flockNB(f); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
		}
		return nil, err
	}
	return rootClaim{f}, nil
}

func (c rootClaim) Write(b []byte) error {
	if err := c.f.Truncate(0); err != nil {
		return err
	}
	if _, err := c.f.WriteAt(b, 0); err != nil {
		return err
	}
	return c.f.Sync()
}

func (c rootClaim) Release() error { return c.f.Close() }
