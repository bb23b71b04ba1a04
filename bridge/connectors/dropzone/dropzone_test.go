//go:build unix

package dropzone_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
)

func env() *bridge.Env {
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.DiscardHandler)
	dropzone.Register(e)
	return e
}

type collect struct {
	mu    sync.Mutex
	msgs  []*bridge.Message
	failN int // fail every write after this many messages (0: never)
}

func (c *collect) Connect(context.Context) error      { return nil }
func (c *collect) Close(context.Context, error) error { return nil }
func (c *collect) WriteBatch(_ context.Context, ms []*bridge.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failN > 0 && len(c.msgs) >= c.failN {
		return bridge.Permanent(errors.New("target gone"))
	}
	c.msgs = append(c.msgs, ms...)
	return nil
}

func (c *collect) payloads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		out = append(out, string(m.Payload))
	}
	return out
}

func runFrom(t *testing.T, e *bridge.Env, url string, tgt bridge.Target, batch int) error {
	t.Helper()
	src, r, err := e.NewSource(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	route := &bridge.Route{Source: src, Target: tgt, Input: r.Display, Output: "collect", BatchSize: batch, Drain: true, Logger: e.Logger}
	return route.Run(context.Background())
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

func TestSourceReadsEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.jsonl", "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
	write(t, dir, "b.jsonl", "{\"n\":4}\n{\"n\":5}\n")
	write(t, dir, ".hidden.jsonl", "{\"n\":0}\n")
	write(t, dir, "c.jsonl.tmp", "{\"n\":0}\n")
	write(t, dir, "notes.txt", "skip me\n")
	e := env()
	url := "dropzone://" + dir + "?format=json&pattern=*.jsonl"

	first := &collect{}
	require.NoError(t, runFrom(t, e, url, first, 2))
	assert.Equal(t, []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`, `{"n":5}`}, first.payloads())
	md := first.msgs[3].Metadata
	assert.Equal(t, map[string]string{"content_type": "application/json", "source": "b", "path": filepath.Join(dir, "b.jsonl"), "line": "1"}, md)

	second := &collect{}
	require.NoError(t, runFrom(t, e, url, second, 2))
	assert.Empty(t, second.payloads(), "a restart reads no finished file again")

	write(t, dir, "c.jsonl", "{\"n\":6}\n")
	third := &collect{}
	require.NoError(t, runFrom(t, e, url, third, 2))
	assert.Equal(t, []string{`{"n":6}`}, third.payloads(), "a new file is picked up")

	var st struct{ Done []string }
	b, err := os.ReadFile(filepath.Join(dir, dropzone.DefaultStateFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	assert.Equal(t, []string{"a.jsonl", "b.jsonl", "c.jsonl"}, st.Done)

	// A finished file that is gone leaves the done list at the next listing.
	require.NoError(t, os.Remove(filepath.Join(dir, "b.jsonl")))
	write(t, dir, "d.jsonl", "{\"n\":7}\n")
	fourth := &collect{}
	require.NoError(t, runFrom(t, e, url, fourth, 2))
	assert.Equal(t, []string{`{"n":7}`}, fourth.payloads())
	b, err = os.ReadFile(filepath.Join(dir, dropzone.DefaultStateFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	assert.Equal(t, []string{"a.jsonl", "c.jsonl", "d.jsonl"}, st.Done)
}

func TestSourceResumesInsideAFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "1\n2\n3\n4\n5\n")
	e := env()
	url := "dropzone://" + dir + "?format=lines"

	broken := &collect{failN: 2} // takes one batch of 2, then fails for good
	err := runFrom(t, e, url, broken, 2)
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Equal(t, []string{"1", "2"}, broken.payloads())

	again := &collect{}
	require.NoError(t, runFrom(t, e, url, again, 2))
	assert.Equal(t, []string{"3", "4", "5"}, again.payloads(), "neither re-read nor skipped")
	assert.Equal(t, "3", again.msgs[0].Metadata["line"])
}

func TestSourceSecondReaderFails(t *testing.T) {
	dir := t.TempDir()
	e := env()
	src, _, err := e.NewSource(bridge.Endpoint{URL: "dropzone://" + dir})
	require.NoError(t, err)
	require.NoError(t, src.Connect(context.Background()))
	defer src.Close(context.Background())
	other, _, err := e.NewSource(bridge.Endpoint{URL: "dropzone://" + dir})
	require.NoError(t, err)
	err = other.Connect(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "held by another process")
}

func msgs(payloads ...string) []*bridge.Message {
	out := make([]*bridge.Message, len(payloads))
	for i, p := range payloads {
		out[i] = &bridge.Message{ID: p, Payload: []byte(p)}
	}
	return out
}

func listFiles(t *testing.T, dir string) (visible []string, hidden []string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			hidden = append(hidden, e.Name())
		} else {
			visible = append(visible, e.Name())
		}
	}
	sort.Strings(visible)
	return visible, hidden
}

func newTarget(t *testing.T, e *bridge.Env, url string) bridge.Target {
	t.Helper()
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	require.NoError(t, tgt.Connect(context.Background()))
	return tgt
}

func TestTargetRollsByCount(t *testing.T) {
	dir := t.TempDir()
	e := env()
	tgt := newTarget(t, e, "dropzone://"+dir+"?format=lines&roll_count=2&roll_interval=0s&prefix=orders-")
	ctx := context.Background()
	require.NoError(t, tgt.WriteBatch(ctx, msgs("a", "b", "c")))
	vis, _ := listFiles(t, dir)
	require.Len(t, vis, 1, "the first file is full and published; the second is still hidden")
	require.NoError(t, tgt.WriteBatch(ctx, msgs("d", "e")))
	require.NoError(t, tgt.Close(ctx, nil))
	vis, hidden := listFiles(t, dir)
	require.Len(t, vis, 3)
	assert.Equal(t, []string{dropzone.WriterLockFile}, hidden)
	var all []string
	for _, n := range vis {
		assert.True(t, strings.HasPrefix(n, "orders-") && strings.HasSuffix(n, ".txt"), n)
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		all = append(all, string(b))
	}
	assert.Equal(t, []string{"a\nb\n", "c\nd\n", "e\n"}, all)
}

func TestTargetRollsByTime(t *testing.T) {
	dir := t.TempDir()
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=json&roll_interval=50ms")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs(`{"a":1}`)))
	require.Eventually(t, func() bool {
		vis, _ := listFiles(t, dir)
		return len(vis) == 1
	}, 5*time.Second, 10*time.Millisecond)
	vis, _ := listFiles(t, dir)
	assert.True(t, strings.HasSuffix(vis[0], ".jsonl"))
	require.NoError(t, tgt.Close(context.Background(), nil))
}

func TestTargetCSVHeaderPerFile(t *testing.T) {
	dir := t.TempDir()
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=csv&roll_count=1")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs(`{"id":"1"}`, `{"id":"2"}`)))
	require.NoError(t, tgt.Close(context.Background(), nil))
	vis, _ := listFiles(t, dir)
	require.Len(t, vis, 2)
	for i, n := range vis {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		assert.Equal(t, "id\n"+string(rune('1'+i))+"\n", string(b))
	}
}

func TestTargetRecoversAfterCrash(t *testing.T) {
	dir := t.TempDir()
	// A writer died: 4 bytes were acknowledged, a torn record follows.
	write(t, dir, ".x-000001.txt.4.partial", "a\nb\nc-torn")
	write(t, dir, ".y-000002.txt.0.partial", "torn")
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=lines")
	require.NoError(t, tgt.Close(context.Background(), nil))
	vis, hidden := listFiles(t, dir)
	assert.Equal(t, []string{"x-000001.txt"}, vis)
	assert.Equal(t, []string{dropzone.WriterLockFile}, hidden)
	b, err := os.ReadFile(filepath.Join(dir, "x-000001.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\nb\n", string(b))
}

func TestTargetRawOneFilePerMessage(t *testing.T) {
	dir := t.TempDir()
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=raw")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs("one\n", "two")))
	require.NoError(t, tgt.Close(context.Background(), nil))
	vis, _ := listFiles(t, dir)
	require.Len(t, vis, 2)
	b, _ := os.ReadFile(filepath.Join(dir, vis[1]))
	assert.Equal(t, "two", string(b))
}

func TestDropZoneRoundTrip(t *testing.T) {
	out := t.TempDir()
	e := env()
	tgt := newTarget(t, e, "dropzone://"+out+"?format=csv&roll_count=2")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs(`{"id":"1","sku":"A"}`, `{"id":"2","sku":"B"}`, `{"id":"3","sku":"C"}`)))
	require.NoError(t, tgt.Close(context.Background(), nil))
	got := &collect{}
	require.NoError(t, runFrom(t, e, "dropzone://"+out+"?format=csv", got, 10))
	assert.Equal(t, []string{`{"id":"1","sku":"A"}`, `{"id":"2","sku":"B"}`, `{"id":"3","sku":"C"}`}, got.payloads())
}

func TestTargetFileMode(t *testing.T) {
	dir := t.TempDir()
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=lines&roll_count=1&file_mode=0644")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs("a")))
	require.NoError(t, tgt.Close(context.Background(), nil))
	vis, _ := listFiles(t, dir)
	require.Len(t, vis, 1)
	fi, err := os.Stat(filepath.Join(dir, vis[0]))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644&^umask), fi.Mode().Perm(), "file_mode less the umask")

	_, _, err = env().NewTarget(bridge.Endpoint{URL: "dropzone://" + dir + "?file_mode=0000"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"file_mode"`)
	assert.Contains(t, err.Error(), "0600")
}

func TestConnectNamesAMissingOrWrongDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "plain", "x\n")
	cases := []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "directory does not exist"},
		{filepath.Join(dir, "plain"), "not a directory"},
	}
	for _, c := range cases {
		src, _, err := env().NewSource(bridge.Endpoint{URL: "dropzone://" + c.path})
		require.NoError(t, err)
		err = src.Connect(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		assert.Contains(t, err.Error(), c.path)
	}
}

// A state file kept in the zone under a name the zone would read is not
// input, nor are its lock and journal.
func TestStateFileInTheZoneIsNotInput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", "1\n")
	url := "dropzone://" + dir + "?format=lines&state_path=" + filepath.Join(dir, "state.txt")
	got := &collect{}
	require.NoError(t, runFrom(t, env(), url, got, 10))
	assert.Equal(t, []string{"1"}, got.payloads())
	visible, _ := listFiles(t, dir)
	assert.Equal(t, []string{"a.txt", "state.txt", "state.txt.lock"}, visible)

	again := &collect{}
	require.NoError(t, runFrom(t, env(), url, again, 10))
	assert.Empty(t, again.payloads())
}
