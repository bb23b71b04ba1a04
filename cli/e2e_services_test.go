package cli_test

// End-to-end tests of the mqb binary against the machine's PostgreSQL
// (127.0.0.1:5432, trust authentication, database test) and Mosquitto
// (127.0.0.1:1883). Each skips when its server is unreachable, or fails when
// MQB_REQUIRE_SERVICES=1.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	svcPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	svcBroker      = "127.0.0.1:1883"
)

// svcRequire skips (or, with MQB_REQUIRE_SERVICES=1, fails) the test when
// addr does not answer.
func svcRequire(t *testing.T, what, addr, start string) {
	t.Helper()
	var err error
	for range 10 {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	msg := fmt.Sprintf("%s is not reachable at %s (%v); start it with `%s`", what, addr, err, start)
	if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func svcPostgres(t *testing.T) *pgx.Conn {
	t.Helper()
	svcRequire(t, "PostgreSQL", "127.0.0.1:5432", "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start")
	conn, err := pgx.Connect(context.Background(), svcPostgresDSN)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// svcMosquitto checks the broker and holds the broker lock shared with the
// MQTT connector's tests, so that their broker-restart test does not run in
// the middle of these.
func svcMosquitto(t *testing.T) {
	t.Helper()
	svcLockBroker(t)
	svcRequire(t, "Mosquitto", svcBroker, "mosquitto -d -c /etc/mosquitto/mosquitto.conf")
}

func svcUnique(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// svcBinary builds mqb into the test's temporary directory (the build
// cache makes every build after the first one a link).
func svcBinary(t *testing.T) string {
	t.Helper()
	if p, ok := svcBins.Load(t.Name()); ok {
		return p.(string)
	}
	path := filepath.Join(t.TempDir(), "mqb")
	out, err := exec.Command("go", "build", "-o", path, "./cmd/mqb").CombinedOutput()
	require.NoError(t, err, "go build ./cmd/mqb:\n%s", out)
	svcBins.Store(t.Name(), path)
	return path
}

var svcBins sync.Map // test name -> binary

// svcRun runs mqb to the end and returns its exit code and standard error.
func svcRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, svcBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "run mqb %q: %v", args, err)
		code = ee.ExitCode()
	}
	t.Logf("mqb %s -> exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	return code, stderr.String()
}

// svcProc is mqb running in the background.
type svcProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan error
}

func (p *svcProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

func (p *svcProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func svcStart(t *testing.T, args ...string) *svcProc {
	t.Helper()
	p := &svcProc{cmd: exec.Command(svcBinary(t), args...), done: make(chan error, 1)}
	p.cmd.Stderr = p
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// kill9 kills the process with SIGKILL, as a crash or an OOM kill would.
func (p *svcProc) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.awaitKilled(t)
}

// killIfRunning is kill9 of a process that may have ended on its own (a
// drain that finished): it says whether it killed it, and leaves a process
// that ended alone for its exit status to be read.
func (p *svcProc) killIfRunning(t *testing.T) bool {
	t.Helper()
	if len(p.done) > 0 {
		return false
	}
	err := p.cmd.Process.Signal(syscall.SIGKILL)
	if errors.Is(err, os.ErrProcessDone) {
		return false
	}
	require.NoError(t, err)
	p.awaitKilled(t)
	return true
}

func (p *svcProc) awaitKilled(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("mqb did not die")
	}
	p.done <- nil // for the cleanup
}

// stop sends SIGTERM and returns the exit code.
func (p *svcProc) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "mqb ended before SIGTERM:\n%s", p.log())
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("mqb did not stop on SIGTERM:\n%s", p.log())
	}
	p.done <- nil
	return p.cmd.ProcessState.ExitCode()
}

func svcWaitLog(t *testing.T, p *svcProc, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	require.Eventually(t, func() bool { m = re.FindStringSubmatch(p.log()); return m != nil },
		20*time.Second, 20*time.Millisecond, "waiting for %s in:\n%s", re, p.log())
	return m
}

