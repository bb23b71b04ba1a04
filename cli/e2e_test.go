package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mqb is the binary under test, built once by TestMain.
var mqb string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mqb-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mqb = filepath.Join(dir, "mqb")
	build := exec.Command("go", "build", "-o", mqb, "./cmd/mqb")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mqb:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs mqb to completion with stdin.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mqb, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running mqb %v: %v", args, err)
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// ok runs mqb and requires exit code 0.
func ok(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	require.Equal(t, 0, r.code, "mqb %s\nstderr: %s", strings.Join(args, " "), r.stderr)
	return r
}

// started is an mqb process running in the background.
type started struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	code   int
}

// lockedBuffer is a bytes.Buffer safe to read while the process writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, args ...string) *started {
	t.Helper()
	cmd := exec.Command(mqb, args...)
	s := &started{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	require.NoError(t, cmd.Start())
	go func() {
		_ = cmd.Wait()
		s.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			s.code = 128 + int(ws.Signal())
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *started) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(60 * time.Second):
		t.Fatalf("mqb %v did not exit; stderr: %s", s.cmd.Args, s.stderr)
		return -1
	}
}

func (s *started) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(sig))
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(name, []byte(content), 0o644))
	return name
}

// files lists the regular files under dir, relative and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

func payloadFiles(t *testing.T, dir string) []string {
	var out []string
	for _, f := range files(t, dir) {
		if strings.HasSuffix(f, ".bin") {
			out = append(out, f)
		}
	}
	return out
}

func exampleOrders(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../examples/orders.jsonl")
	require.NoError(t, err)
	return p
}

// The seed's first two examples, as written: a finite input to a spool with
// DONE, then a one-shot drain of that spool (into a file: PostgreSQL needs a
// server).
func TestSeedFileToSpoolThenDrain(t *testing.T) {
	dir := t.TempDir()
	orders := exampleOrders(t)
	spool := filepath.Join(dir, "orders")
	ok(t, "", "copy", "--drain",
		"--from", "file://"+orders+"?format=json",
		"--to", "dir-spool://"+spool+"?emit_done=success")

	lines := strings.SplitAfter(strings.TrimSuffix(readFile(t, orders), "\n"), "\n")
	require.Len(t, lines, 12)
	got := files(t, spool)
	assert.Contains(t, got, "DONE")
	assert.Contains(t, got, "PRODUCER")
	for i, line := range lines {
		name := fmt.Sprintf("%09d", i)
		assert.Equal(t, strings.TrimSuffix(line, "\n"), readFile(t, filepath.Join(spool, name+".bin")), "payload %d byte for byte", i)
		var sc map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(spool, name+".json"))), &sc))
		assert.Len(t, sc, 2, "a sidecar holds message_id and metadata only")
		var id string
		require.NoError(t, json.Unmarshal(sc["message_id"], &id))
		assert.Regexp(t, `^[0-9a-f]{32}$`, id)
		var md map[string]string
		require.NoError(t, json.Unmarshal(sc["metadata"], &md))
		assert.Equal(t, map[string]string{"content_type": "application/json", "source": "orders", "path": orders, "line": fmt.Sprint(i + 1)}, md)
	}
	var done map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(spool, "DONE"))), &done))
	assert.Equal(t, "success", done["status"])
	assert.Equal(t, float64(12), done["count"])

	out := filepath.Join(dir, "out.jsonl")
	ok(t, "", "copy", "--drain",
		"--from", "dir-spool://"+spool+"?stop_on_done=true",
		"--to", "file://"+out+"?format=json")
	assert.Equal(t, readFile(t, orders), readFile(t, out))
	assert.Empty(t, payloadFiles(t, spool), "the drained spool is empty")
}

