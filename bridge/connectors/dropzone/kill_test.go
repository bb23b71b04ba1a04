//go:build unix

package dropzone_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
)

// The crash tests run the connector in a child process, this test binary
// started again with childEnv set, under strace, which kills it with
// SIGKILL at the k-th call of one system call; then they check what the
// next process finds.
const (
	childEnv = "MQB_DROPZONE_CHILD" // write, read, publish or recover
	zoneEnv  = "MQB_DROPZONE_ZONE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := child(mode, os.Getenv(zoneEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// say writes one line to stdout at once, unbuffered, so that the parent
// knows every acknowledgement made before the kill.
func say(format string, args ...any) {
	os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
}

const killRecords = 12

func child(mode, zone string) error {
	ctx := context.Background()
	e := env()
	switch mode {
	case "write":
		tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines&roll_count=5&roll_interval=0s"})
		if err != nil {
			return err
		}
		if err := tgt.Connect(ctx); err != nil {
			return err
		}
		for i := 0; i < killRecords; i += 2 {
			a, b := fmt.Sprintf("r%03d", i), fmt.Sprintf("r%03d", i+1)
			if err := tgt.WriteBatch(ctx, msgs(a, b)); err != nil {
				return err
			}
			say("acked %s %s", a, b)
		}
		return tgt.Close(ctx, nil)
	case "read":
		return childRead(ctx, e, zone)
	case "publish":
		tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines&roll_count=1"})
		if err != nil {
			return err
		}
		if err := tgt.Connect(ctx); err != nil {
			return err
		}
		return tgt.WriteBatch(ctx, msgs("ours"))
	case "recover":
		tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines"})
		if err != nil {
			return err
		}
		if err := tgt.Connect(ctx); err != nil {
			return err
		}
		return tgt.Close(ctx, nil)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func childRead(ctx context.Context, e *bridge.Env, zone string) error {
	src, _, err := e.NewSource(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines"})
	if err != nil {
		return err
	}
	src.(bridge.Drainer).SetDrain(true)
	if err := src.Connect(ctx); err != nil {
		return err
	}
	defer src.Close(ctx)
	for {
		ms, ack, err := src.ReadBatch(ctx, 1)
		if errors.Is(err, bridge.ErrEndOfInput) {
			return nil
		}
		if err != nil {
			return err
		}
		say("got %s", ms[0].Payload)
		if err := ack(ctx, nil); err != nil {
			return err
		}
		say("acked %s", ms[0].Payload)
	}
}

// needStrace skips the test when strace cannot kill a process here.
func needStrace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed: the crash tests need it to kill the process at a system call")
	}
	if out, err := exec.Command("strace", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (%v): %s", err, out)
	}
}

// killed runs the child mode on zone under strace, killed at the k-th call
// of syscall. It returns the child's stdout lines and whether it was
// killed (false: it ran to the end before the k-th call).
func killed(t *testing.T, mode, zone, syscallName string, k int) ([]string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-o", "/dev/null",
		"-e", "trace="+syscallName, "-e", fmt.Sprintf("inject=%s:signal=SIGKILL:when=%d", syscallName, k),
		"--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, zoneEnv+"="+zone)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var lines []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err == nil {
		return lines, false
	}
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) && ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("the child failed without being killed: %v\n%s", err, stderr.String())
	}
	return lines, true
}

// acked returns the words after "acked" in lines.
func ackedIn(lines []string, verb string) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, verb+" "); ok {
			for _, w := range strings.Fields(rest) {
				out[w] = true
			}
		}
	}
	return out
}

// killLoop kills the child at the 1st, 2nd, ... call of each syscall until
// it runs to the end, calling check after each run on a fresh zone made by
// setup.
func killLoop(t *testing.T, mode string, syscalls []string, setup func(t *testing.T, zone string), check func(t *testing.T, zone string, lines []string)) {
	needStrace(t)
	kills := 0
	for _, sc := range syscalls {
		for k := 1; ; k++ {
			require.Less(t, k, 200, "the child never ran to the end")
			zone := filepath.Join(t.TempDir(), "zone")
			require.NoError(t, os.Mkdir(zone, 0o700))
			setup(t, zone)
			lines, wasKilled := killed(t, mode, zone, sc, k)
			ok := t.Run(fmt.Sprintf("%s#%d", sc, k), func(t *testing.T) { check(t, zone, lines) })
			if !ok || !wasKilled {
				break
			}
			kills++
		}
	}
	t.Logf("%s: %d kills checked", mode, kills)
	require.Greater(t, kills, len(syscalls), "the child was hardly ever killed: is the injection working?")
}

