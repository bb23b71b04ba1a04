package benchrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// virtioBalloonID is the virtio device ID of a memory balloon, and
// balloonReportingBit the feature bit by which its driver hands free
// memory back to the host (VIRTIO_BALLOON_F_REPORTING).
const (
	virtioBalloonID     = "0x0005"
	balloonReportingBit = 5
)

// freePageReporting says how this virtual machine gives freed memory back
// to its host, or "" when it does not. A page the host has taken back
// costs a fault on the host when the guest writes to it again, so a step
// that is handed such pages runs several times slower whichever arm it
// is (docs/guide/benchmarks.md, "Memory the host takes back").
func freePageReporting() string { return freePageReportingAt("/sys") }

// freePageReportingAt is freePageReporting with sysfs mounted at sys.
func freePageReportingAt(sys string) string {
	devices, _ := filepath.Glob(filepath.Join(sys, "bus/virtio/devices/*"))
	for _, d := range devices {
		id, _ := os.ReadFile(filepath.Join(d, "device"))
		features, _ := os.ReadFile(filepath.Join(d, "features"))
		if strings.TrimSpace(string(id)) != virtioBalloonID ||
			len(features) <= balloonReportingBit || features[balloonReportingBit] != '1' {
			continue
		}
		return "virtio-balloon free page reporting" + reportingParams(filepath.Join(sys, "module/page_reporting/parameters"))
	}
	return ""
}

// reportingParams describes the page_reporting module's parameters where
// the kernel has them: the smallest block it reports and, on kernels that
// add it, how long a page must stay free before it is reported.
func reportingParams(dir string) string {
	var parts []string
	if order, err := readSysInt(filepath.Join(dir, "page_reporting_order")); err == nil {
		parts = append(parts, "blocks of "+FormatSize(int64(os.Getpagesize())<<order)+" and up")
	}
	if ms, err := readSysInt(filepath.Join(dir, "min_free_ms")); err == nil {
		parts = append(parts, fmt.Sprintf("min_free_ms=%d", ms))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func readSysInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// touchMemory writes to n bytes of fresh anonymous memory and unmaps them
// before a produce trial, so that the pages its arms write into (the page
// cache, or tmpfs itself) are ones the host has backed a moment ago, at
// the head of the free lists, not ones it took back minutes before and
// must find again at the first write. Without it, on this machine's tmpfs,
// the arms of one 1 MiB fsync=batch trial at batch 256 took 217 ms to
// 1.31 s each, whichever arm it was; with it, 212 to 282 ms (one 758 ms)
// (docs/guide/benchmarks.md, "Memory touched before a produce trial"). It
// touches at most half the memory the kernel calls available.
func touchMemory(n int64) error {
	n = min(n, memAvailable("/proc/meminfo")/2)
	if n <= 0 {
		return nil
	}
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_ANONYMOUS|unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("benchrun: touching %s of memory before the trial: %w", FormatSize(n), err)
	}
	return unix.Munmap(b)
}

// memAvailable returns MemAvailable from the meminfo file at path, in
// bytes, or 0 when it cannot tell.
func memAvailable(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "MemAvailable:" && f[2] == "kB" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return kib << 10
		}
	}
	return 0
}
