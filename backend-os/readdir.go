//go:build linux || darwin || freebsd

package osfs

import (
	"io/fs"
	"path"
	"slices"
	"strings"

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
