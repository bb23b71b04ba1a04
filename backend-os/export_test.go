//go:build linux || darwin || freebsd

package osfs

import "golang.org/x/sys/unix"

// Switches that make tests take the fallback paths on a kernel and
// filesystem that would not need them.

// UsesOpenat2 reports whether f resolves names with openat2.
func UsesOpenat2(f *FS) bool { return !f.walk }

// ForceWalk makes f resolve names one element at a time, as on kernels
// without openat2.
func ForceWalk(f *FS) { f.walk = true }

// ForceLinkRename makes f rename with link and unlink, as on filesystems
// without RENAME_NOREPLACE.
func ForceLinkRename(f *FS) { f.noRenameat2 = true }

// ForceNoProcFD makes f add inotify watches by path, as without /proc.
func ForceNoProcFD(f *FS) { f.noProcFD = true }

// RenamesDirectories reports whether f's Rename can move a directory: not
// with link and unlink.
func RenamesDirectories(f *FS) bool { return f.renamesDirs() }

// KeptSyncDirIno returns the inode of the descriptor SyncDir keeps for
// name, if it keeps one.
func KeptSyncDirIno(f *FS, name string) (uint64, bool) {
	f.dirs.mu.Lock()
	defer f.dirs.mu.Unlock()
	i := f.dirs.find(name)
	if i < 0 || f.dirs.entries[i].sync < 0 {
		return 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(f.dirs.entries[i].sync, &st) != nil {
		return 0, false
	}
	return uint64(st.Ino), true
}