// svcChunks returns the payloads of the spool's chunks, in lexical order
// of their paths.
func svcChunks(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".bin") {
			paths = append(paths, path)
		}
		return err
	})
	require.NoError(t, err)
	sort.Strings(paths)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // consumed meanwhile
		}
		out = append(out, string(b))
	}
	return out
}

func svcTable(t *testing.T, conn *pgx.Conn, defs string) string {
	t.Helper()
	name := svcUnique("mqb_e2e_")
	_, err := conn.Exec(context.Background(), fmt.Sprintf("CREATE TABLE %s (%s)", name, defs))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+name) })
	return name
}

func svcCount(t *testing.T, conn *pgx.Conn, query string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), query).Scan(&n))
	return n
}

// svcPublisher is an MQTT client for the tests. It reconnects by itself,
// and waits for every PUBACK.
func svcPublisher(t *testing.T) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().AddBroker("tcp://" + svcBroker).SetClientID(svcUnique("mqb-e2e-pub-")).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(200 * time.Millisecond)
	c := paho.NewClient(o)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(15*time.Second), "connect to %s", svcBroker)
	require.NoError(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func svcPublish(c paho.Client, topic, payload string) error {
	tok := c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(15 * time.Second) {
		return fmt.Errorf("no PUBACK for %s", payload)
	}
	return tok.Error()
}

// svcForgetSession removes a persistent MQTT session when the test ends.
func svcForgetSession(t *testing.T, clientID string) {
	t.Cleanup(func() {
		c := paho.NewClient(paho.NewClientOptions().AddBroker("tcp://" + svcBroker).SetClientID(clientID).SetCleanSession(true))
		if tok := c.Connect(); tok.WaitTimeout(5*time.Second) && tok.Error() == nil {
			c.Disconnect(100)
		}
	})
}

// TestSeedPostgresExamples runs the seed's first two examples as written,
// with only the paths and the server rewritten: a JSONL file into a spool
// that is marked DONE, then the spool drained into a PostgreSQL table.
func TestSeedPostgresExamples(t *testing.T) {
	conn := svcPostgres(t)
	table := svcTable(t, conn, "order_id int PRIMARY KEY, sku text NOT NULL, qty int NOT NULL, note text")
	dir := t.TempDir()
	input := filepath.Join(dir, "orders.jsonl")
	var lines []string
	for i := 1; i <= 50; i++ {
		lines = append(lines, fmt.Sprintf(`{"order_id":%d,"sku":"SKU-%03d","qty":%d,"note":"ünïcode ✓"}`, i, i, i%7+1))
	}
	require.NoError(t, os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	spool := filepath.Join(dir, "spool", "orders")

	code, _ := svcRun(t, "copy", "--drain",
		"--from", "file://"+input+"?format=json",
		"--to", "dir-spool://"+spool+"?emit_done=success")
	require.Equal(t, 0, code)
	require.FileExists(t, filepath.Join(spool, "DONE"))

	code, stderr := svcRun(t, "copy", "--drain",
		"--from", "dir-spool://"+spool+"?stop_on_done=true",
		"--to", "postgres://postgres:pass@localhost/test?table="+table)
	require.Equal(t, 0, code)
	assert.NotContains(t, stderr, ":pass@", "the password is never printed")
	assert.Equal(t, 50, svcCount(t, conn, "SELECT count(*) FROM "+table))
	assert.Equal(t, 50, svcCount(t, conn, "SELECT count(*) FROM "+table+" WHERE note = 'ünïcode ✓' AND sku = 'SKU-' || lpad(order_id::text, 3, '0')"))
	assert.Empty(t, svcChunks(t, spool), "the drained spool is empty")
}

func TestPostgresErrorsAreOneLineWithoutPassword(t *testing.T) {
	svcPostgres(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	l.Close()
	spool := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(spool, 0o755))
	const password = "Sup3r-S3cret-pw"
	for name, tc := range map[string]struct {
		to   string
		code int
	}{
		// Retried (for 2s here) as a server that may come up, then exit 1.
		"connection refused": {"postgres://app:" + password + "@" + closed + "/test?table=t", 1},
		// Configuration: not retried, exit 2.
		"bad credentials": {"postgres://mqb_no_such_role:" + password + "@localhost/test?table=t", 2},
	} {
		t.Run(name, func(t *testing.T) {
			route := filepath.Join(t.TempDir(), "route.yaml")
			require.NoError(t, os.WriteFile(route, []byte(fmt.Sprintf("input: {url: %q}\noutput: {url: %q}\ndrain: true\nretry: {budget: 2s}\n",
				"dir-spool://"+spool, tc.to)), 0o600))
			code, stderr := svcRun(t, "copy", "--config", route)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.code == 1, strings.Contains(stderr, "connect failed; retrying"), "retried only when the server may come up")
			assert.NotContains(t, stderr, password)
			var errLines []string
			for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if strings.HasPrefix(line, "mqb:") {
					errLines = append(errLines, line)
				}
			}
			require.Len(t, errLines, 1, "one error line")
			assert.Contains(t, errLines[0], "xxxxx")
		})
	}
}

