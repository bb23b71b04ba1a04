//go:build linux

package osfs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

var (
	_ core.FS         = (*FS)(nil)
	_ core.DirWatcher = (*FS)(nil)
	_ core.FSSyncer   = (*FS)(nil)
)

// Default permissions of what an FS creates, before the process umask.
const (
	DefaultFileMode fs.FileMode = 0o600
	DefaultDirMode  fs.FileMode = 0o700
)

// Options configure New.
type Options struct {
	// FileMode is the permission of files created by CreateExcl and Lock;
	// zero means DefaultFileMode (0600). The process umask applies.
	FileMode fs.FileMode
	// DirMode is the permission of directories created by Mkdir and, with
	// CreateRoot, of the root and its missing parents; zero means
	// DefaultDirMode (0700). The process umask applies.
	DirMode fs.FileMode
	// CreateRoot creates the root directory, and its missing parents,
	// when it does not exist. Without it a missing root is an error.
	CreateRoot bool
}

// FS is a core.FS on the real filesystem, confined to one root directory. It
// also implements core.DirWatcher (inotify) and core.FSSyncer (syncfs).
//
// No name resolves outside the root and no symbolic link below the root is
// ever followed: an operation whose name needs a link fails with an error
// matching ErrSymlink. (Links in the root's own path are resolved once, by
// New.) The root stays open, so the FS keeps working on the same directory
// even if the root path is later renamed or replaced.
//
// Rename, Remove and Mkdir reach names in subdirectories through
// descriptors of those directories kept from earlier calls (a few, the
// most recently used), rather than resolving the directory each time. A
// kept descriptor found to be of a removed directory is dropped and the
// name resolved afresh, so nothing is ever put into a directory that was
// removed, even one made again under the same name. A subdirectory that
// another process renames is still reached under its old name while its
// descriptor is kept; the spool protocol never renames directories.
//
// An FS is safe for concurrent use. After Close every method fails with an
// error matching fs.ErrClosed; files and claims it handed out stay usable.
type FS struct {
	root     string
	fileMode uint32
	dirMode  uint32
	walk     bool // openat2 is unusable: resolve one element at a time

	// Switches for tests: take the fallback paths on kernels that do not need them.
	noRenameat2 bool
	noProcFD    bool

	// rootfd is the root directory, from which every name resolves; -1
	// once closed. Calls hold rootMu shared while they use it, so that
	// Close, which holds it exclusively, never closes it under them.
	rootMu sync.RWMutex
	rootfd int

	dirs dirCache // descriptors of subdirectories, for Rename, Remove and Mkdir

	mu      sync.Mutex // guards watcher and closed
	watcher *watcher
	closed  bool
}

// New opens the directory root, an absolute path, as a spool filesystem.
// Invalid options or a relative root give an error matching
// option.ErrInvalid; a missing root gives one matching fs.ErrNotExist
// unless opts.CreateRoot is set.
func New(root string, opts Options) (*FS, error) {
	if !filepath.IsAbs(root) {
		return nil, &option.Error{Field: "root", Value: root, Msg: "must be an absolute path"}
	}
	root = filepath.Clean(root)
	fileMode, err := permOption("FileMode", opts.FileMode, DefaultFileMode)
	if err != nil {
		return nil, err
	}
	dirMode, err := permOption("DirMode", opts.DirMode, DefaultDirMode)
	if err != nil {
		return nil, err
	}
	if opts.CreateRoot {
		if err := os.MkdirAll(root, fs.FileMode(dirMode)); err != nil {
			return nil, err
		}
	}
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_LARGEFILE, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	return &FS{
		root:     root,
		rootfd:   fd,
		fileMode: fileMode,
		dirMode:  dirMode,
		walk:     !openat2Usable(fd),
	}, nil
}

func permOption(field string, mode, def fs.FileMode) (uint32, error) {
	if mode == 0 {
		mode = def
	}
	if mode&^fs.ModePerm != 0 {
		return 0, &option.Error{Field: field, Value: mode.String(), Msg: "only permission bits (0777) are allowed"}
	}
	return uint32(mode), nil
}

// Root returns the absolute, cleaned path of the root directory.
func (f *FS) Root() string { return f.root }

// Close stops every DirWatch and closes the root directory, once the calls
// in progress have returned. It does not release claims taken with Lock,
// nor close files: release and close those separately. A second Close fails
// with an error matching fs.ErrClosed.
func (f *FS) Close() error {
	f.mu.Lock()
	w := f.watcher
	f.watcher, f.closed = nil, true
	f.mu.Unlock()
	if w != nil {
		w.close()
	}
	f.rootMu.Lock()
	fd := f.rootfd
	f.rootfd = -1
	f.rootMu.Unlock()
	if fd < 0 {
		return &fs.PathError{Op: "close", Path: f.root, Err: fs.ErrClosed}
	}
	f.dirs.close()
	return pathErr("close", f.root, unix.Close(fd))
}

