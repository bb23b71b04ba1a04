//go:build linux

package conformance_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqb-project/mqb/conformance"
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
	for _, sc := range []string{"pwrite64", "ftruncate", "fsync", "write"} {
		t.Run(sc, func(t *testing.T) {
			kills, n := 0, 1
			for ; n <= limit; n++ {
				if !claimKillRound(t, strace, sc, n) {
					break
				}
				kills++
			}
			if n > limit && !testing.Short() {
				t.Fatalf("the producer still made a %dth %s call", limit, sc)
			}
			line := fmt.Sprintf("claim updates: producer killed at each of its %d %s calls; no sequence number reused, the live reader kept delivering", kills, sc)
			t.Log(line)
			conformance.Report(t, line)
		})
	}
}

// claimKillRound runs one round (see TestClaimUpdateKilled) and reports
// whether the producer under test was killed.
func claimKillRound(t *testing.T, strace, sc string, n int) bool {
	t.Helper()
	dir := scratchDir(t)
	// 4 digits: the high-water mark moves 10 numbers at a time, so the
	// producer under test updates it as it opens, once while it writes, and
	// as it closes.
	const layout = "naming_pattern={seq:04}&fsync=batch&poll_interval=20ms"
	what := fmt.Sprintf("producer killed at %s #%d", sc, n)
	run := func(h *helper) {
		t.Helper()
		if err := h.wait(time.Minute); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	first := startHelper(t, "producer", helperParams{dir: dir, query: layout, gen: 1, count: 3, batch: 1})
	run(first)
	reader := startHelper(t, "consumer", helperParams{dir: dir, query: layout + "&drain_on_read=false", gen: 2, batch: 4})
	defer reader.kill()
	if !waitFor(reader, 30*time.Second, func(ev []string) bool { return ev[0] == "got" && ev[2] == helperID(1, 2) }) {
		t.Fatalf("%s: the live reader did not deliver the first producer's messages: %q", what, reader.tail())
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
	drainer := startHelper(t, "consumer", helperParams{dir: dir, query: layout, gen: 4, batch: 16, exit: true})
	run(drainer)
	var used uint64 // every number acknowledged or delivered so far, plus 1
	for _, h := range []*helper{first, victim, drainer, reader} {
		for _, ev := range h.events() {
			if ev[0] == "acked" || ev[0] == "got" {
				s, _ := strconv.ParseUint(ev[1], 10, 64)
				used = max(used, s+1)
			}
		}
	}
	last := startHelper(t, "producer", helperParams{dir: dir, query: layout, gen: 5, count: 2, batch: 1})
	run(last)
	for _, ev := range last.events() {
		if ev[0] != "acked" {
			continue
		}
		if s, _ := strconv.ParseUint(ev[1], 10, 64); s < used {
			t.Fatalf("%s, then drained: the next producer wrote %s at sequence %d, but numbers up to %d were used before: a number was reused",
				what, ev[2], s, used-1)
		}
	}
	if !waitFor(reader, 30*time.Second, func(ev []string) bool { return ev[0] == "got" && ev[2] == helperID(5, 1) }) {
		t.Fatalf("%s, then drained: the live drain_on_read=false reader did not deliver the next producer's messages (last output %q)", what, reader.tail())
	}
	return killed
}

// waitFor waits until one of h's output lines satisfies ok.
func waitFor(h *helper, d time.Duration, ok func(ev []string) bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, ev := range h.events() {
			if len(ev) >= 3 && ok(ev) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
