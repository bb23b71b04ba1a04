package benchrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSys writes a sysfs tree with one virtio device of the given ID and
// feature bits, and the page_reporting parameters given (name: value).
func fakeSys(t *testing.T, id, features string, params map[string]string) string {
	t.Helper()
	sys := t.TempDir()
	dev := filepath.Join(sys, "bus/virtio/devices/virtio0")
	require.NoError(t, os.MkdirAll(dev, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "device"), []byte(id+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dev, "features"), []byte(features+"\n"), 0o644))
	dir := filepath.Join(sys, "module/page_reporting/parameters")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, v := range params {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644))
	}
	return sys
}

func TestFreePageReportingFromSysfs(t *testing.T) {
	const reporting = "0110010100000000" // STATS_VQ, DEFLATE_ON_OOM, REPORTING (bit 5), bit 7
	params := map[string]string{"page_reporting_order": "9", "min_free_ms": "0"}
	pageKiB := os.Getpagesize() >> 10

	got := freePageReportingAt(fakeSys(t, "0x0005", reporting, params))
	assert.Contains(t, got, "virtio-balloon free page reporting")
	assert.Contains(t, got, "blocks of "+FormatSize(int64(pageKiB)<<(10+9))+" and up")
	assert.Contains(t, got, "min_free_ms=0")

	upstream := freePageReportingAt(fakeSys(t, "0x0005", reporting, map[string]string{"page_reporting_order": "10"}))
	assert.NotContains(t, upstream, "min_free_ms", "a kernel without the parameter")
	assert.Contains(t, upstream, "blocks of "+FormatSize(int64(pageKiB)<<(10+10)))

	assert.Empty(t, freePageReportingAt(fakeSys(t, "0x0005", "0110000100000000", params)), "a balloon without REPORTING")
	assert.Empty(t, freePageReportingAt(fakeSys(t, "0x0002", reporting, params)), "a block device, not a balloon")
	assert.Empty(t, freePageReportingAt(t.TempDir()), "no virtio devices")
}

func TestMemoryReportingInTheTextReport(t *testing.T) {
	rep := &Report{Machine: Machine{Dir: "/d", FSType: "ext4", MemoryReporting: "virtio-balloon free page reporting"}, Rounds: 1}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteText(&buf))
	head, _, _ := strings.Cut(buf.String(), "\n\n")
	assert.Contains(t, head, "memory: freed pages go back to the host (virtio-balloon free page reporting)")

	rep.Machine.MemoryReporting = ""
	buf.Reset()
	require.NoError(t, rep.WriteText(&buf))
	assert.NotContains(t, buf.String(), "memory:")
}

func TestMemAvailable(t *testing.T) {
	dir := t.TempDir()
	info := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(info, []byte("MemTotal:       24683712 kB\nMemFree:        23321088 kB\nMemAvailable:   24112640 kB\nBuffers:            2048 kB\n"), 0o600))
	assert.Equal(t, int64(24112640)<<10, memAvailable(info))
	require.NoError(t, os.WriteFile(info, []byte("MemTotal:       24683712 kB\n"), 0o600))
	assert.Zero(t, memAvailable(info), "no MemAvailable line")
	assert.Zero(t, memAvailable(filepath.Join(dir, "missing")))
}

// TestTouchMemory touches 64 MiB and checks that it is handed back: the
// process's resident set does not keep it.
func TestTouchMemory(t *testing.T) {
	before := residentBytes(t)
	require.NoError(t, touchMemory(64<<20))
	assert.Less(t, residentBytes(t)-before, int64(32<<20))
}

func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.GreaterOrEqual(t, len(f), 2)
	pages, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	return pages * int64(os.Getpagesize())
}
