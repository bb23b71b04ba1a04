package benchrun

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// fsMagics names the statfs f_type values one is likely to meet.
var fsMagics = map[int64]string{
	0xEF53:     "ext2/3/4",
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x2fc12fc1: "zfs",
	0xF2F52010: "f2fs",
	0x794c7630: "overlayfs",
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0x65735546: "fuse",
	0x4d44:     "vfat",
	0x5346544e: "ntfs",
	0x01021997: "9p",
	0x62656572: "sysfs",
}

// DescribeMachine reports the filesystem holding dir (statfs type, and the
// device and options of its mount) and the machine.
func DescribeMachine(dir string) Machine {
	m := Machine{Dir: dir, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GOARCH: runtime.GOARCH,
		MemoryReporting: freePageReporting()}
	if abs, err := filepath.Abs(dir); err == nil {
		m.Dir = abs
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil {
		magic := int64(st.Type)
		m.FSMagic = fmt.Sprintf("0x%x", magic)
		m.FSType = fsMagics[magic]
		if m.FSType == "" {
			m.FSType = "unknown"
		}
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		m.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	if mp, fstype, dev, opts, ok := mountOf(m.Dir); ok {
		m.MountPoint, m.Device, m.MountOptions = mp, dev, opts
		if m.FSType == "ext2/3/4" || m.FSType == "unknown" {
			m.FSType = fstype
		}
	}
	return m
}

// mountOf finds the mount holding path in /proc/self/mountinfo: the entry
// with the longest mount point that is a prefix of path.
func mountOf(path string) (mountPoint, fstype, device, options string, ok bool) {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 6 || len(fields) < sep+3 {
			continue
		}
		mp := unescapeMount(fields[4])
		if !(path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) || len(mp) < len(mountPoint) {
			continue
		}
		mountPoint, fstype, device, ok = mp, fields[sep+1], fields[sep+2], true
		options = fields[5]
		if len(fields) > sep+3 && fields[sep+3] != "" {
			options += "," + fields[sep+3]
		}
	}
	return
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}