// do validates names and runs fn with the root directory descriptor, which
// stays open until fn returns. Errors come back as *fs.PathError for op and
// path. fn must not call do again: with Close waiting, it would deadlock.
func (f *FS) do(op, path string, fn func(rootfd int) error, names ...string) error {
	for _, n := range names {
		if !fs.ValidPath(n) {
			return &fs.PathError{Op: op, Path: path, Err: fs.ErrInvalid}
		}
	}
	f.rootMu.RLock()
	defer f.rootMu.RUnlock()
	if f.rootfd < 0 {
		return &fs.PathError{Op: op, Path: path, Err: fs.ErrClosed}
	}
	return pathErr(op, path, fn(f.rootfd))
}

// Rename moves oldname to newname atomically and never replaces newname:
// when newname exists it fails with an error matching fs.ErrExist and both
// names are left as they were. The error's Path is "oldname -> newname".
//
// It uses renameat2(RENAME_NOREPLACE). Where the filesystem lacks that flag
// it falls back to link then unlink, which is just as exclusive but, after a
// crash between the two steps, can leave both names on the same file; it
// cannot move a directory.
func (f *FS) Rename(oldname, newname string) error {
	err := f.do("rename", oldname, func(rootfd int) error {
		for fresh := false; ; fresh = true {
			from, err := f.parentAt(rootfd, oldname, fresh)
			if err != nil {
				return err
			}
			to, err := f.parentAt(rootfd, newname, fresh)
			if err != nil {
				f.release(from)
				return err
			}
			err = f.renameNoReplace(from.fd, from.base, to.fd, to.base)
			f.release(from)
			f.release(to)
			if err == nil {
				// Had oldname been a directory, kept descriptors of it
				// and below would now be reached under the wrong names.
				f.dirs.forget(oldname)
				f.dirs.forget(newname)
			}
			if !(from.cached || to.cached) || !mayBeStale(err) {
				return err // else as inParent: try again, resolving afresh
			}
		}
	}, oldname, newname)
	if pe, ok := err.(*fs.PathError); ok {
		pe.Path = oldname + " -> " + newname // built only when needed
	}
	return err
}

func (f *FS) renameNoReplace(odir int, obase string, ndir int, nbase string) error {
	var err error
	if !f.noRenameat2 {
		err = ignoringEINTR(func() error {
			return unix.Renameat2(odir, obase, ndir, nbase, unix.RENAME_NOREPLACE)
		})
		if err != unix.EINVAL && err != unix.ENOSYS {
			return err
		}
	}
	// link(2) fails with EEXIST rather than replace, so the new name
	// appears atomically and only when it was free.
	lerr := ignoringEINTR(func() error { return unix.Linkat(odir, obase, ndir, nbase, 0) })
	if lerr != nil {
		if lerr == unix.EPERM && err != nil {
			return err // a directory: report why renameat2 refused
		}
		return lerr
	}
	if uerr := ignoringEINTR(func() error { return unix.Unlinkat(odir, obase, 0) }); uerr != nil {
		_ = unix.Unlinkat(ndir, nbase, 0) // undo, so that only the old name is left
		return uerr
	}
	return nil
}

// Remove deletes the file (or symbolic link, not its target) or the empty
// directory name. It fails with an error matching fs.ErrNotExist when name
// does not exist and syscall.ENOTEMPTY when the directory has entries.
func (f *FS) Remove(name string) error {
	return f.do("remove", name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			err := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, base, 0) })
			if err == unix.EISDIR {
				err = ignoringEINTR(func() error { return unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR) })
				if err == nil {
					f.dirs.forget(name)
				}
			}
			return err
		})
	}, name)
}

// Mkdir creates the directory name with Options.DirMode. It fails with an
// error matching fs.ErrExist when name exists (as anything, a symbolic link
// included) and fs.ErrNotExist when its parent does not.
func (f *FS) Mkdir(name string) error {
	return f.do("mkdir", name, func(rootfd int) error {
		return f.inParent(rootfd, name, func(dirfd int, base string) error {
			err := ignoringEINTR(func() error { return unix.Mkdirat(dirfd, base, f.dirMode) })
			if err == nil {
				f.dirs.forget(name) // anything kept under this name is of a removed directory
			}
			return err
		})
	}, name)
}

// Stat describes name without following a symbolic link, like os.Lstat;
// Sys returns a *syscall.Stat_t.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := f.do("stat", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name, unix.O_PATH|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		info := &fileInfo{name: path.Base(name)}
		if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &info.sys) }); err != nil {
			return err
		}
		fi = info
		return nil
	}, name)
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// SyncDir makes durable every creation, rename and removal of entries of the
// directory name so far, by fsync on the directory.
func (f *FS) SyncDir(name string) error {
	return f.do("syncdir", name, func(rootfd int) error { return f.fsyncDir(rootfd, name) }, name)
}

func (f *FS) fsyncDir(rootfd int, name string) error {
	fd := rootfd
	if name != "." {
		var err error
		if fd, err = f.openBeneath(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
			return err
		}
		defer unix.Close(fd)
	}
	return ignoringEINTR(func() error { return unix.Fsync(fd) })
}

// SyncAll makes the bytes of every file written before the call durable, as
// if each had been synced, by syncfs on the filesystem holding the root.
// Directories mounted below the root are not covered.
func (f *FS) SyncAll() error {
	return f.do("syncfs", ".", func(rootfd int) error {
		return ignoringEINTR(func() error { return unix.Syncfs(rootfd) })
	})
}