// Without --drain, stop_on_done ends the consumer only once the producer's
// DONE exists and nothing is left.
func TestStopOnDoneEndsAContinuousRoute(t *testing.T) {
	dir := t.TempDir()
	spool, out := filepath.Join(dir, "s"), filepath.Join(dir, "out.txt")
	require.NoError(t, os.Mkdir(spool, 0o700))
	consumer := start(t, "copy", "--from", "dir-spool://"+spool+"?stop_on_done=true&poll_interval=20ms", "--to", "file://"+out)
	time.Sleep(300 * time.Millisecond)
	ok(t, "a\nb\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)
	select {
	case <-consumer.done:
		t.Fatalf("the consumer ended before DONE: %s", consumer.stderr)
	case <-time.After(300 * time.Millisecond):
	}
	ok(t, "c\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool+"?emit_done=success")
	require.Equal(t, 0, consumer.wait(t), consumer.stderr.String())
	assert.Equal(t, "a\nb\nc\n", readFile(t, out))
}

// The seed's sharding example, with stdin in place of MQTT.
func TestSeedShardedSpool(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "telemetry")
	opts := "?naming_pattern={seq:012}&shard_depth=2&shard_width=3"
	var in strings.Builder
	for i := range 1005 {
		fmt.Fprintf(&in, "{\"reading\":%d}\n", i)
	}
	ok(t, in.String(), "copy", "--from", "stdin://?format=json", "--to", "dir-spool://"+spool+opts+"&fsync=batch", "--batch-size", "500")
	got := payloadFiles(t, spool)
	require.Len(t, got, 1005)
	assert.Equal(t, "000/000/000000.bin", got[0])
	assert.Equal(t, "000/000/000001.bin", got[1])
	assert.Equal(t, "000/000/001000.bin", got[1000], "the leading six of twelve digits name the shards")
	assert.FileExists(t, filepath.Join(spool, "000/000/000001.json"))

	r := ok(t, "", "copy", "--drain", "--from", "dir-spool://"+spool+opts, "--to", "stdout://?format=json")
	assert.Equal(t, in.String(), r.stdout, "FIFO across shards")
}

// file -> spool -> file in every format, compared byte for byte.
func TestRoundTripFormats(t *testing.T) {
	binary := make([]byte, 4096)
	_, _ = rand.Read(binary)
	binary = append(binary, 0, '\n', 0xff)
	for _, tc := range []struct {
		format, input string
		messages      int
	}{
		{"json", "{\"a\": 1, \"name\": \"Zoë\"}\n[1,2,3]\n\"text\"\n{\"nested\":{\"deep\":[{\"x\":null}]}}\n", 4},
		{"csv", "id,name,note\n1,Ann,\"likes, commas\"\n2,Bo,\"two\nlines\"\n3,Cy,\"say \"\"hi\"\"\"\n", 3},
		{"lines", "first line\n\n  indented\tand tabbed\nlast\n", 4},
		{"raw", string(binary), 1},
	} {
		t.Run(tc.format, func(t *testing.T) {
			dir := t.TempDir()
			in := writeFile(t, filepath.Join(dir, "in."+tc.format), tc.input)
			spool := filepath.Join(dir, "spool")
			out := filepath.Join(dir, "out."+tc.format)
			ok(t, "", "copy", "--from", "file://"+in+"?format="+tc.format, "--to", "dir-spool://"+spool+"?emit_done=success")
			assert.Len(t, payloadFiles(t, spool), tc.messages)
			ok(t, "", "copy", "--drain", "--from", "dir-spool://"+spool, "--to", "file://"+out+"?format="+tc.format)
			assert.Equal(t, tc.input, readFile(t, out))
		})
	}
}

func TestCSVRecordsBecomeJSONObjects(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "orders.csv"), "order_id,sku,qty\nORD-1,TEA-EG-250,2\nORD-2,MUG-STN-01,1\n")
	r := ok(t, "", "copy", "--from", "file://"+in+"?format=csv", "--to", "stdout://?format=json")
	assert.Equal(t, "{\"order_id\":\"ORD-1\",\"sku\":\"TEA-EG-250\",\"qty\":\"2\"}\n{\"order_id\":\"ORD-2\",\"sku\":\"MUG-STN-01\",\"qty\":\"1\"}\n", r.stdout)
}

func TestMalformedInputNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "bad.jsonl"), "{\"ok\":1}\n{\"ok\":2}\n{\"broken\":\n{\"ok\":4}\n")
	r := run(t, "", "copy", "--from", "file://"+in+"?format=json", "--to", "stdout://?format=json")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, in+":3: not a JSON document")
	assert.Equal(t, "{\"ok\":1}\n{\"ok\":2}\n", r.stdout, "records before the bad one were delivered, none after it")
}

// The same route as flags and as YAML gives the same spool.
func TestYAMLAndURLAreEquivalent(t *testing.T) {
	dir := t.TempDir()
	orders := exampleOrders(t)
	viaURL, viaYAML := filepath.Join(dir, "url"), filepath.Join(dir, "yaml")
	ok(t, "", "copy", "--drain", "--batch-size", "5",
		"--from", "file://"+orders+"?format=json",
		"--to", "dir-spool://"+viaURL+"?naming_pattern={seq:06}.order&payload_extension=.jsonl&metadata_extension=.meta&shard_depth=1&shard_width=2&emit_done=success")
	route := writeFile(t, filepath.Join(dir, "route.yaml"), fmt.Sprintf(`
input:
  file: {path: %q, format: json}
output:
  dir_spool:
    path: %q
    naming_pattern: "{seq:06}.order"
    payload_extension: .jsonl
    metadata_extension: .meta
    shard_depth: 1
    shard_width: 2
    emit_done: success
batch: {size: 5, period: 100ms}
drain: true
`, orders, viaYAML))
	r := ok(t, "", "lint", route)
	assert.Equal(t, route+": ok: file:"+orders+" -> dir_spool:"+viaYAML+"\n", r.stdout)
	assert.NoDirExists(t, viaYAML, "lint runs nothing")
	ok(t, "", "run", route)
	assert.Equal(t, files(t, viaURL), files(t, viaYAML))
	assert.Contains(t, files(t, viaURL), "00/0000.order.jsonl")
	for _, f := range files(t, viaURL) {
		if strings.HasSuffix(f, ".jsonl") {
			assert.Equal(t, readFile(t, filepath.Join(viaURL, f)), readFile(t, filepath.Join(viaYAML, f)))
		}
	}
}

// copy --config takes the route from a file; the flags given override it.
func TestCopyConfigWithOverrides(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.txt"), "a\nb\nc\n")
	fromFile, fromFlag := filepath.Join(dir, "from-file.txt"), filepath.Join(dir, "from-flag.txt")
	route := writeFile(t, filepath.Join(dir, "route.yaml"), fmt.Sprintf("input: {file: {path: %q}}\noutput: {file: {path: %q}}\nbatch: {size: 1}\n", in, fromFile))
	ok(t, "", "copy", "--config", route)
	assert.Equal(t, "a\nb\nc\n", readFile(t, fromFile))
	r := ok(t, "", "--log-format", "json", "copy", "--config", route, "--to", "file://"+fromFlag, "--batch-size", "2")
	assert.Equal(t, "a\nb\nc\n", readFile(t, fromFlag))
	assert.Contains(t, r.stderr, `"batch_size":2`)
	assert.Equal(t, "a\nb\nc\n", readFile(t, fromFile), "the file's output was not used")
}

// SIGINT in the middle of a copy, then the same copy again: nothing lost,
// nothing duplicated, claims released.
func TestInterruptThenResume(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	const n = 3000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "%d\n", i)
	}
	ok(t, in.String(), "copy", "--from", "stdin://", "--to", "dir-spool://"+a+"?fsync=none", "--batch-size", "1000")

	cp := start(t, "copy", "--drain", "--from", "dir-spool://"+a, "--to", "dir-spool://"+b, "--batch-size", "5")
	require.Eventually(t, func() bool {
		es, _ := os.ReadDir(b)
		return len(es) > 40
	}, 30*time.Second, 5*time.Millisecond, "the copy makes progress")
	cp.signal(t, syscall.SIGINT)
	require.Equal(t, 130, cp.wait(t), cp.stderr.String())
	assert.Contains(t, cp.stderr.String(), "interrupted")
	left := len(payloadFiles(t, a))
	require.Greater(t, left, 0, "interrupted before the end")
	assert.Equal(t, n, left+len(payloadFiles(t, b)), "every message is in exactly one spool")

	var st struct {
		Consumer struct{ Alive bool }
		Producer struct{ Alive bool }
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "", "spool", "stat", "--json", a).stdout), &st))
	assert.False(t, st.Consumer.Alive, "the CONSUMER claim was released")

	ok(t, "", "copy", "--drain", "--from", "dir-spool://"+a, "--to", "dir-spool://"+b, "--batch-size", "500")
	r := ok(t, "", "copy", "--drain", "--from", "dir-spool://"+b, "--to", "stdout://")
	assert.Equal(t, in.String(), r.stdout)
}

