// Package osfs is the real-filesystem backend of mqb: a core.FS confined to
// one spool root directory on Linux.
//
// What it promises beyond the core.FS contract:
//
//   - Confinement. Every name is resolved from a descriptor of the root,
//     held open for the life of the FS, with openat2(RESOLVE_BENEATH |
//     RESOLVE_NO_SYMLINKS), or one element at a time with O_NOFOLLOW where
//     openat2 is unavailable. No name reaches outside the root and no
//     symbolic link below it is followed (ErrSymlink). Descriptors of the
//     subdirectories used last are kept for Rename, Remove and Mkdir (see
//     FS).
//   - Exclusive names. CreateExcl uses O_EXCL; Rename uses
//     renameat2(RENAME_NOREPLACE), or link then unlink where the filesystem
//     lacks it, so neither ever replaces an existing name.
//   - Durability. File.Sync is fsync, SyncDir is fsync on the directory,
//     SyncAll (core.FSSyncer) is syncfs.
//   - Claims. Lock is a non-blocking flock(2), released by the kernel when
//     the holder dies; it conflicts with other processes and with other
//     Claims of the same process.
//   - Wake-ups. WatchDir (core.DirWatcher) uses inotify.
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
