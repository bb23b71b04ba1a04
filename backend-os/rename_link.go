//go:build freebsd || (mqb_portable && (linux || darwin))

package osfs

// renameNoReplace is link then unlink (see linkRename): FreeBSD has no
// no-replace rename(2) flag, and the mqb_portable build uses only what
// every Unix has.
func (f *FS) renameNoReplace(odir int, obase string, ndir int, nbase string) error {
	return linkRename(odir, obase, ndir, nbase, nil)
}

// renamesDirs reports whether renameNoReplace can move a directory: link(2)
// cannot.
func (f *FS) renamesDirs() bool { return false }
