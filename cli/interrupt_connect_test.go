//go:build unix

package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigSpool makes a spool of n empty chunks without sidecars, with raw
// system calls (on tmpfs when there is one), and returns its directory.
func bigSpool(t *testing.T, n int) string {
	t.Helper()
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "mqb-big-spool-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	for i := 1; i <= n; i++ {
		fd, err := syscall.Open(filepath.Join(dir, fmt.Sprintf("%09d.bin", i)), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o600)
		require.NoError(t, err)
		require.NoError(t, syscall.Close(fd))
	}
	return dir
}

// Ctrl-C while a route connects to a large spool (the source counts its
// backlog and checks its layout, the target recovers it, a dead-letter
// spool lists the ids it holds), or while spool stat counts it, stops the
// walk at once: the command exits as any interrupted route does, and every
// chunk is still there or was delivered. The source counts 200,000 chunks
// in well under the 300 ms before the signal on a fast machine (it lists
// names only), so it may be draining by then: what it wrote to stdout
// counts as delivered.
func TestInterruptWhileConnectingToALargeSpool(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a spool of 200000 chunks")
	}
	const chunks = 200_000
	dir := bigSpool(t, chunks)
	spool := "dir-spool://" + dir
	left := chunks // in the spool before each subtest: the source drains some
	for name, args := range map[string][]string{
		"source":      {"copy", "--from", spool, "--to", "stdout://", "--drain"},
		"target":      {"copy", "--from", "stdin://", "--to", spool},
		"dead letter": {"copy", "--from", "stdin://", "--to", "stdout://", "--dead-letter", spool},
		"spool stat":  {"spool", "stat", dir},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(mqb, args...)
			stdin, err := cmd.StdinPipe() // open and silent: the route waits for input
			require.NoError(t, err)
			defer stdin.Close()
			stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			require.NoError(t, cmd.Start())
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			time.Sleep(300 * time.Millisecond)
			select {
			case <-done:
				t.Skipf("mqb %v ended before the signal (a fast machine); stderr: %s", args, stderr)
			default:
			}
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			signalled := time.Now()
			select {
			case <-done:
				t.Logf("exited %v after SIGINT", time.Since(signalled).Round(time.Millisecond))
			case <-time.After(2 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("mqb %v still connecting 2s after SIGINT; stderr: %s", args, stderr)
			}
			assert.Equal(t, 130, cmd.ProcessState.ExitCode(), "stderr: %s", stderr)
			assert.Regexp(t, `mqb: (route )?interrupted: received interrupt\n$`, stderr.String())
			remaining, delivered := countPayloads(t, dir), strings.Count(stdout.String(), "\n")
			t.Logf("%d chunks left, %d delivered", remaining, delivered)
			assert.LessOrEqual(t, remaining, left)
			assert.GreaterOrEqual(t, remaining+delivered, left,
				"an interrupted connect loses nothing: %d chunks left, %d delivered, of %d", remaining, delivered, left)
			left = remaining
		})
	}
}

// countPayloads counts the .bin files of a flat spool.
func countPayloads(t *testing.T, dir string) int {
	t.Helper()
	f, err := os.Open(dir)
	require.NoError(t, err)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	require.NoError(t, err)
	n := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".bin") {
			n++
		}
	}
	return n
}