func TestSIGTERMExits143(t *testing.T) {
	spool := t.TempDir()
	cp := start(t, "copy", "--from", "dir-spool://"+spool, "--to", "stdout://")
	require.Eventually(t, func() bool {
		return strings.Contains(cp.stderr.String(), "route started")
	}, 30*time.Second, 10*time.Millisecond)
	cp.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, cp.wait(t), cp.stderr.String())
}

func TestSecondDrainingConsumerNamesHolder(t *testing.T) {
	spool := t.TempDir()
	first := start(t, "copy", "--from", "dir-spool://"+spool, "--to", "stdout://")
	require.Eventually(t, func() bool {
		return strings.Contains(first.stderr.String(), "route started")
	}, 30*time.Second, 10*time.Millisecond)

	r := run(t, "", "copy", "--drain", "--from", "dir-spool://"+spool, "--to", "stdout://")
	assert.Equal(t, 1, r.code)
	host, _ := os.Hostname()
	assert.Contains(t, r.stderr, fmt.Sprintf("CONSUMER claim is held by pid %d on host %s", first.cmd.Process.Pid, host))
	assert.Equal(t, 1, strings.Count(r.stderr, "mqb: "))

	var st struct {
		Consumer struct {
			Alive bool
			PID   int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "", "spool", "stat", "--json", spool).stdout), &st))
	assert.True(t, st.Consumer.Alive)
	assert.Equal(t, first.cmd.Process.Pid, st.Consumer.PID)
	first.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, first.wait(t))
}

// Every configuration mistake exits 2 with one line naming what is wrong
// and what is valid.
// A path that does not exist, where nothing will create it, fails at once
// with the path named, instead of retrying for the whole connect budget
// (a minute): a file to read, the directory of a file to write, a spool or
// drop zone to drain.
func TestMissingPathFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"file source":       {"--from", "file://" + dir + "/orders.jsonl", "--to", "stdout://"},
		"file target":       {"--from", "stdin://", "--to", "file://" + dir + "/no/out.jsonl"},
		"spool drained":     {"--from", "dir-spool://" + dir + "/spool", "--to", "stdout://", "--drain"},
		"drop zone drained": {"--from", "dropzone://" + dir + "/zone", "--to", "stdout://", "--drain"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, "", append([]string{"copy"}, args...)...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, "no such file or directory")
			assert.Contains(t, r.stderr, dir)
			assert.NotContains(t, r.stderr, "retrying")
		})
	}
}

func TestBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.txt"), "x\n")
	yaml := func(name, content string) string { return writeFile(t, filepath.Join(dir, name), content) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scheme", []string{"copy", "--from", "kafka://broker/topic", "--to", "stdout://"}, `unknown scheme "kafka" in kafka://broker/topic (valid: dir-spool, dirspool, dropzone, file,`},
		{"unknown option", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://" + dir + "/s?shard_dept=2"}, `option "shard_dept": unknown dir_spool option (valid: atomic, backend, bad_sidecar, claims,`},
		{"mistyped option", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://" + dir + "/s?fsync=sometimes"}, `option "fsync" = "sometimes": is not an allowed value (valid: none, batch, chunk)`},
		{"mistyped bool", []string{"copy", "--from", "dir-spool://" + dir + "/s?stop_on_done=yes", "--to", "stdout://"}, `option "stop_on_done" = "yes": expects true or false`},
		{"relative spool path", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://var/spool/orders"}, `option "path" = "var/spool/orders": must be absolute`},
		{"relative file path", []string{"copy", "--from", "file://data/in.txt", "--to", "stdout://"}, `option "path" = "data/in.txt": must be absolute`},
		{"bad naming pattern", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://" + dir + "/s?naming_pattern={seq:9x}"}, `option "naming_pattern" = "{seq:9x}": N in {seq:N} must be a number of digits`},
		{"pattern not starting with seq", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://" + dir + "/s?naming_pattern=msg-{seq:09}"}, `must start with the {seq:N} token`},
		{"unknown backend", []string{"copy", "--from", "file://" + in, "--to", "dir-spool://" + dir + "/s?backend=s3"}, `option "backend" = "s3": is not a registered backend (valid: memfs, os)`},
		{"unknown format", []string{"copy", "--from", "file://" + in + "?format=xml", "--to", "stdout://"}, `option "format" = "xml": is not an allowed value (valid: json, csv, lines, raw)`},
		{"batch max bytes of 0", []string{"copy", "--from", "stdin://", "--to", "stdout://", "--batch-max-bytes", "0"}, "--batch-max-bytes: must be 1 or more (got 0)"},
		{"batch max bytes not a size", []string{"copy", "--from", "stdin://", "--to", "stdout://", "--batch-max-bytes", "8MB2"}, `--batch-max-bytes: "8MB2" is not a size such as 1048576, 512KiB or 10GB`},
		{"YAML batch max bytes not a size", []string{"lint", yaml("size.yaml", "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nbatch: {max_bytes: 1x}\n")}, `size.yaml: line 3: "1x" is not a size such as 1048576, 512KiB or 10GB`},
		{"bad YAML", []string{"run", yaml("bad.yaml", "input: [\n")}, "bad.yaml: line 1: did not find expected node content"},
		{"unknown YAML key", []string{"lint", yaml("key.yaml", "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nbatch: {sise: 3}\n")}, `key.yaml: line 3: unknown key "sise" (valid: max_bytes, period, size)`},
		{"unknown YAML connector", []string{"lint", yaml("conn.yaml", "input: {dir_spol: {path: /x}}\noutput: {url: \"stdout://\"}\n")}, `conn.yaml: line 1: input: no connector named "dir_spol" (valid: dir_spool, dropzone, file,`},
		{"relative YAML spool path", []string{"run", yaml("rel.yaml", "input: {dir_spool: {path: spool}}\noutput: {stdout: {}}\n")}, `rel.yaml: line 1: input: dir_spool:spool: option "path" = "spool": must be an absolute path`},
		{"relative spool stat", []string{"spool", "stat", "var/spool"}, `spool path "var/spool" is relative`},
		{"missing route", []string{"copy", "--from", "stdin://"}, "no route: give --from and --to"},
		{"unknown flag", []string{"copy", "--form", "stdin://"}, "unknown flag: --form"},
		{"unknown command", []string{"frob"}, `unknown command "frob"`},
		{"stray argument", []string{"copy", "--from", "stdin://", "--to", "stdout://", "extra"}, "takes no arguments"},
		{"bad log format", []string{"--log-format", "xml", "version"}, "--log-format \"xml\": valid formats are text, json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			assert.True(t, strings.HasPrefix(r.stderr, "mqb: "), r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
}

// Every URL form in the seed parses, including endpoints that need a server.
func TestSeedURLsParse(t *testing.T) {
	dir := t.TempDir()
	for i, pair := range [][2]string{
		{"file:///data/orders.jsonl?format=json", "dir-spool:///var/spool/orders?emit_done=success"},
		{"dir-spool:///var/spool/orders?stop_on_done=true", "postgres://user:pass@localhost/app?table=orders"},
		{"mqtt://broker.local:1883?topic=telemetry", "dir-spool:///var/spool/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3"},
		{"spool:///var/spool/orders", "dirspool:///var/spool/copy"},
		{"file:///data/orders.csv?format=csv", "dropzone:///data/outgoing?format=csv"},
	} {
		route := writeFile(t, filepath.Join(dir, fmt.Sprintf("r%d.yaml", i)), fmt.Sprintf("input: {url: %q}\noutput: {url: %q}\n", pair[0], pair[1]))
		r := ok(t, "", "lint", route)
		assert.NotContains(t, r.stdout, "pass@", "passwords are never printed")
	}
}

func TestPasswordsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), "{\"a\":1}\n")
	// Nothing listens on port 1: the connection is retried for the budget
	// of 1s, and every retry is logged without the password.
	route := writeFile(t, filepath.Join(dir, "route.yaml"), fmt.Sprintf("input: {url: %q}\noutput: {url: %q}\nretry: {budget: 1s}\n",
		"file://"+in+"?format=json", "postgres://app:s3cr3t-pw@127.0.0.1:1/app?table=orders"))
	r := run(t, "", "copy", "--config", route)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "connect failed; retrying")
	assert.NotContains(t, r.stderr, "s3cr3t-pw")
	assert.Contains(t, r.stderr, "xxxxx")
	r = run(t, "", "copy", "--from", "kafka://app:s3cr3t-pw@host/t", "--to", "stdout://")
	assert.Equal(t, 2, r.code)
	assert.NotContains(t, r.stderr, "s3cr3t-pw")
}

func TestSpoolStatLsPeek(t *testing.T) {
	spool := t.TempDir()
	ok(t, "one\ntwo\nthree\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool+"?emit_done=success")

	var st struct {
		Chunks   int
		Bytes    int64
		Oldest   struct{ Name string }
		Newest   struct{ Name string }
		Producer struct {
			Alive bool
			PID   int
		}
		Consumer *struct{}
		Done     struct {
			Status string
			Count  int
		}
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "", "spool", "stat", "--json", spool).stdout), &st))
	assert.Equal(t, 3, st.Chunks)
	assert.Equal(t, int64(11), st.Bytes)
	assert.Equal(t, "000000000.bin", st.Oldest.Name)
	assert.Equal(t, "000000002.bin", st.Newest.Name)
	assert.False(t, st.Producer.Alive, "the producer has exited")
	assert.NotZero(t, st.Producer.PID)
	assert.Nil(t, st.Consumer, "no consumer ever ran")
	assert.Equal(t, "success", st.Done.Status)
	assert.Equal(t, 3, st.Done.Count)

	text := ok(t, "", "spool", "stat", "dir-spool://"+spool).stdout
	assert.Regexp(t, `backlog\s+3 chunk\(s\), 11B`, text)
	assert.Regexp(t, `done\s+success: 3 message\(s\)`, text)

	ls := ok(t, "", "spool", "ls", "--json", "--limit", "2", spool).stdout
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	require.Len(t, lines, 2)
	var ent struct {
		Name      string
		Seq       int
		Size      int
		MessageID string `json:"message_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &ent))
	assert.Equal(t, "000000001.bin", ent.Name)
	assert.Equal(t, 3, ent.Size)
	assert.Regexp(t, `^[0-9a-f]{32}$`, ent.MessageID)

	peek := ok(t, "", "spool", "peek", "-n", "2", "--json", spool).stdout
	var msgs []struct {
		Payload  string
		Metadata map[string]string
	}
	for _, l := range strings.Split(strings.TrimSpace(peek), "\n") {
		var m struct {
			Payload  string
			Metadata map[string]string
		}
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		msgs = append(msgs, m)
	}
	require.Len(t, msgs, 2)
	assert.Equal(t, "one", msgs[0].Payload)
	assert.Equal(t, "stdin", msgs[1].Metadata["source"])
	assert.Len(t, payloadFiles(t, spool), 3, "peek consumed nothing")
	assert.Contains(t, ok(t, "", "spool", "peek", spool).stdout, "==> 000000000.bin")
}

func TestMetrics(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "later") // made by the producer below
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cp := start(t, "copy", "--metrics-addr", addr, "--from", "dir-spool://"+spool+"?poll_interval=20ms", "--to", "file://"+filepath.Join(t.TempDir(), "out"))
	require.Eventually(t, func() bool { code, _ := get("/ping"); return code == 200 }, 30*time.Second, 20*time.Millisecond)
	code, body := get("/ready")
	assert.Equal(t, 503, code, "not ready while the input waits for its spool: %s", body)
	assert.Contains(t, get2(get("/metrics")), `mqb_route_up{route="copy"} 0`)

	ok(t, "1\n2\n3\n4\n5\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)
	// One scrape is no snapshot: the spool's gauges come from a scan that
	// may have started before the last ack deleted its chunk.
	require.Eventually(t, func() bool {
		code, body = get("/metrics")
		return strings.Contains(body, `mqb_input_acked_total{connector="dir_spool",route="copy"} 5`) && // acked last
			strings.Contains(body, `mqb_spool_backlog_messages{connector="dir_spool",route="copy",spool="`+spool+`"} 0`)
	}, 30*time.Second, 20*time.Millisecond)
	for _, want := range []string{
		`mqb_output_sent_total{connector="file",route="copy"} 5`,
		`mqb_input_received_total{connector="dir_spool",route="copy"} 5`,
		`mqb_input_received_bytes_total{connector="dir_spool",route="copy"} 5`,
		`mqb_input_acked_total{connector="dir_spool",route="copy"} 5`,
		`mqb_input_nacked_total{connector="dir_spool",route="copy"} 0`,
		`mqb_output_sent_bytes_total{connector="file",route="copy"} 5`,
		`mqb_output_errors_total{connector="file",route="copy"} 0`,
		`mqb_output_retries_total{connector="file",route="copy"} 0`,
		`mqb_output_batch_duration_seconds_bucket{connector="file",route="copy",le="0.0001"}`,
		`mqb_output_batch_duration_seconds_count{connector="file",route="copy"}`,
		`mqb_route_up{route="copy"} 1`,
		`mqb_spool_backlog_messages{connector="dir_spool",route="copy",spool="` + spool + `"} 0`,
		`mqb_spool_unexpected_files{connector="dir_spool",route="copy",spool="` + spool + `"} 0`,
		"go_goroutines ", "process_open_fds ",
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "output_latency_ns", "the old nanosecond histogram is gone")
	code, body = get("/ready")
	assert.Equal(t, 200, code, body)

	// A foreign file in the spool shows in the gauge, from the first scan
	// that starts after it was written: the scrape that comes first may
	// report a scan already under way.
	writeFile(t, filepath.Join(spool, "notes.txt"), "x")
	foreign := `mqb_spool_unexpected_files{connector="dir_spool",route="copy",spool="` + spool + `"} 1`
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, body = get("/metrics"); strings.Contains(body, foreign) {
			break
		}
	}
	assert.Contains(t, body, foreign)
	cp.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, cp.wait(t))
}

func get2(_ int, body string) string { return body }

func TestDropZoneRoute(t *testing.T) {
	dir := t.TempDir()
	orders := exampleOrders(t)
	zone := filepath.Join(dir, "zone")
	ok(t, "", "copy", "--from", "file://"+orders+"?format=json", "--to", "dropzone://"+zone+"?format=json&roll_count=5&prefix=orders-")
	var parts []string
	for _, f := range files(t, zone) {
		if !strings.HasPrefix(f, ".") {
			parts = append(parts, f)
		}
	}
	require.Len(t, parts, 3, "12 records rolled by 5")
	out := filepath.Join(dir, "out.jsonl")
	ok(t, "", "copy", "--drain", "--from", "dropzone://"+zone+"?format=json", "--to", "file://"+out+"?format=json")
	assert.Equal(t, readFile(t, orders), readFile(t, out))
	ok(t, "", "copy", "--drain", "--from", "dropzone://"+zone+"?format=json", "--to", "file://"+out+"?format=json")
	assert.Equal(t, readFile(t, orders), readFile(t, out), "a second run reads no file again")
}

func TestVersionAndCompletion(t *testing.T) {
	assert.Regexp(t, `^mqb \S+ go1\.\d+`, ok(t, "", "version").stdout)
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		assert.Contains(t, ok(t, "", "completion", sh).stdout, "mqb")
	}
	r := run(t, "", "completion", "tcsh")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `unknown shell "tcsh" (valid: bash, zsh, fish, powershell)`)
}

// With --log-format json every line on standard error is a JSON object,
// the error the command ends with included, and durations read as Go
// writes them.
func TestLogFormatJSON(t *testing.T) {
	stderrLines := func(t *testing.T, stderr string) []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m), "not JSON: %s", l)
			assert.Contains(t, m, "msg")
			out = append(out, m)
		}
		return out
	}
	t.Run("route", func(t *testing.T) {
		r := ok(t, "x\n", "--log-format", "json", "copy", "--batch-period", "200ms", "--from", "stdin://", "--to", "stdout://")
		assert.Equal(t, "x\n", r.stdout, "data on stdout only")
		lines := stderrLines(t, r.stderr)
		require.NotEmpty(t, lines)
		assert.Equal(t, "200ms", lines[0]["batch_period"], "a duration as Go writes it")
		assert.Regexp(t, `^[0-9.]+(ms|s|µs)$`, lines[len(lines)-1]["elapsed"])
	})
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"route error", []string{"--log-format", "json", "copy", "--from", "nope://x", "--to", "stdout://"}, `unknown scheme "nope"`},
		{"flag error", []string{"--log-format", "json", "copy", "--frm", "stdin://"}, "unknown flag: --frm"},
		{"flag error before --log-format", []string{"copy", "--frm", "stdin://", "--log-format=json"}, "unknown flag: --frm"},
		{"unknown command", []string{"--log-format", "json", "cpy"}, `did you mean "copy"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			assert.Equal(t, 2, r.code)
			lines := stderrLines(t, r.stderr)
			last := lines[len(lines)-1]
			assert.Equal(t, "ERROR", last["level"])
			assert.Contains(t, last["msg"], tc.msg)
			assert.EqualValues(t, 2, last["exit_code"])
		})
	}
}

