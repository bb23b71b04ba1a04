package bridge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/mqb-project/mqb/core/option"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// Names of the built-in spool backends, as given in the backend option;
// each backend defines its own.
const (
	BackendOS    = osfs.Name
	BackendMemFS = memfs.Name
)

func openOS(o core.Options, create bool) (core.FS, error) {
	return osfs.New(o.Path, osfs.Options{FileMode: o.FileMode, DirMode: o.DirMode, CreateRoot: create})
}

// openMem returns the in-memory spool of o.Path, made on first use. Every
// producer and consumer of this Env that names the path shares it, which is
// what lets two routes in one process hand messages over through memfs.
func (e *Env) openMem(o core.Options, create bool) (core.FS, error) {
	e.memMu.Lock()
	defer e.memMu.Unlock()
	key := filepath.Clean(o.Path)
	if f, ok := e.mem[key]; ok {
		return f, nil
	}
	f := memfs.New()
	e.mem[key] = f
	return f, nil
}

// OpenSpoolFS opens the filesystem of the spool o describes with the backend
// its backend option names. It returns the FS and a function that releases
// it (it closes the FS when that implements io.Closer). An unknown backend
// is a *option.Error naming the registered ones; a missing spool
// directory, with create false, an error matching fs.ErrNotExist.
func (e *Env) OpenSpoolFS(o core.Options, create bool) (core.FS, func() error, error) {
	name := o.Backend
	if name == "" {
		name = BackendOS
	}
	f, ok := e.Backend(name)
	if !ok {
		return nil, nil, &option.Error{Field: "backend", Value: name, Msg: "is not a registered backend", Valid: e.Backends()}
	}
	fsys, err := f(o, create)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("spool %s: directory does not exist: %w", o.Path, err)
		}
		return nil, nil, fmt.Errorf("spool %s: open with backend %s: %w", o.Path, name, err)
	}
	release := func() error { return nil }
	if c, ok := fsys.(io.Closer); ok {
		release = c.Close
	}
	return fsys, release, nil
}

// CheckBackend returns a *option.Error when name is not a registered
// backend, so that a bad backend option is a configuration error found
// before anything runs.
func (e *Env) CheckBackend(name string) error {
	if _, ok := e.Backend(name); !ok {
		return &option.Error{Field: "backend", Value: name, Msg: "is not a registered backend", Valid: e.Backends()}
	}
	return nil
}
