package osfs

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ReadDir lists the entries of the directory name sorted by name, without
// "." and "..". Entry types are those of the entries themselves (a symbolic
// link is reported as one); Info describes an entry as Stat does, at the
// time it is called. The directory itself is never reached through a link.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	var list []*dirEntry
	err := f.do("readdir", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		list, err = f.readDirents(fd, name)
		return err
	}, name)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *dirEntry) int { return strings.Compare(a.name, b.name) })
	entries := make([]fs.DirEntry, len(list))
	for i, e := range list {
		entries[i] = e
	}
	return entries, nil
}

// ScanDir calls fn for every entry of the directory name except "." and
// "..", in the order the filesystem returns them, without holding the whole
// listing: a consumer of a large flat backlog keeps only what it needs.
// Types are as in ReadDir.
func (f *FS) ScanDir(name string, fn func(name string, typ fs.FileMode)) error {
	return f.do("readdir", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return scanDirents(fd, func(e string, typ fs.FileMode) error {
			fn(e, typ)
			return nil
		})
	}, name)
}

// Offsets in struct linux_dirent64, the same on every architecture:
// u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[].
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

// direntBufs holds getdents64 buffers for reuse: a spool lists its
// directories over and over.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents reads every entry of the open directory fd.
func (f *FS) readDirents(fd int, dir string) ([]*dirEntry, error) {
	var entries []*dirEntry
	var block []dirEntry // entries are allocated many at a time
	err := scanDirents(fd, func(name string, typ fs.FileMode) error {
		if len(block) == cap(block) {
			block = make([]dirEntry, 0, min(max(2*cap(block), 16), 512))
		}
		block = append(block, dirEntry{fsys: f, dir: dir, name: name, typ: typ})
		entries = append(entries, &block[len(block)-1])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// scanDirents calls fn for every entry of the open directory fd with
// getdents64, taking types from d_type and falling back to fstatat on
// filesystems that do not fill it in. (os.File.ReadDir would lstat such
// entries by path, outside the confined resolution.)
func scanDirents(fd int, fn func(name string, typ fs.FileMode) error) error {
	bufp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bufp)
	buf := *bufp
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Getdents(fd, buf)
			return err
		})
		if err != nil || n <= 0 {
			return err
		}
		for b := buf[:n]; len(b) >= direntName; {
			reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
			if reclen < direntName || reclen > len(b) {
				return unix.EIO // a malformed record: never expected
			}
			typ, name := b[direntType], b[direntName:reclen]
			b = b[reclen:]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := string(name)
			mode := direntModeType(typ)
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, e, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					if err == unix.ENOENT {
						continue // removed since getdents
					}
					return err
				}
				mode = modeType(st.Mode & unix.S_IFMT)
			}
			if err := fn(e, mode); err != nil {
				return err
			}
		}
	}
}

func direntModeType(t uint8) fs.FileMode {
	switch t {
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	case unix.DT_REG:
		return 0
	}
	return fs.ModeIrregular
}

func modeType(ifmt uint32) fs.FileMode {
	switch ifmt {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFREG:
		return 0
	}
	return fs.ModeIrregular
}

// dirEntry is one entry returned by ReadDir.
type dirEntry struct {
	fsys *FS
	dir  string
	name string
	typ  fs.FileMode
}

func (e *dirEntry) Name() string               { return e.name }
func (e *dirEntry) IsDir() bool                { return e.typ.IsDir() }
func (e *dirEntry) Type() fs.FileMode          { return e.typ }
func (e *dirEntry) Info() (fs.FileInfo, error) { return e.fsys.Stat(path.Join(e.dir, e.name)) }
func (e *dirEntry) String() string             { return fs.FormatDirEntry(e) }
