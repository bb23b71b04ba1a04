// Package osfs is the real-filesystem backend of mqb: a core.FS confined to
// one spool root directory, on Linux, macOS and FreeBSD. On other systems
// (Windows among them) New fails with ErrUnsupportedOS.
//
// What it promises beyond the core.FS contract, and how:
//
//   - Confinement. Every name is resolved from a descriptor of the root,
//     held open for the life of the FS: on Linux with openat2(RESOLVE_BENEATH
//     | RESOLVE_NO_SYMLINKS), elsewhere (and where openat2 is unavailable)
//     one element at a time with O_NOFOLLOW. No name reaches outside the root
//     and no symbolic link below it is followed (ErrSymlink). FreeBSD's
//     O_RESOLVE_BENEATH is not used: it follows links inside the root.
//     Descriptors of the subdirectories used last are kept for Rename,
//     Remove and Mkdir (see FS).
//   - Exclusive names. CreateExcl uses O_EXCL; Rename uses
//     renameat2(RENAME_NOREPLACE) on Linux, renameatx_np(RENAME_EXCL) on
//     macOS, and link then unlink on FreeBSD and where the filesystem lacks
//     the flag, so it never replaces an existing name.
//   - Durability. File.Sync and SyncDir are fsync, on macOS
//     fcntl(F_FULLFSYNC) (see Flush: plain fsync there leaves data in the
//     drive's cache). On Linux SyncAll (core.FSSyncer) is syncfs; elsewhere
//     the FS is no FSSyncer and fsync=batch syncs each file.
//   - Claims. Lock is a non-blocking flock(2), released by the kernel when
//     the holder dies; it conflicts with other processes and with other
//     Claims of the same process.
//   - Wake-ups. WatchDir (core.DirWatcher) uses inotify on Linux and kqueue
//     on macOS and FreeBSD.
//
// The mqb_portable build tag makes the backend use only what every Unix
// has, even on Linux: the O_NOFOLLOW walk, link-then-unlink renames,
// per-file fsync, and no wake-ups (consumers poll). It is how the code that
// macOS and FreeBSD run is tested on Linux:
//
//	go test -race -tags mqb_portable ./backend-os/...
//
// Files and directories are created with Options.FileMode and
// Options.DirMode (0600 and 0700 by default), less the process umask.
//
// Example:
//
//	fsys, err := osfs.New("/var/spool/orders", osfs.Options{CreateRoot: true})
//	if err != nil {
//		return err
//	}
//	defer fsys.Close()
//
//	f, err := fsys.CreateExcl("000000001.bin.tmp")
//	if err != nil {
//		return err
//	}
//	if _, err := f.Write(payload); err != nil {
//		f.Close()
//		return err
//	}
//	if err := f.Sync(); err != nil { // the bytes are durable
//		f.Close()
//		return err
//	}
//	if err := f.Close(); err != nil {
//		return err
//	}
//	if err := fsys.Rename("000000001.bin.tmp", "000000001.bin"); err != nil {
//		return err // fs.ErrExist: the name was taken, nothing was replaced
//	}
//	return fsys.SyncDir(".") // the new name is durable
package osfs

// Name is this backend's name in a spool's backend option (backend=os),
// the default.
const Name = "os"
