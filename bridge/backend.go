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

// BackendOptions choose and configure the filesystem of a spool: the
// backend, file_mode and dir_mode options of the dir_spool connector. core
// never reads them; the backend a BackendFactory opens does.
type BackendOptions struct {
	Backend  string      // a registered backend name; "" means os
	FileMode fs.FileMode // permission bits of files the os backend creates; 0 means 0600
	DirMode  fs.FileMode // permission bits of directories the os backend creates; 0 means 0700
}

// BackendFields are the option fields of BackendOptions, with the same names
// in URL queries and YAML. The dir_spool connector lists them after the
// fields of core.SpoolSchema.
var BackendFields = []option.Field{
	{Name: "backend", Type: option.TypeString, Default: BackendOS,
		Doc: "Filesystem backend: os (the real filesystem), memfs (in-process memory), or a name registered by a library user."},
	{Name: "file_mode", Type: option.TypeFileMode, Default: "0600",
		Doc: "Permission bits of files the spool creates (os backend)."},
	{Name: "dir_mode", Type: option.TypeFileMode, Default: "0700",
		Doc: "Permission bits of directories the spool creates (os backend)."},
}

// BackendOptionsFromValues reads BackendFields from values decoded with a
// schema that holds them.
func BackendOptionsFromValues(v *option.Values) BackendOptions {
	return BackendOptions{
		Backend:  v.String("backend"),
		FileMode: fs.FileMode(v.FileMode("file_mode")),
		DirMode:  fs.FileMode(v.FileMode("dir_mode")),
	}
}

func openOS(path string, o BackendOptions, create bool) (core.FS, error) {
	return osfs.New(path, osfs.Options{FileMode: o.FileMode, DirMode: o.DirMode, CreateRoot: create})
}

// openMem returns the in-memory spool of path, made on first use. Every
// producer and consumer of this Env that names the path shares it, which is
// what lets two routes in one process hand messages over through memfs.
func (e *Env) openMem(path string, _ BackendOptions, _ bool) (core.FS, error) {
	e.memMu.Lock()
	defer e.memMu.Unlock()
	key := filepath.Clean(path)
	if f, ok := e.mem[key]; ok {
		return f, nil
	}
	f := memfs.New()
	e.mem[key] = f
	return f, nil
}

// OpenSpoolFS opens the filesystem of the spool at path with the backend o
// names. It returns the FS and a function that releases
// it (it closes the FS when that implements io.Closer). An unknown backend
// is a *option.Error naming the registered ones; a missing spool
// directory, with create false, an error matching fs.ErrNotExist.
func (e *Env) OpenSpoolFS(path string, o BackendOptions, create bool) (core.FS, func() error, error) {
	name := o.Backend
	if name == "" {
		name = BackendOS
	}
	f, ok := e.Backend(name)
	if !ok {
		return nil, nil, &option.Error{Field: "backend", Value: name, Msg: "is not a registered backend", Valid: e.Backends()}
	}
	fsys, err := f(path, o, create)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("spool %s: directory does not exist: %w", path, err)
		}
		return nil, nil, fmt.Errorf("spool %s: open with backend %s: %w", path, name, err)
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
