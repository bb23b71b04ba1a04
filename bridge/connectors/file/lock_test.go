//go:build unix

package file_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/mqb-project/mqb/bridge"
)

// Two targets of one file, as two routes of one mqb run would have: the
// second fails at Connect and, with append=false, empties nothing; once the
// first is closed, the second connects.
func TestSecondWriterRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.jsonl")
	ctx := context.Background()
	first := target(t, "file://"+p+"?format=json")
	require.NoError(t, first.WriteBatch(ctx, msgs(`{"a":1}`)))
	for _, url := range []string{"file://" + p + "?format=json", "file://" + p + "?format=json&append=false"} {
		second := newTarget(t, url)
		err := second.Connect(ctx)
		require.ErrorIs(t, err, bridge.ErrPermanent, url)
		assert.Contains(t, err.Error(), "output "+p+" is being written by another route of this mqb process", url)
	}
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":1}\n", string(b), "the refused writers changed nothing")
	require.NoError(t, first.Close(ctx, nil))
	second := target(t, "file://"+p+"?format=json")
	require.NoError(t, second.WriteBatch(ctx, msgs(`{"a":2}`)))
	b, _ = os.ReadFile(p)
	assert.Equal(t, "{\"a\":1}\n{\"a\":2}\n", string(b))
}

// A writer in another process: the error names its pid (on Linux, from
// /proc/locks).
func TestWriterInAnotherProcessNamed(t *testing.T) {
	if os.Getenv("MQB_TEST_HOLD_LOCK") != "" {
		holdLock(os.Getenv("MQB_TEST_HOLD_LOCK"))
		return
	}
	p := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterInAnotherProcessNamed$")
	cmd.Env = append(os.Environ(), "MQB_TEST_HOLD_LOCK="+p)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	err = newTarget(t, "file://"+p).Connect(context.Background())
	require.ErrorIs(t, err, bridge.ErrPermanent)
	want := "another process"
	if runtime.GOOS == "linux" {
		want = fmt.Sprintf("pid %d on this host", cmd.Process.Pid)
	}
	assert.Contains(t, err.Error(), "output "+p+" is being written by "+want)
}

// holdLock flocks path as a file target does, says so, and waits for its
// standard input to close.
func holdLock(path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// A program that takes no lock appends to the file, or cuts it, between
// two batches: the next batch is refused and what that program left stays.
func TestFileChangedUnderTheTargetStopsIt(t *testing.T) {
	ctx := context.Background()
	for name, change := range map[string]func(p string) error{
		"appended": func(p string) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("{\"other\":1}\n")
			return err
		},
		"cut": func(p string) error { return os.Truncate(p, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			for _, format := range []string{"json", "raw"} {
				p := filepath.Join(t.TempDir(), "out")
				tgt := target(t, "file://"+p+"?format="+format)
				require.NoError(t, tgt.WriteBatch(ctx, msgs(`{"a":1}`)))
				before, _ := os.ReadFile(p)
				require.NoError(t, change(p))
				changed, _ := os.ReadFile(p)
				require.NotEqual(t, before, changed)
				err := tgt.WriteBatch(ctx, msgs(`{"a":2}`))
				require.ErrorIs(t, err, bridge.ErrPermanent, format)
				assert.Contains(t, err.Error(), "another program wrote to it or cut it", format)
				after, _ := os.ReadFile(p)
				assert.Equal(t, string(changed), string(after), "%s: the batch was not written", format)
			}
		})
	}
}
