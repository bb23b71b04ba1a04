//go:build unix

package mqtt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// lockFile takes a non-blocking exclusive flock on name in dir, which it
// makes (mode 0700) if missing and uses only if it is a real directory of
// this user's that no one else may write. It records the pid in the file.
// When another holds the lock it fails with errSessionInUse and that
// holder's pid, if recorded.
func lockFile(dir, name string) (*os.File, int, error) {
	if err := privateDir(dir); err != nil {
		return nil, 0, err
	}
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
		return nil, pid, errSessionInUse
	} else if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, 0, nil
}

// privateDir makes dir if it is missing and checks that it is a directory,
// not a link, owned by this user and writable by no one else.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is not a private directory of this user", dir)
	}
	return nil
}
