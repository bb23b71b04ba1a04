package cli_test

// End-to-end tests of bounded spools and dead letters against the machine's
// PostgreSQL and Mosquitto (see e2e_services_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadLettersIntoPostgresSurviveKill9 sends 10,000 rows into a table
// with a check constraint that 7 of them violate, scattered through
// 100-row batches, killing mqb with SIGKILL at random points: the 9,993
// good rows land once each, and the 7 bad ones land once each in the
// dead-letter spool with the constraint's name in their metadata.
func TestDeadLettersIntoPostgresSurviveKill9(t *testing.T) {
	conn := svcPostgres(t)
	dir := t.TempDir()
	const n = 10000
	bad := map[int]bool{17: true, 1234: true, 2500: true, 2501: true, 5000: true, 7777: true, 9999: true}
	var lines []string
	for i := range n {
		amount := 10
		if bad[i] {
			amount = -1
		}
		lines = append(lines, fmt.Sprintf(`{"n":%d,"amount":%d}`, i, amount))
	}
	input := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	spool, dead := filepath.Join(dir, "spool"), filepath.Join(dir, "dead")
	code, _ := svcRun(t, "copy", "--drain", "--from", "file://"+input+"?format=json", "--to", "dir-spool://"+spool+"?emit_done=success&fsync=batch")
	require.Equal(t, 0, code)

	table := svcTable(t, conn, "message_id text PRIMARY KEY, n int NOT NULL, amount int NOT NULL CONSTRAINT amount_positive CHECK (amount > 0)")
	args := []string{"copy", "--drain", "--batch-size", "100",
		"--from", "dir-spool://" + spool + "?stop_on_done=true",
		"--to", "postgres://postgres@127.0.0.1/test?table=" + table + "&id_column=message_id",
		"--dead-letter", "dir-spool://" + dead}
	kills := 0
	for range 3 {
		p := svcStart(t, args...)
		time.Sleep(time.Duration(50+rand.IntN(700)) * time.Millisecond)
		select {
		case <-p.done:
			p.done <- nil
		default:
			p.kill9(t)
			kills++
		}
	}
	code, _ = svcRun(t, args...)
	require.Equal(t, 0, code)
	t.Logf("%d runs killed with SIGKILL before the last one finished", kills)

	assert.Equal(t, n-len(bad), svcCount(t, conn, "SELECT count(*) FROM "+table))
	assert.Equal(t, n-len(bad), svcCount(t, conn, "SELECT count(DISTINCT n) FROM "+table), "no duplicate row")
	assert.Empty(t, svcChunks(t, spool), "the source spool is drained")

	got := map[int]int{}
	for _, sc := range sidecars(t, dead) {
		var row struct{ N int }
		require.NoError(t, json.Unmarshal([]byte(sc.payload), &row))
		got[row.N]++
		assert.Contains(t, sc.meta["dead_letter_error"], "amount_positive", "the constraint is named")
		assert.Equal(t, "dir-spool://"+spool+"?stop_on_done=true", sc.meta["dead_letter_source"])
		assert.NotEmpty(t, sc.meta["dead_letter_attempts"])
	}
	want := map[int]int{}
	for i := range bad {
		want[i] = 1
	}
	assert.Equal(t, want, got, "each refused row dead-lettered exactly once")
}

type deadChunk struct {
	payload string
	meta    map[string]string
}

