package file

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// writerPID returns the process that holds a flock on f's file, from
// /proc/locks, or 0 when none is listed there. A line reads
// "1: FLOCK  ADVISORY  WRITE 4242 00:1b:98765 0 EOF": the pid, then the
// device's major and minor numbers in hex and the inode.
func writerPID(f *os.File) int {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == want {
			if pid, err := strconv.Atoi(fields[4]); err == nil {
				return pid
			}
		}
	}
	return 0
}
