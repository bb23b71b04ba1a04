//go:build linux && !mqb_portable

package osfs

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"sync"
	"time"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

var (
	_ core.DirScanner     = (*FS)(nil)
	_ core.DirInfoScanner = (*FS)(nil)
)

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

// ScanDirInfo calls fn for every entry of the directory name except "."
// and "..", in the order the filesystem returns them, with what Stat
// reports of it (fstatat on the directory's descriptor, not following a
// link): `mqb spool stat` sums sizes without holding the listing. An entry
// removed since getdents returned it is left out.
func (f *FS) ScanDirInfo(name string, fn func(fs.FileInfo)) error {
	return f.do("readdir", name, func(rootfd int) error {
		fd, err := f.openBeneath(rootfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return scanDirents(fd, func(e string, _ fs.FileMode) error {
			var st unix.Stat_t
			err := ignoringEINTR(func() error { return unix.Fstatat(fd, e, &st, unix.AT_SYMLINK_NOFOLLOW) })
			if err == unix.ENOENT {
				return nil
			}
			if err != nil {
				return err
			}
			fn(&scanInfo{name: e, mode: fs.FileMode(st.Mode&0o777) | modeType(st.Mode&unix.S_IFMT), size: st.Size, mtime: time.Unix(st.Mtim.Unix())})
			return nil
		})
	}, name)
}

// scanInfo is the fs.FileInfo of ScanDirInfo.
type scanInfo struct {
	name  string
	mode  fs.FileMode
	size  int64
	mtime time.Time
}

func (i *scanInfo) Name() string       { return i.name }
func (i *scanInfo) Size() int64        { return i.size }
func (i *scanInfo) Mode() fs.FileMode  { return i.mode }
func (i *scanInfo) ModTime() time.Time { return i.mtime }
func (i *scanInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *scanInfo) Sys() any           { return nil }
