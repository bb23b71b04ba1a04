//go:build linux

package osfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
	"github.com/stretchr/testify/require"
)

func init() {
	// A helper process makes all its filesystem calls from one thread, so
	// that strace's count of a system call (kept per thread) counts the
	// calls of the whole run.
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

// needStrace returns the path of strace after checking that it can trace a
// child here. It skips the test when it cannot, or fails it when
// MQB_REQUIRE_SERVICES=1 (.ci/run installs strace).
func needStrace(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("strace")
	if err == nil {
		var out []byte
		if out, err = exec.Command(path, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
			err = fmt.Errorf("strace cannot trace a child here (ptrace refused?): %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("this test kills a producer at a chosen system call with strace: %v; install it with `apt-get install strace`", err)
	if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestClaimUpdateKilled kills a producer process with SIGKILL at its n-th
// call of a system call (strace -e inject=SYSCALL:signal=SIGKILL:when=n),
// for n = 1, 2, ... until a run makes fewer calls. Each round: a first
// producer writes and exits cleanly, a live drain_on_read=false reader
// follows the spool, the producer under test is killed, a consumer drains
// the spool, and a last producer writes. Its numbers must be above every
// number used before, and the live reader, whose cursor is past the old
// ones, must deliver its messages.
func TestClaimUpdateKilled(t *testing.T) {
	strace := needStrace(t)
	limit := 300
	if testing.Short() {
		limit = 6
	}
	// Every call of the ones a claim update makes (pwrite64, fsync; and
	// ftruncate, which earlier versions made); every third write(2), which
	// chunks and the helper's own output make too (every one with -long).
	for _, v := range []struct {
		sc   string
		step int
	}{{"pwrite64", 1}, {"ftruncate", 1}, {"fsync", 1}, {"write", 3}} {
		sc, step := v.sc, v.step
		if longMode() {
			step = 1
		}
		t.Run(sc, func(t *testing.T) {
			kills, n := 0, 1
			for ; n <= limit; n += step {
				if !claimKillRound(t, strace, sc, n) {
					break
				}
				kills++
			}
			if n > limit && !testing.Short() {
				t.Fatalf("the producer still made a %dth %s call", limit, sc)
			}
			every := "each"
			if step > 1 {
				every = fmt.Sprintf("one in %d", step)
			}
			line := fmt.Sprintf("claim updates: producer killed at %s of its %s calls (%d kills); no sequence number reused, the live reader kept delivering", every, sc, kills)
			t.Log(line)
			conformance.Report(t, line)
		})
	}
}

// claimKillRound runs one round (see TestClaimUpdateKilled) and reports
// whether the producer under test was killed. Only that producer is a
// separate process; the others and the reader run in the test.
func claimKillRound(t *testing.T, strace, sc string, n int) bool {
	t.Helper()
	dir := scratchDir(t)
	// 4 digits: the high-water mark moves 10 numbers at a time, so the
	// producer under test updates it as it opens, once while it writes, and
	// as it closes.
	const layout = "naming_pattern={seq:04}&fsync=batch&poll_interval=20ms"
	what := fmt.Sprintf("producer killed at %s #%d", sc, n)
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	defer fsys.Close()
	o, err := core.ParseURL("dir-spool://" + dir + "?" + layout)
	require.NoError(t, err)
	used := produce(t, fsys, o, 1, 3) // every number acknowledged or delivered so far, plus 1
	reader := startLiveReader(t, fsys, o)
	defer reader.stop()
	if !reader.waitFor(helperID(1, 2), 30*time.Second) {
		t.Fatalf("%s: the live reader did not deliver the first producer's messages: %v", what, reader.err())
	}

	victim := startHelper(t, "producer", helperParams{dir: dir, query: layout, gen: 3, count: 12, batch: 3,
		wrap: []string{strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=" + sc,
			"-e", "inject=" + sc + ":signal=SIGKILL:when=" + strconv.Itoa(n), "--"}})
	var killed bool
	select {
	case err := <-victim.exited:
		killed = err != nil
		if killed && strings.HasPrefix(victim.tail(), "fail") {
			t.Fatalf("%s: the producer failed instead: %q", what, victim.tail())
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s: the producer did not end within a minute: %q", what, victim.tail())
	}
	for _, ev := range victim.events() {
		if ev[0] == "acked" {
			s, _ := strconv.ParseUint(ev[1], 10, 64)
			used = max(used, s+1)
		}
	}
	used = max(used, drainSpool(t, fsys, o), reader.end())
	first := produce(t, fsys, o, 5, 2) - 2
	if first < used {
		t.Fatalf("%s, then drained: the next producer wrote at sequence %d, but numbers up to %d were used before: a number was reused",
			what, first, used-1)
	}
	if !reader.waitFor(helperID(5, 1), 30*time.Second) {
		t.Fatalf("%s, then drained: the live drain_on_read=false reader did not deliver the next producer's messages (%v)", what, reader.err())
	}
	return killed
}

// produce writes count messages of generation gen one by one with a new
// producer, closes it, and returns its last sequence number plus 1.
func produce(t *testing.T, fsys core.FS, o core.Options, gen, count int) uint64 {
	t.Helper()
	p, err := core.OpenProducer(fsys, o)
	require.NoError(t, err, "OpenProducer")
	for i := range count {
		id := helperID(gen, i)
		_, err := p.Write(context.Background(), []core.Message{{ID: id, Payload: conformance.MakePayload(id, 10)}})
		require.NoError(t, err, "Write")
	}
	end := p.NextSeq()
	require.NoError(t, p.Close(), "Producer.Close")
	return end
}

// drainSpool consumes and acks every chunk and returns the highest sequence
// number delivered plus 1 (0 if none).
func drainSpool(t *testing.T, fsys core.FS, o core.Options) uint64 {
	t.Helper()
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	require.NoError(t, err, "OpenConsumer")
	defer c.Close()
	var end uint64
	for {
		ds, err := c.Read(context.Background(), 16)
		if errors.Is(err, core.ErrEnd) {
			return end
		}
		if err == nil {
			err = c.Ack(ds...)
		}
		require.NoError(t, err, "drain")
		for _, d := range ds {
			end = max(end, d.Seq+1)
		}
	}
}

// liveReader is a drain_on_read=false consumer running in a goroutine.
type liveReader struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	got     map[string]bool
	last    uint64 // highest sequence delivered plus 1
	readErr error
}

func startLiveReader(t *testing.T, fsys core.FS, o core.Options) *liveReader {
	t.Helper()
	o.DrainOnRead = false
	c, err := core.OpenConsumer(fsys, o)
	require.NoError(t, err, "OpenConsumer(drain_on_read=false)")
	ctx, cancel := context.WithCancel(context.Background())
	r := &liveReader{cancel: cancel, done: make(chan struct{}), got: map[string]bool{}}
	go func() {
		defer close(r.done)
		defer c.Close()
		for {
			ds, err := c.Read(ctx, 16)
			if err == nil {
				err = c.Ack(ds...)
			}
			r.mu.Lock()
			for _, d := range ds {
				r.got[d.MessageID] = true
				r.last = max(r.last, d.Seq+1)
			}
			if err != nil && ctx.Err() == nil {
				r.readErr = err
			}
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *liveReader) stop() { r.cancel(); <-r.done }

func (r *liveReader) end() uint64 { r.mu.Lock(); defer r.mu.Unlock(); return r.last }

func (r *liveReader) err() error { r.mu.Lock(); defer r.mu.Unlock(); return r.readErr }

// waitFor waits until the reader has delivered the message id.
func (r *liveReader) waitFor(id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		ok := r.got[id]
		r.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