// TestSeedMQTTExample runs the seed's sharded-spool example as written
// (broker and path rewritten, a topic of its own): a continuous route from
// MQTT into a sharded spool, stopped by SIGTERM, then read back by a
// consumer configured with the same layout.
func TestSeedMQTTExample(t *testing.T) {
	svcMosquitto(t)
	topic := svcUnique("mqb-e2e/") + "/telemetry"
	dir := t.TempDir()
	spoolURL := "dir-spool://" + dir + "/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3"

	p := svcStart(t, "copy", "--from", "mqtt://"+svcBroker+"?topic="+topic, "--to", spoolURL)
	m := svcWaitLog(t, p, regexp.MustCompile(`mqtt source connected.* client_id=(\S+)`))
	svcForgetSession(t, m[1])

	pub := svcPublisher(t)
	var want []string
	for i := range 30 {
		payload := fmt.Sprintf(`{"sensor":"t%d","celsius":%d.5}`, i%3, 20+i)
		want = append(want, payload)
		require.NoError(t, svcPublish(pub, topic, payload))
	}
	require.Eventually(t, func() bool { return len(svcChunks(t, dir+"/telemetry")) == 30 }, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, 143, p.stop(t), "SIGTERM ends the route with 143")
	assert.FileExists(t, filepath.Join(dir, "telemetry", "000", "000", "000000.bin"), "sharded {seq:012} layout")
	assert.Equal(t, want, svcChunks(t, dir+"/telemetry"), "in order, byte for byte")

	out := filepath.Join(dir, "out.jsonl")
	code, _ := svcRun(t, "copy", "--drain", "--from", spoolURL, "--to", "file://"+out+"?format=json")
	require.Equal(t, 0, code)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(want, "\n")+"\n", string(got))
}

