//go:build linux

package cli_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// largePayload is the size of the payload of TestLargePayloadStreams.
const largePayload = 1 << 30

// maxLargeRSS is the peak resident memory allowed to a copy of it.
const maxLargeRSS = 64 << 20

// TestLargePayloadStreams copies one 1 GiB payload file (format=raw) ->
// dir-spool -> drop zone on /dev/shm with the mqb binary, and requires each
// process's peak RSS (wait4's ru_maxrss) to stay under 64 MiB and the
// output to be byte for byte the input. It also kills each copy with
// SIGKILL in the middle: nothing partial is visible, and a rerun completes.
func TestLargePayloadStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 1 GiB several times; skipped with -short")
	}
	dir := shmDir(t, 4*largePayload)
	in := filepath.Join(dir, "big.bin")
	want := writePattern(t, in, largePayload)
	spool, zone := filepath.Join(dir, "spool"), filepath.Join(dir, "zone")
	fileToSpool := []string{"copy", "--drain", "--from", "file://" + in + "?format=raw", "--to", "dir-spool://" + spool}
	spoolToZone := []string{"copy", "--drain", "--from", "dir-spool://" + spool, "--to", "dropzone://" + zone + "?format=raw"}

	// kill -9 while the payload is being written under its .tmp name: no
	// chunk becomes visible.
	killWhenWriting(t, fileToSpool, spool, ".tmp")
	assert.Empty(t, payloadFiles(t, spool), "a killed copy left a visible chunk")
	rss := runMeasured(t, fileToSpool...)
	assert.Less(t, rss, int64(maxLargeRSS), "file -> spool peak RSS")
	require.Len(t, payloadFiles(t, spool), 1)
	for _, f := range files(t, spool) {
		assert.False(t, strings.HasSuffix(f, ".tmp"), "the rerun left the killed copy's %s", f)
	}

	killWhenWriting(t, spoolToZone, zone, ".partial")
	assert.Empty(t, visibleFiles(t, zone), "a killed copy published a file")
	rss = runMeasured(t, spoolToZone...)
	assert.Less(t, rss, int64(maxLargeRSS), "spool -> drop zone peak RSS")
	out := visibleFiles(t, zone)
	require.Len(t, out, 1)
	assert.Equal(t, want, sumFile(t, filepath.Join(zone, out[0])), "the drop-zone file is not the input byte for byte")
	assert.Empty(t, payloadFiles(t, spool), "the acknowledged chunk is still in the spool")
	for _, f := range files(t, zone) {
		assert.False(t, strings.HasSuffix(f, ".partial"), "the rerun left the killed copy's %s", f)
	}
}

// shmDir returns a fresh directory on /dev/shm, skipping the test when
// there is not room for need bytes.
func shmDir(t *testing.T, need int64) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || int64(st.Bavail)*st.Bsize < need {
		t.Skipf("needs %d MiB free on /dev/shm", need>>20)
	}
	dir, err := os.MkdirTemp("/dev/shm", "mqb-large-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// writePattern writes size bytes that differ in every MiB to name and
// returns their SHA-256.
func writePattern(t *testing.T, name string, size int64) [32]byte {
	f, err := os.Create(name)
	require.NoError(t, err)
	defer f.Close()
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i*31 ^ i>>7)
	}
	h := sha256.New()
	for off := int64(0); off < size; off += int64(len(block)) {
		binary.LittleEndian.PutUint64(block, uint64(off))
		_, err := f.Write(block)
		require.NoError(t, err)
		h.Write(block)
	}
	return [32]byte(h.Sum(nil))
}

func sumFile(t *testing.T, name string) [32]byte {
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return [32]byte(h.Sum(nil))
}

// runMeasured runs mqb to a clean end and returns its peak RSS in bytes:
// the largest VmHWM read from /proc while it runs. wait4's ru_maxrss would
// not do: a child started with vfork begins with the parent's high-water
// mark, so it reports the test binary's peak whenever that is larger.
func runMeasured(t *testing.T, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(mqb, args...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	for tick := time.NewTicker(5 * time.Millisecond); ; <-tick.C {
		peak = max(peak, vmHWM(cmd.Process.Pid))
		select {
		case err := <-done:
			tick.Stop()
			require.NoError(t, err, "mqb %s:\n%s", strings.Join(args, " "), out.String())
			t.Logf("mqb %s: peak RSS %d KiB, %v", strings.Join(args, " "), peak>>10, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			return peak
		default:
		}
	}
}

// vmHWM returns the peak resident set of process pid in bytes, or 0 once
// it has exited.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10
		}
	}
	return 0
}

// killWhenWriting starts mqb and kills it with SIGKILL once a file ending
// in suffix under dir holds some bytes, but not all of them.
func killWhenWriting(t *testing.T, args []string, dir, suffix string) {
	t.Helper()
	cmd := exec.Command(mqb, args...)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("mqb %v ended (%v) before it could be killed mid-copy", args, err)
		default:
		}
		if size := writingSize(dir, suffix); size > 0 && size < largePayload {
			require.NoError(t, cmd.Process.Kill())
			<-exited
			t.Logf("killed mqb %s with %d MiB written", args[2:], size>>20)
			return
		}
		time.Sleep(time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	t.Fatalf("mqb %v: never saw a %s file being written under %s", args, suffix, dir)
}

// writingSize is the size of the first file ending in suffix in dir.
func writingSize(dir, suffix string) int64 {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			if fi, err := e.Info(); err == nil {
				return fi.Size()
			}
		}
	}
	return 0
}

// visibleFiles lists the names in dir that do not start with a dot.
func visibleFiles(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}
