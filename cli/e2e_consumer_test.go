package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A symbolic link where the producer needs a shard directory or a
// temporary name cannot go away by retrying: the route stops at once and
// names the link, instead of retrying for half a minute or blaming another
// producer.
func TestSymlinkInSpoolStopsAtOnceAndIsNamed(t *testing.T) {
	for _, tc := range []struct {
		name, query, link, want string
	}{
		{"shard directory", "?shard_depth=2", "000", "000 is a symbolic link; mqb never follows links in a spool"},
		{"temporary name", "?metadata_extension=", "000000000.bin.tmp", "000000000.bin.tmp is a symbolic link; mqb never follows links in a spool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spool, elsewhere := filepath.Join(dir, "spool"), filepath.Join(dir, "elsewhere")
			require.NoError(t, os.Mkdir(spool, 0o700))
			require.NoError(t, os.Mkdir(elsewhere, 0o700))
			require.NoError(t, os.Symlink(filepath.Join(elsewhere, "x"), filepath.Join(spool, tc.link)))
			if tc.link == "000" {
				require.NoError(t, os.Remove(filepath.Join(spool, tc.link)))
				require.NoError(t, os.Symlink(elsewhere, filepath.Join(spool, tc.link)))
			}
			t0 := time.Now()
			r := run(t, "a\nb\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool+tc.query)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Less(t, time.Since(t0), 5*time.Second, "a permanent error was retried")
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "retrying")
			assert.NotContains(t, r.stderr, "another producer")
			left, err := os.ReadDir(elsewhere)
			require.NoError(t, err)
			assert.Empty(t, left, "nothing was written through the link")
		})
	}
}

// A real full disk (a small tmpfs) in the middle of an fsync=chunk batch,
// still full at the first retry, then freed: every message is in the spool
// exactly once. The old target wrote the chunks of the first attempt again.
func TestDiskFullRetryWritesNothingTwice(t *testing.T) {
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o700))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill up (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	spool := filepath.Join(mnt, "spool")
	filler := filepath.Join(mnt, "filler")
	fill := func(room int64) {
		f, err := os.Create(filler)
		require.NoError(t, err)
		chunk := make([]byte, 4096)
		var n int64
		for ; ; n += int64(len(chunk)) {
			if _, err := f.Write(chunk); err != nil {
				break // full
			}
		}
		require.NoError(t, f.Truncate(max(0, n-room)))
		require.NoError(t, f.Close())
	}
	fill(64 << 10) // room for the claim and a few chunks, far from all 30
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "message-%02d\n", i)
	}
	input := writeFile(t, filepath.Join(dir, "in.txt"), in.String())
	route := writeFile(t, filepath.Join(dir, "route.yaml"), fmt.Sprintf(
		"input: {url: 'file://%s'}\noutput: {url: 'dir-spool://%s?fsync=chunk'}\ndrain: true\nretry: {initial_interval: 700ms, max_interval: 700ms, max_retries: 20}\n", input, spool))
	cp := start(t, "run", route)
	require.Eventually(t, func() bool { return strings.Contains(cp.stderr.String(), "attempt=2") }, 30*time.Second, 5*time.Millisecond,
		"the first retry did not fail: %s", cp.stderr)
	require.NoError(t, os.Remove(filler)) // a consumer made room
	require.Equal(t, 0, cp.wait(t), cp.stderr.String())
	require.Contains(t, cp.stderr.String(), "no space left on device", "the disk never filled up")

	var got []string
	for _, f := range payloadFiles(t, spool) {
		got = append(got, readFile(t, filepath.Join(spool, f)))
	}
	sort.Strings(got)
	want := strings.Split(strings.TrimSuffix(in.String(), "\n"), "\n")
	assert.Equal(t, want, got, "each message exactly once")
}

