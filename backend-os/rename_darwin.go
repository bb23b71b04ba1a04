//go:build darwin && !mqb_portable

package osfs

import "golang.org/x/sys/unix"

// renameNoReplace is renameatx_np(RENAME_EXCL), which APFS and HFS+ have.
// Filesystems without it (some network and FUSE mounts) get link then
// unlink.
func (f *FS) renameNoReplace(odir int, obase string, ndir int, nbase string) error {
	err := ignoringEINTR(func() error {
		return unix.RenameatxNp(odir, obase, ndir, nbase, unix.RENAME_EXCL)
	})
	if err != unix.ENOTSUP && err != unix.EINVAL && err != unix.ENOSYS {
		return err
	}
	return linkRename(odir, obase, ndir, nbase, err)
}

// renamesDirs reports whether renameNoReplace can move a directory.
func (f *FS) renamesDirs() bool { return true }
