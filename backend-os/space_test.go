//go:build linux

package osfs_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// smallDisk mounts a tmpfs of size bytes for the test, or skips when the
// test may not mount (not root, no mount command).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// FreeBytes agrees with statfs of the same directory.
func TestFreeBytes(t *testing.T) {
	dir := smallDisk(t, "1m")
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	defer fsys.Close()
	got, err := fsys.FreeBytes()
	require.NoError(t, err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	require.Equal(t, uint64(st.Bavail)*uint64(st.Bsize), got)
	require.InDelta(t, 1<<20, float64(got), 64<<10, "a fresh 1 MiB tmpfs")
}

// A producer with min_free_bytes stops before the filesystem is full: the
// disk never reaches ENOSPC, and what is left free is at least the bound.
func TestMinFreeBytesKeepsTheDiskFromFilling(t *testing.T) {
	dir := smallDisk(t, "1m")
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	defer fsys.Close()
	o := core.DefaultOptions(dir)
	o.Bounds = core.Bounds{MinFreeBytes: 256 << 10, WhenFull: core.WhenFullFail}
	p, err := core.OpenProducer(fsys, o)
	require.NoError(t, err)
	defer p.Close()
	payload := make([]byte, 8<<10)
	var full error
	for i := 0; i < 200 && full == nil; i++ {
		_, full = p.Write(context.Background(), []core.Message{{Payload: payload}})
	}
	require.ErrorIs(t, full, core.ErrSpoolFull)
	require.False(t, errors.Is(full, syscall.ENOSPC), "the disk filled: %v", full)
	free, err := fsys.FreeBytes()
	require.NoError(t, err)
	require.GreaterOrEqual(t, free, uint64(256<<10)-uint64(len(payload)),
		"free space fell below min_free_bytes by more than one chunk's block rounding")
}