// TestKill9MQTTToSpoolToPostgres kills mqb with SIGKILL in the middle of an
// MQTT -> spool copy and starts it again: no message is lost (the broker
// redelivers what was never PUBACKed). MQTT 3.1.1 can deliver a message
// twice; the PostgreSQL table, keyed on the payload's own id, then holds
// each message exactly once after the spool is drained into it.
func TestKill9MQTTToSpoolToPostgres(t *testing.T) {
	svcMosquitto(t)
	conn := svcPostgres(t)
	topic := svcUnique("mqb-e2e/")
	clientID := svcUnique("mqb-e2e-")
	svcForgetSession(t, clientID)
	spool := filepath.Join(t.TempDir(), "spool")
	from := "mqtt://" + svcBroker + "?topic=" + topic + "&client_id=" + clientID
	to := "dir-spool://" + spool

	p := svcStart(t, "copy", "--batch-size", "10", "--from", from, "--to", to)
	svcWaitLog(t, p, regexp.MustCompile(`mqtt source connected`))

	const n = 400
	pub := svcPublisher(t)
	published := make(chan error, 1)
	go func() {
		for i := range n {
			if err := svcPublish(pub, topic, fmt.Sprintf(`{"n":%d}`, i)); err != nil {
				published <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
		published <- nil
	}()
	require.Eventually(t, func() bool { return len(svcChunks(t, spool)) >= n/4 }, 20*time.Second, 5*time.Millisecond)
	p.kill9(t)
	atKill := len(svcChunks(t, spool))
	require.NoError(t, <-published)
	require.Less(t, atKill, n, "the kill must come in the middle of the copy")

	code, _ := svcRun(t, "copy", "--drain", "--batch-size", "10", "--from", from, "--to", to)
	require.Equal(t, 0, code)

	seen := map[int]int{}
	for _, c := range svcChunks(t, spool) {
		var v struct{ N int }
		require.NoError(t, json.Unmarshal([]byte(c), &v), c)
		seen[v.N]++
	}
	var missing []int
	dups := 0
	for i := range n {
		if seen[i] == 0 {
			missing = append(missing, i)
		}
		dups += max(seen[i]-1, 0)
	}
	assert.Empty(t, missing, "messages lost across kill -9")
	t.Logf("%d chunks in the spool at the kill; after the restart %d messages, %d delivered twice (MQTT 3.1.1 is at least once)", atKill, n, dups)

	table := svcTable(t, conn, "n int PRIMARY KEY")
	code, _ = svcRun(t, "copy", "--drain", "--from", to, "--to", "postgres://postgres@127.0.0.1/test?table="+table)
	require.Equal(t, 0, code)
	assert.Equal(t, n, svcCount(t, conn, "SELECT count(*) FROM "+table), "each message once")
}

// TestKill9SpoolToPostgres kills mqb with SIGKILL in the middle of a spool
// -> PostgreSQL copy and starts it again: every message ends up in the table
// once. Batches committed but not yet acknowledged at the spool when the
// process died are delivered again and skipped on their message id.
func TestKill9SpoolToPostgres(t *testing.T) {
	conn := svcPostgres(t)
	dir := t.TempDir()
	const n = 1000
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"n":%d,"note":"row %d"}`, i, i))
	}
	input := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	spool := filepath.Join(dir, "spool")
	code, _ := svcRun(t, "copy", "--drain", "--from", "file://"+input+"?format=json", "--to", "dir-spool://"+spool+"?emit_done=success")
	require.Equal(t, 0, code)

	// n is not unique: a duplicated row would show. A trigger slows every
	// insert down so that the kill lands in the middle.
	table := svcTable(t, conn, "message_id text PRIMARY KEY, n int NOT NULL, note text")
	_, err := conn.Exec(context.Background(), fmt.Sprintf(`
CREATE FUNCTION %[1]s_slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN NEW; END $$;
CREATE TRIGGER %[1]s_slow BEFORE INSERT ON %[1]s FOR EACH ROW EXECUTE FUNCTION %[1]s_slow();`, table))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), fmt.Sprintf("DROP FUNCTION IF EXISTS %s_slow() CASCADE", table))
	})

	args := []string{"copy", "--drain", "--batch-size", "20",
		"--from", "dir-spool://" + spool + "?stop_on_done=true",
		"--to", "postgres://postgres@127.0.0.1/test?table=" + table + "&id_column=message_id"}
	p := svcStart(t, args...)
	require.Eventually(t, func() bool { return svcCount(t, conn, "SELECT count(*) FROM "+table) >= 200 }, 30*time.Second, 2*time.Millisecond)
	p.kill9(t)
	rows := svcCount(t, conn, "SELECT count(*) FROM "+table)
	left := len(svcChunks(t, spool))
	require.Less(t, rows, n, "the kill must come in the middle of the copy")
	t.Logf("at the kill: %d rows committed, %d chunks left in the spool (%d committed but not yet acknowledged)", rows, left, rows+left-n)

	code, _ = svcRun(t, args...)
	require.Equal(t, 0, code)
	assert.Equal(t, n, svcCount(t, conn, "SELECT count(*) FROM "+table))
	assert.Equal(t, n, svcCount(t, conn, "SELECT count(DISTINCT n) FROM "+table), "no duplicate row")
	assert.Empty(t, svcChunks(t, spool))
}
