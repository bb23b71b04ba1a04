package benchrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
