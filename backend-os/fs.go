//go:build linux || darwin || freebsd

package osfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
	"golang.org/x/sys/unix"
)

var (
	_ core.FS              = (*FS)(nil)
	_ core.WholeFileReader = (*FS)(nil)
	_ core.WholeFileWriter = (*FS)(nil)
)

// FS is a core.FS on the real filesystem, confined to one root directory.
// On Linux it also implements core.DirWatcher (inotify) and core.FSSyncer
// (syncfs), on macOS and FreeBSD core.DirWatcher (kqueue); built with the
// mqb_portable tag it implements neither, and consumers poll (see the
// package documentation).
//
// No name resolves outside the root and no symbolic link below the root is
// ever followed: an operation whose name needs a link fails with an error
// matching ErrSymlink. (Links in the root's own path are resolved once, by
// New.) The root stays open, so the FS keeps working on the same directory
// even if the root path is later renamed or replaced.
//
// Every call reaches names in subdirectories through descriptors of those
// directories kept from earlier calls (a few, the most recently used),
// rather than resolving the directory each time. A kept descriptor found
// to be of a removed directory is dropped and the name resolved afresh, so
// nothing is ever put into, read from or synced in a directory that was
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
	flush    Flush
	walk     bool // openat2 is unusable or absent: resolve one element at a time

	// Switches for tests: take the fallback paths on kernels that do not need them.
	// Not every build has renameat2 or inotify; these are unused there.
	noRenameat2 bool
	noProcFD    bool

	// rootfd is the root directory, from which every name resolves; -1
	// once closed. Calls hold rootMu shared while they use it, so that
	// Close, which holds it exclusively, never closes it under them.
	rootMu sync.RWMutex
	rootfd int

	dirs dirCache // descriptors of subdirectories (O_PATH on Linux), to reach names in them and sync them

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
	flush, err := flushOption(opts.Flush)
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
		fd, err = unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|oLargefile, 0)
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
		flush:    flush,
		walk:     !resolveUsable(fd),
	}, nil
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
// It uses renameat2(RENAME_NOREPLACE) on Linux and renameatx_np(RENAME_EXCL)
// on macOS. On FreeBSD, in the mqb_portable build, and where the filesystem
// lacks those flags it uses link then unlink, which is just as exclusive
// but, after a crash between the two steps, can leave both names on the same
// file; it cannot move a directory.
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
			if err == nil {
				from.succeeded()
				to.succeeded()
			}
			f.release(from)
			f.release(to)
			if err == nil {
				// Had oldname been a directory, kept descriptors of it
				// and below would now be reached under the wrong names.
				f.forgetDir(oldname)
				f.forgetDir(newname)
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

// linkRename is the rename that every Unix can do without replacing: link(2)
// fails with EEXIST rather than replace, so the new name appears atomically
// and only when it was free; then the old name goes. why is the error of a
// native no-replace rename that was refused, if any: for a directory, which
// link cannot move, it says better what went wrong.
func linkRename(odir int, obase string, ndir int, nbase string, why error) error {
	lerr := ignoringEINTR(func() error { return unix.Linkat(odir, obase, ndir, nbase, 0) })
	if lerr != nil {
		if lerr == unix.EPERM && why != nil {
			return why
		}
		return lerr
	}
	if uerr := ignoringEINTR(func() error { return sysUnlinkat(odir, obase, 0) }); uerr != nil {
		_ = sysUnlinkat(ndir, nbase, 0) // undo, so that only the old name is left
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
			err := ignoringEINTR(func() error { return sysUnlinkat(dirfd, base, 0) })
			if err == unix.EISDIR {
				err = ignoringEINTR(func() error { return sysUnlinkat(dirfd, base, unix.AT_REMOVEDIR) })
				if err == nil {
					f.forgetDir(name)
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
			err := ignoringEINTR(func() error { return sysMkdirat(dirfd, base, f.dirMode) })
			if err == nil {
				f.forgetDir(name) // anything kept under this name is of a removed directory
			}
			return err
		})
	}, name)
}

// SyncDir makes durable every creation, rename and removal of entries of the
// directory name so far, by fsync on the directory (F_FULLFSYNC on macOS,
// see Flush).
//
// When another process removed the directory and made it again since this
// FS last reached it, SyncDir syncs the directory now at name, unless a
// call of this FS succeeded in the old one since the last SyncDir of name:
// then it syncs the old one, where that call's change went (a change in
// the new one would have made this FS reach the new one). So every change
// this FS made is synced, with no system call beyond the fsync in the
// usual case, where the changes come right before the sync.
func (f *FS) SyncDir(name string) error {
	return f.do("syncdir", name, func(rootfd int) error { return f.fsyncDir(rootfd, name) }, name)
}

func (f *FS) fsyncDir(rootfd int, name string) error {
	if name == "." {
		return syncFD(rootfd, f.flush)
	}
	for fresh := false; ; fresh = true {
		d, cached, err := f.dirs.get(name, fresh, func() (int, error) {
			return f.openBeneath(rootfd, name, oDirPath|unix.O_DIRECTORY, 0)
		})
		if err != nil {
			return err
		}
		fd, err := f.dirs.syncFD(d)
		if err == nil {
			err = syncFD(fd, f.flush)
		}
		changed := d.changed.Swap(false)
		// fsync of a removed directory succeeds: only after the sync is it
		// known that a kept descriptor nothing changed through since the
		// last sync still was the directory at name (it cannot have been
		// made again under it before being removed). A removed one is
		// dropped and name resolved afresh.
		stale := cached && (mayBeStale(err) || (err == nil && !changed && dirRemoved(fd)))
		f.dirs.put(d)
		if !stale {
			return err
		}
	}
}

// dirRemoved reports whether the directory fd has been removed: its link
// count is 0, or (NFS) its handle is stale.
func dirRemoved(fd int) bool {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) })
	if err != nil {
		return true // resolve afresh, which reports what is wrong
	}
	return st.Nlink == 0
}

// forgetDir drops every kept descriptor of name and of the directories
// below it.
func (f *FS) forgetDir(name string) {
	f.dirs.forget(name)
}
