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
// holder's pid, if recorded. The holder removes the file when it lets go
// (unlockFile), so files do not pile up; a lock taken on a file that was
// removed meanwhile is let go and taken again on the new one.
func lockFile(dir, name string) (*os.File, int, error) {
	if err := privateDir(dir); err != nil {
		return nil, 0, err
	}
	path := filepath.Join(dir, name)
	for range 10 {
		f, pid, err := lockOnce(path)
		if f != nil || err != nil {
			return f, pid, err
		}
	}
	return nil, 0, fmt.Errorf("lock %s: it kept being removed", path)
}

// lockOnce takes the lock of path, or returns nil, 0, nil when the file it
// locked is no longer the one at path.
func lockOnce(path string) (*os.File, int, error) {
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
	var held, now unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close() // removed by the holder that let go meanwhile
		return nil, 0, nil
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, 0, nil
}

// unlockFile removes the lock file f, which this process holds locked,
// and lets go of the lock.
func unlockFile(f *os.File) {
	os.Remove(f.Name())
	f.Close()
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
