//go:build darwin || freebsd

package benchrun

import (
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// DescribeMachine reports the filesystem holding dir (statfs type name,
// device and mount point) and the machine.
func DescribeMachine(dir string) Machine {
	m := Machine{Dir: dir, FSType: "unknown", CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GOARCH: runtime.GOARCH}
	if abs, err := filepath.Abs(dir); err == nil {
		m.Dir = abs
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		m.FSType = unix.ByteSliceToString(st.Fstypename[:])
		m.MountPoint = unix.ByteSliceToString(st.Mntonname[:])
		m.Device = unix.ByteSliceToString(st.Mntfromname[:])
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		m.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	return m
}