// A consumer whose options do not fit the spool's layout refuses with exit
// 2 and names the settings that would read it; spool stat says the same.
func TestLayoutMismatchExits2AndStatSaysSo(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "s")
	var in strings.Builder
	for i := range 1100 {
		fmt.Fprintf(&in, "%d\n", i)
	}
	ok(t, in.String(), "copy", "--from", "stdin://", "--to", "dir-spool://"+spool+"?shard_depth=2&shard_width=3&fsync=none&emit_done=success")
	writeFile(t, filepath.Join(spool, "notes.bin"), "not a chunk")
	want := "1,100 chunk(s) sit under 3-digit shard directories 2 level(s) deep (e.g. 000/000/000.bin) that these options do not read: set shard_depth=2 shard_width=3"
	for _, args := range [][]string{
		{"copy", "--from", "dir-spool://" + spool + "?stop_on_done=true", "--to", "stdout://"},
		{"copy", "--drain", "--from", "dir-spool://" + spool, "--to", "stdout://"},
		{"copy", "--drain", "--from", "dir-spool://" + spool + "?shard_depth=2&shard_width=3&payload_extension=.dat", "--to", "stdout://"},
	} {
		r := run(t, "", args...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stdout)
		if strings.Contains(args[len(args)-3], ".dat") {
			assert.Contains(t, r.stderr, "with the extension .bin (e.g. 000/000/000.bin) that these options do not read: set payload_extension=.bin")
		} else {
			assert.Contains(t, r.stderr, want)
			assert.Contains(t, r.stderr, "file=notes.bin")
		}
	}
	assert.Len(t, payloadFiles(t, spool), 1101, "nothing was deleted")

	st := ok(t, "", "spool", "stat", "dir-spool://"+spool)
	assert.Contains(t, st.stdout, want)
	assert.Regexp(t, `foreign\s+1101 file\(s\) with the payload extension fit no chunk name and are never delivered, e.g. notes.bin`, st.stdout)
	js := ok(t, "", "spool", "stat", "--json", "dir-spool://"+spool)
	var rep struct {
		Foreign int      `json:"foreign_payload_files"`
		Names   []string `json:"foreign_payload_names"`
		Layout  string   `json:"layout_mismatch"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &rep))
	assert.Equal(t, 1101, rep.Foreign)
	assert.Equal(t, []string{"notes.bin"}, rep.Names)
	assert.Contains(t, rep.Layout, want)

	// Named by its bare path, the spool is read with the layout its chunks
	// fit, and the spool commands say so.
	st = ok(t, "", "spool", "stat", spool)
	assert.Regexp(t, `backlog\s+1100 chunk\(s\)`, st.stdout)
	assert.Contains(t, st.stdout, "layout    read as shard_depth=2 shard_width=3, the layout found on disk")
	assert.Regexp(t, `foreign\s+1 file\(s\) with the payload extension fit no chunk name and are never delivered, e.g. notes.bin`, st.stdout)
	assert.NotContains(t, st.stdout, "these options do not read")
	js = ok(t, "", "spool", "stat", "--json", spool)
	var found struct {
		Chunks int    `json:"chunks"`
		Found  string `json:"layout_found"`
		Layout string `json:"layout_mismatch"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &found))
	assert.Equal(t, 1100, found.Chunks)
	assert.Equal(t, "shard_depth=2 shard_width=3", found.Found)
	assert.Empty(t, found.Layout)
	ls := ok(t, "", "spool", "ls", "--limit", "2", spool)
	assert.Regexp(t, `^000/000/000.bin\t0\t1\t\S+\n000/000/001.bin\t1\t1\t\S+\n$`, ls.stdout)
	assert.Contains(t, ls.stderr, "read as shard_depth=2 shard_width=3")
	pk := ok(t, "", "spool", "peek", spool)
	assert.Regexp(t, `^==> 000/000/000.bin \(seq 0, `, pk.stdout)
	assert.Contains(t, pk.stderr, "read as shard_depth=2 shard_width=3")
	for _, cmd := range []string{"ls", "peek"} { // a URL's options are taken as given
		r := run(t, "", "spool", cmd, "dir-spool://"+spool)
		assert.Equal(t, 2, r.code, "%s: %s", cmd, r.stderr)
		assert.Contains(t, r.stderr, want, cmd)
		assert.Empty(t, r.stdout, cmd)
	}

	// With the right settings everything is read, and the stray file is
	// warned about, once.
	r := run(t, "", "copy", "--from", "dir-spool://"+spool+"?stop_on_done=true&shard_depth=2&shard_width=3", "--to", "stdout://")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, in.String(), r.stdout)
	assert.Equal(t, 1, strings.Count(r.stderr, "file=notes.bin"), r.stderr)
}

// A stop_on_done consumer that never saw the chunks DONE reports does not
// end with success.
func TestDoneWithUnseenChunksIsNotSuccess(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "s")
	ok(t, "a\nb\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool+"?emit_done=success")
	r := ok(t, "", "copy", "--from", "dir-spool://"+spool+"?stop_on_done=true", "--to", "stdout://")
	assert.Equal(t, "a\nb\n", r.stdout)
	r = run(t, "", "copy", "--from", "dir-spool://"+spool+"?stop_on_done=true", "--to", "stdout://")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "level=WARN")
	assert.Contains(t, r.stderr, "DONE records 2 message(s) up to sequence 1, but this consumer delivered none of them")
}

// Foreign files show in the mqb_spool_unexpected_files gauge.
func TestUnexpectedFilesMetric(t *testing.T) {
	spool := t.TempDir()
	writeFile(t, filepath.Join(spool, "notes.bin"), "x")
	writeFile(t, filepath.Join(spool, "000000001-copy.bin"), "x")
	writeFile(t, filepath.Join(spool, "README"), "counted too: no chunk name")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cp := start(t, "copy", "--metrics-addr", addr, "--from", "dir-spool://"+spool+"?poll_interval=20ms", "--to", "file://"+filepath.Join(t.TempDir(), "out"))
	want := regexp.MustCompile(`(?m)^mqb_spool_unexpected_files\{connector="dir_spool",route="copy",spool="` + regexp.QuoteMeta(spool) + `"\} 3$`)
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return want.MatchString(body)
	}, 30*time.Second, 20*time.Millisecond, "metrics: %s", body)
	require.Eventually(t, func() bool { return strings.Contains(cp.stderr.String(), "file=notes.bin") }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // several polls: the warning must not repeat
	cp.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, cp.wait(t))
	assert.Equal(t, 1, strings.Count(cp.stderr.String(), "file=notes.bin"), cp.stderr.String())
}

// bad_sidecar=deliver keeps a valid message_id from a sidecar whose
// metadata is bad, and warns once.
func TestBadSidecarDeliverKeepsID(t *testing.T) {
	spool := t.TempDir()
	writeFile(t, filepath.Join(spool, "000000000.bin"), "payload")
	writeFile(t, filepath.Join(spool, "000000000.json"), `{"message_id":"keep-me","metadata":{"ok":"yes","bad":1}}`)
	out := filepath.Join(t.TempDir(), "out")
	r := ok(t, "", "copy", "--drain", "--from", "dir-spool://"+spool+"?bad_sidecar=deliver", "--to", "dir-spool://"+out)
	assert.Equal(t, 1, strings.Count(r.stderr, "file=000000000.json"), r.stderr)
	var sc struct {
		ID       string            `json:"message_id"`
		Metadata map[string]string `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, "000000000.json"))), &sc))
	assert.Equal(t, "keep-me", sc.ID)
	assert.Equal(t, map[string]string{"ok": "yes"}, sc.Metadata)
}
