//go:build (linux && mqb_portable) || darwin || freebsd

package osfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// readDirents reads every entry of the open directory fd with the standard
// library's reader (getdirentries or readdir(3) on a copy of fd). Entry
// types come from d_type; where a filesystem leaves it unset the library
// asks fstatat on the directory's descriptor, never a path, so the listing
// stays confined.
func (f *FS) readDirents(fd int, dir string) ([]*dirEntry, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), dir)
	defer d.Close()
	list, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	entries := make([]*dirEntry, len(list))
	block := make([]dirEntry, len(list))
	for i, e := range list {
		block[i] = dirEntry{fsys: f, dir: dir, name: e.Name(), typ: e.Type()}
		entries[i] = &block[i]
	}
	return entries, nil
}
