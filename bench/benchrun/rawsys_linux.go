package benchrun

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// rawBatchStrategies are the fsync=batch baselines measured here.
var rawBatchStrategies = []string{RawPerFile, RawConcurrent, RawSyncfs}

func rawFsync(fd int) error  { return unix.Fsync(fd) }
func rawSyncfs(fd int) error { return unix.Syncfs(fd) }

// rawRename renames within the directory dirfd without replacing.
func rawRename(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// rawReadNames lists the directory fd (at offset 0) with getdents64.
func rawReadNames(fd int, buf []byte) ([]string, error) {
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// syncfsPath flushes the filesystem holding dir (syncfs).
func syncfsPath(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}

// rawCountNames counts the entries of the directory fd (at offset 0) with
// getdents64, without building their names.
func rawCountNames(fd int, buf []byte) (int, error) {
	count := 0
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return count, err
		}
		for b := buf[:n]; len(b) > 18; {
			reclen := int(binary.NativeEndian.Uint16(b[16:])) // d_reclen of struct linux_dirent64
			if reclen == 0 || reclen > len(b) {
				break
			}
			count++
			b = b[reclen:]
		}
	}
}
