package file_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/file"
)

// newTarget builds a file target without connecting it.
func newTarget(t *testing.T, url string) bridge.Target {
	t.Helper()
	e := bridge.NewEnv()
	file.Register(e)
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	return tgt
}

// target builds a file target and connects it until the test ends.
func target(t *testing.T, url string) bridge.Target {
	t.Helper()
	tgt := newTarget(t, url)
	require.NoError(t, tgt.Connect(context.Background()))
	t.Cleanup(func() { tgt.Close(context.Background(), nil) })
	return tgt
}

func msgs(ps ...string) []*bridge.Message {
	out := make([]*bridge.Message, len(ps))
	for i, p := range ps {
		out[i] = &bridge.Message{ID: p, Payload: []byte(p)}
	}
	return out
}

func TestAppendToExistingCSVUsesItsHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.csv")
	require.NoError(t, os.WriteFile(p, []byte("id,name\n1,Ann"), 0o644)) // no final line break
	tgt := target(t, "file://"+p+"?format=csv")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs(`{"name":"Bo","id":"2"}`)))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "id,name\n1,Ann\n2,Bo\n", string(b))
}

func TestFailedBatchLeavesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.jsonl")
	tgt := target(t, "file://"+p+"?format=json")
	ctx := context.Background()
	require.NoError(t, tgt.WriteBatch(ctx, msgs(`{"a":1}`)))
	err := tgt.WriteBatch(ctx, msgs(`{"a":2}`, `not json`))
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Contains(t, err.Error(), "message not json: payload is not a JSON document")
	b, _ := os.ReadFile(p)
	assert.Equal(t, "{\"a\":1}\n", string(b), "no record of the failed batch was written")
}

func TestAppendFalseEmptiesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.txt")
	require.NoError(t, os.WriteFile(p, []byte("old\n"), 0o644))
	tgt := target(t, "file://"+p+"?append=false")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs("new")))
	b, _ := os.ReadFile(p)
	assert.Equal(t, "new\n", string(b))
}

func TestSourceRedeliversNackedRecordsFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "in.txt")
	require.NoError(t, os.WriteFile(p, []byte("a\nb\nc\n"), 0o644))
	e := bridge.NewEnv()
	file.Register(e)
	src, _, err := e.NewSource(bridge.Endpoint{URL: "file://" + p})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, src.Connect(ctx))
	defer src.Close(ctx)
	first, ack, err := src.ReadBatch(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, ack(ctx, assert.AnError))
	again, ack, err := src.ReadBatch(ctx, 3)
	require.NoError(t, err)
	require.Len(t, again, 3)
	assert.Same(t, first[0], again[0], "the same message, so a route-assigned id survives")
	assert.Equal(t, "c", string(again[2].Payload))
	assert.Equal(t, map[string]string{"content_type": "text/plain; charset=utf-8", "source": "in", "path": p, "line": "3"}, again[2].Metadata)
	require.NoError(t, ack(ctx, nil))
	_, _, err = src.ReadBatch(ctx, 3)
	assert.ErrorIs(t, err, bridge.ErrEndOfInput)
}