// TestKilledWriterLosesNothingAcknowledged: the writer is killed at every
// rename, fsync and unlink in turn (a kill at an fsync leaves bytes past
// the acknowledged length); the next writer publishes every acknowledged
// record exactly once, in order, with nothing torn.
func TestKilledWriterLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	killLoop(t, "write", []string{"renameat2", "fsync", "unlinkat"},
		func(*testing.T, string) {},
		func(t *testing.T, zone string, lines []string) {
			acked := ackedIn(lines, "acked")
			rec := newTarget(t, env(), "dropzone://"+zone+"?format=lines")
			require.NoError(t, rec.Close(context.Background(), nil))
			var got []string
			for _, content := range readVisible(t, zone) {
				got = append(got, strings.Split(strings.TrimSuffix(content, "\n"), "\n")...)
			}
			if len(got) == 1 && got[0] == "" {
				got = nil
			}
			require.GreaterOrEqual(t, len(got), len(acked), "published %v, acknowledged %v", got, acked)
			for i, r := range got {
				require.Equal(t, fmt.Sprintf("r%03d", i), r, "published records %v are not the written ones in order, once each", got)
			}
		})
}

// TestKilledRecoveryFinishesTheCut: the writer that recovers a torn hidden
// file is killed at every step of cutting it back; the next one publishes
// exactly the acknowledged bytes, once.
func TestKilledRecoveryFinishesTheCut(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	killLoop(t, "recover", []string{"renameat2", "unlinkat", "fsync", "write"},
		func(t *testing.T, zone string) {
			write(t, zone, ".x-000001.txt.4.partial", "a\nb\nc-torn")
			write(t, zone, ".y-000002.txt.2.partial", "d\n")
		},
		func(t *testing.T, zone string, _ []string) {
			rec := newTarget(t, env(), "dropzone://"+zone+"?format=lines")
			require.NoError(t, rec.Close(context.Background(), nil))
			vis, _ := listFiles(t, zone)
			assert.Equal(t, []string{"x-000001.txt", "y-000002.txt"}, vis)
			assert.Equal(t, []string{"a\nb\n", "d\n"}, readVisible(t, zone))
		})
}

// TestKilledReaderResumes: the reader is killed at every step of saving
// its progress; the next reader never delivers again a record whose
// acknowledgement returned, and skips none.
func TestKilledReaderResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("kills many processes")
	}
	var all []string
	for f := 1; f <= 2; f++ {
		for r := 1; r <= 2; r++ {
			all = append(all, fmt.Sprintf("f%d-%d", f, r))
		}
	}
	killLoop(t, "read", []string{"renameat2", "fsync", "unlinkat"},
		func(t *testing.T, zone string) {
			for f := 1; f <= 2; f++ {
				write(t, zone, "f"+strconv.Itoa(f)+".txt", strings.Join(all[(f-1)*2:f*2], "\n")+"\n")
			}
		},
		func(t *testing.T, zone string, lines []string) {
			acked, gotByChild := ackedIn(lines, "acked"), ackedIn(lines, "got")
			rest := &collect{}
			require.NoError(t, runFrom(t, env(), "dropzone://"+zone+"?format=lines", rest, 3))
			seen := map[string]bool{}
			for _, p := range rest.payloads() {
				assert.False(t, acked[p], "%s was delivered again after its acknowledgement returned", p)
				assert.False(t, seen[p], "%s delivered twice by one reader", p)
				seen[p] = true
			}
			for _, r := range all {
				if !acked[r] && !seen[r] {
					// Only a record whose ack was under way at the kill
					// may have been recorded without the child saying so.
					assert.True(t, gotByChild[r], "%s was never delivered", r)
				}
			}
			b, err := os.ReadFile(filepath.Join(zone, dropzone.DefaultStateFile))
			require.NoError(t, err)
			var st struct{ Done []string }
			require.NoError(t, json.Unmarshal(b, &st))
			assert.Equal(t, []string{"f1.txt", "f2.txt"}, st.Done)
		})
}

// TestPublishRaceWithAnotherProcess: strace holds the writer inside the
// system call that publishes its file, long after any check it could have
// made, while another process creates a file under the same name. The
// other file is kept; the writer publishes under another name.
func TestPublishRaceWithAnotherProcess(t *testing.T) {
	needStrace(t)
	zone := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2",
		"-e", "inject=rename,renameat,renameat2:delay_enter=1500000", "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=publish", zoneEnv+"="+zone)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var final string
	require.Eventually(t, func() bool {
		_, hidden := listFiles(t, zone)
		for _, h := range hidden {
			if body, ok := strings.CutSuffix(h, ".partial"); ok {
				final = strings.TrimPrefix(body[:strings.LastIndexByte(body, '.')], ".")
				return true
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond, "the writer never created its hidden file")
	time.Sleep(300 * time.Millisecond) // the writer is now inside the delayed rename
	f, err := os.OpenFile(filepath.Join(zone, final), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	require.NoError(t, err, "the writer published before the other process could race it")
	_, err = f.WriteString("someone else's\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())

	b, err := os.ReadFile(filepath.Join(zone, final))
	require.NoError(t, err)
	assert.Equal(t, "someone else's\n", string(b), "the other process's file was replaced")
	vis, _ := listFiles(t, zone)
	var ours []string
	for _, n := range vis {
		if b, err := os.ReadFile(filepath.Join(zone, n)); err == nil && string(b) == "ours\n" {
			ours = append(ours, n)
		}
	}
	assert.Len(t, ours, 1, "the writer's record is published once, under another name")
}