func sidecars(t *testing.T, dir string) []deadChunk {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	require.NoError(t, err)
	sort.Strings(paths)
	var out []deadChunk
	for _, p := range paths {
		payload, err := os.ReadFile(p)
		require.NoError(t, err)
		side, err := os.ReadFile(strings.TrimSuffix(p, ".bin") + ".json")
		require.NoError(t, err)
		var sc struct {
			Metadata map[string]string `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(side, &sc))
		out = append(out, deadChunk{string(payload), sc.Metadata})
	}
	return out
}

// TestBoundedSpoolHoldsBackMQTT feeds MQTT into a spool bounded at 1,000
// messages while the consumer's PostgreSQL is unreachable: the spool never
// holds more than 1,000, the rest waits unacknowledged at the broker, and
// once PostgreSQL is back every message arrives exactly once.
func TestBoundedSpoolHoldsBackMQTT(t *testing.T) {
	svcMosquitto(t)
	conn := svcPostgres(t)
	topic, clientID := svcUnique("mqb-e2e/"), svcUnique("mqb-e2e-")
	svcForgetSession(t, clientID)
	spool := filepath.Join(t.TempDir(), "spool")
	const bound, total = 1000, 1600

	producer := svcStart(t, "copy", "--batch-size", "10",
		"--from", "mqtt://"+svcBroker+"?topic="+topic+"&client_id="+clientID,
		"--to", fmt.Sprintf("dir-spool://%s?max_messages=%d&poll_interval=20ms", spool, bound))
	svcWaitLog(t, producer, regexp.MustCompile(`mqtt source connected`))

	pgAddr := closedPort(t)
	table := svcTable(t, conn, "n int PRIMARY KEY")
	consumerArgs := []string{"copy", "--from", "dir-spool://" + spool,
		"--to", "postgres://postgres@" + pgAddr + "/test?table=" + table}
	consumer := svcStart(t, consumerArgs...)

	var peak atomic.Int64
	stopWatch := watchPeak(t, spool, &peak)
	pub := svcPublisher(t)
	// Mosquitto queues at most 1,000 messages per client by default
	// (max_queued_messages) and drops the rest, so until the spool is full
	// the test publishes in steps the producer has taken in; only the last
	// total-bound messages wait at the broker, well under its limit.
	const step = 100
	for i := range total {
		if i > 0 && i <= bound && i%step == 0 {
			require.Eventually(t, func() bool { return len(svcChunks(t, spool)) >= i }, 60*time.Second, 10*time.Millisecond,
				"the producer takes in what was published:\n%s", producer.log())
		}
		require.NoError(t, svcPublish(pub, topic, fmt.Sprintf(`{"n":%d}`, i)))
		time.Sleep(200 * time.Microsecond)
	}
	require.Eventually(t, func() bool { return len(svcChunks(t, spool)) == bound }, 30*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // the producer now waits for room
	assert.Equal(t, bound, len(svcChunks(t, spool)), "a full spool takes no more")
	assert.Zero(t, svcCount(t, conn, "SELECT count(*) FROM "+table))

	proxyTo(t, pgAddr, "127.0.0.1:5432") // PostgreSQL is reachable again
	deadline := time.Now().Add(90 * time.Second)
	for svcCount(t, conn, "SELECT count(*) FROM "+table) < total {
		require.True(t, time.Now().Before(deadline), "every message arrives once PostgreSQL is back:\n%s\n%s", producer.log(), consumer.log())
		select {
		case <-consumer.done: // it gave up connecting: start it again, as a supervisor would
			consumer.done <- nil
			consumer = svcStart(t, consumerArgs...)
		default:
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopWatch()
	assert.Equal(t, 143, producer.stop(t))
	assert.Equal(t, 143, consumer.stop(t))
	assert.LessOrEqual(t, peak.Load(), int64(bound), "the spool never held more than max_messages")
	assert.Equal(t, total, svcCount(t, conn, "SELECT count(*) FROM "+table))
	t.Logf("peak spool size %d of %d", peak.Load(), bound)
}

// closedPort returns a loopback address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// proxyTo starts forwarding connections to addr to target.
func proxyTo(t *testing.T, addr, target string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// watchPeak records the most payload files dir ever held until the
// returned function is called.
func watchPeak(t *testing.T, dir string, peak *atomic.Int64) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if paths, err := filepath.Glob(filepath.Join(dir, "*.bin")); err == nil && int64(len(paths)) > peak.Load() {
				peak.Store(int64(len(paths)))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}

// TestBoundsAndDeadLetterRefusedAtLint: a zero or negative bound, and a
// dead-letter endpoint that is the source, are configuration errors.
func TestBoundsAndDeadLetterRefusedAtLint(t *testing.T) {
	dir := t.TempDir()
	spool := "dir-spool://" + dir + "/s"
	for name, args := range map[string][]string{
		"max_bytes=0":           {"--from", "stdin://", "--to", spool + "?max_bytes=0"},
		"negative max_messages": {"--from", "stdin://", "--to", spool + "?max_messages=-3"},
		"negative min_free":     {"--from", "stdin://", "--to", spool + "?min_free_bytes=-1GiB"},
		"dead letter = source":  {"--from", spool, "--to", "stdout://", "--dead-letter", spool},
		"dead letter alias":     {"--from", spool, "--to", "stdout://", "--dead-letter", "spool://" + dir + "/./s/"},
		"max-deliveries 0":      {"--from", spool, "--to", "stdout://", "--max-deliveries", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			res := run(t, "", append([]string{"copy", "--drain"}, args...)...)
			assert.Equal(t, 2, res.code, "exit code; stderr:\n%s", res.stderr)
		})
	}
}

// TestWhenFullFailStopsAtOnce: when_full=fail is an error the route does
// not retry, and it says which bound was reached.
func TestWhenFullFailStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	res := run(t, "a\nb\nc\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+dir+"/s?max_messages=2&when_full=fail")
	assert.Equal(t, 1, res.code, res.stderr)
	assert.Contains(t, res.stderr, "spool is full: it holds 2 chunks, max_messages=2")
	assert.NotContains(t, res.stderr, "retrying")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Len(t, payloadFiles(t, dir+"/s"), 2)
}
