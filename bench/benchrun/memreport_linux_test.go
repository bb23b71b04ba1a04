package benchrun

import (
	"bytes"
	"os"
	"path/filepath"
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
