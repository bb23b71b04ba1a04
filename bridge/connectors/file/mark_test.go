//go:build linux || darwin

package file_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/file"
)

// xattrDir returns a directory whose filesystem keeps user extended
// attributes, or skips the test.
func xattrDir(t *testing.T) string {
	dir := t.TempDir()
	p := filepath.Join(dir, "probe")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	if err := unix.Setxattr(p, "user.mqb.probe", []byte("1"), 0); err != nil {
		t.Skipf("the filesystem of %s keeps no user extended attributes (%v): the committed mark is not used there", dir, err)
	}
	return dir
}

// loggedTarget builds a file target whose warnings go to logs.
func loggedTarget(t *testing.T, url string, logs *bytes.Buffer) bridge.Target {
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.NewTextHandler(logs, nil))
	file.Register(e)
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	require.NoError(t, tgt.Connect(context.Background()))
	t.Cleanup(func() { tgt.Close(context.Background(), nil) })
	return tgt
}

// TestTornRecordOfAKilledWriterIsCut: a writer killed in the middle of a
// batch leaves part of a record after what it committed; the next target
// cuts that part off before it appends, and keeps every whole line. A
// file mqb never wrote (no mark) keeps a last line without a line break.
func TestTornRecordOfAKilledWriterIsCut(t *testing.T) {
	ctx := context.Background()
	dir := xattrDir(t)
	p := filepath.Join(dir, "out.jsonl")
	url := "file://" + p + "?format=json"
	first := target(t, url)
	require.NoError(t, first.WriteBatch(ctx, msgs(`{"a":1}`, `{"a":2}`)))
	require.NoError(t, first.Close(ctx, nil))
	appendTo(t, p, `{"a":3}`+"\n"+`{"a":4,"pad":"xx`) // a batch cut short: one whole record, one torn

	var logs bytes.Buffer
	second := loggedTarget(t, url, &logs)
	require.NoError(t, second.WriteBatch(ctx, msgs(`{"a":5}`)))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`+"\n"+`{"a":2}`+"\n"+`{"a":3}`+"\n"+`{"a":5}`+"\n", string(b))
	assert.Contains(t, logs.String(), "cut a partial record off the end of the output")
	assert.Contains(t, logs.String(), "bytes=16")

	// Whole lines after the mark, and a file without a mark, are kept.
	appendTo(t, p, `{"other":1}`+"\n")
	require.NoError(t, second.Close(ctx, nil))
	logs.Reset()
	third := loggedTarget(t, url, &logs)
	require.NoError(t, third.WriteBatch(ctx, msgs(`{"a":6}`)))
	b, _ = os.ReadFile(p)
	assert.True(t, bytes.HasSuffix(b, []byte(`{"a":5}`+"\n"+`{"other":1}`+"\n"+`{"a":6}`+"\n")), "%s", b)
	assert.NotContains(t, logs.String(), "cut")

	own := filepath.Join(dir, "mine.jsonl")
	require.NoError(t, os.WriteFile(own, []byte(`{"mine":1}`+"\n"+`{"mine":2}`), 0o600))
	require.NoError(t, target(t, "file://"+own+"?format=json").WriteBatch(ctx, msgs(`{"a":7}`)))
	b, _ = os.ReadFile(own)
	assert.Equal(t, `{"mine":1}`+"\n"+`{"mine":2}`+"\n"+`{"a":7}`+"\n", string(b))
}

func appendTo(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, errors.Join(err, f.Close()))
}