func TestConformanceOnADirectory(t *testing.T) {
	dir := t.TempDir()
	r := ok(t, "", "conformance", "--run", "^(RenameNoReplace|ClaimExclusive|Layout_DocsExample)$", dir)
	assert.Regexp(t, `(?m)^PASS\tRenameNoReplace\t`, r.stdout)
	assert.Regexp(t, `(?m)^PASS\tClaimExclusive\t`, r.stdout)
	assert.Regexp(t, `(?m)^PASS\tLayout_DocsExample\t`, r.stdout)
	assert.Equal(t, 3, strings.Count(r.stdout, "PASS"))
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "the work directory is removed")

	assert.Regexp(t, `(?m)^KEPT +no-replace rename +RenameNoReplace$`, r.stdout)
	assert.Regexp(t, `(?m)^KEPT +claims exclusive in one process +ClaimExclusive$`, r.stdout)
	assert.Regexp(t, `(?m)^KEPT +spool protocol +Layout_DocsExample$`, r.stdout)

	r = ok(t, "", "conformance", "--json", "--run", "^RenameNoReplace$", dir)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, "a check, then its promise")
	var res struct{ Name, Status string }
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &res))
	assert.Equal(t, "RenameNoReplace", res.Name)
	assert.Equal(t, "PASS", res.Status)
	var v struct{ Promise, Verdict string }
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &v))
	assert.Equal(t, "no-replace rename", v.Promise)
	assert.Equal(t, "KEPT", v.Verdict)

	// A second mqb process holds a claim: this one must be refused it
	// until that process is killed.
	r = ok(t, "", "conformance", "--run", "^(ClaimAcrossProcesses|SyncDurability)$", dir)
	assert.Regexp(t, `(?m)^PASS\tClaimAcrossProcesses\t`, r.stdout)
	assert.Regexp(t, `(?m)^KEPT +claims exclusive across processes \(flock\) +ClaimAcrossProcesses$`, r.stdout)
	assert.Regexp(t, `(?m)^UNTESTED +durable across a power cut +SyncDurability\n +needs a crash model`, r.stdout)

	bad := run(t, "", "conformance", "--run", "(", dir)
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, "--run: error parsing regexp")
}
