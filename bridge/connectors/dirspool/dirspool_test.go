package dirspool_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core"
)

func env() *bridge.Env {
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.DiscardHandler)
	dirspool.Register(e)
	return e
}

func TestOptions(t *testing.T) {
	e := env()
	for _, tc := range []struct {
		name    string
		ep      bridge.Endpoint
		wantErr string
	}{
		{"url", bridge.Endpoint{URL: "dir-spool:///var/spool/orders?shard_depth=2"}, ""},
		{"alias spool", bridge.Endpoint{URL: "spool:///var/spool/orders"}, ""},
		{"alias dirspool", bridge.Endpoint{URL: "dirspool:///var/spool/orders"}, ""},
		{"yaml", bridge.Endpoint{Connector: "dir_spool", Fields: map[string]any{"path": "/var/spool/orders", "shard_depth": 2}}, ""},
		{"relative url", bridge.Endpoint{URL: "dir-spool://var/spool"}, `option "path" = "var/spool": must be absolute`},
		{"relative yaml", bridge.Endpoint{Connector: "dir_spool", Fields: map[string]any{"path": "spool"}}, `option "path" = "spool": must be an absolute path`},
		{"path as query", bridge.Endpoint{URL: "dir-spool:///x?path=/y"}, "comes from the URL path"},
		{"unknown option", bridge.Endpoint{URL: "dir-spool:///x?shard_dept=2"}, `option "shard_dept": unknown dir_spool option (valid: atomic, backend,`},
		{"mistyped option", bridge.Endpoint{URL: "dir-spool:///x?shard_depth=two"}, `option "shard_depth" = "two": expects a whole number`},
		{"bad naming pattern", bridge.Endpoint{URL: "dir-spool:///x?naming_pattern=msg-{seq:09}"}, `option "naming_pattern"`},
		{"unknown backend", bridge.Endpoint{URL: "dir-spool:///x?backend=s3"}, `option "backend" = "s3": is not a registered backend (valid: memfs, os)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := e.NewTarget(tc.ep)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, bridge.ErrConfig)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// Two routes in one process hand messages over through one memfs spool.
func TestMemfsSharedPerPathAndDone(t *testing.T) {
	e := env()
	ctx := context.Background()
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dir-spool:///mem/orders?backend=memfs&emit_done=success"})
	require.NoError(t, err)
	require.NoError(t, tgt.Connect(ctx))
	require.NoError(t, tgt.WriteBatch(ctx, []*bridge.Message{
		{ID: "id-1", Payload: []byte("one"), Metadata: map[string]string{"source": "orders"}},
		{ID: "id-2", Payload: []byte("two"), Metadata: map[string]string{}},
	}))
	backlog, err := tgt.(bridge.BacklogReporter).Backlog()
	require.NoError(t, err)
	assert.Equal(t, int64(2), backlog)
	require.NoError(t, tgt.Close(ctx, nil))

	src, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool:///mem/orders?backend=memfs&stop_on_done=true"})
	require.NoError(t, err)
	require.NoError(t, src.Connect(ctx))
	defer src.Close(ctx)
	ms, ack, err := src.ReadBatch(ctx, 10)
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, "id-1", ms[0].ID)
	assert.Equal(t, map[string]string{"source": "orders"}, ms[0].Metadata)
	assert.Equal(t, "two", string(ms[1].Payload))

	require.NoError(t, ack(ctx, assert.AnError)) // nack: delivered again, the same messages
	again, ack, err := src.ReadBatch(ctx, 10)
	require.NoError(t, err)
	assert.Same(t, ms[0], again[0])
	require.NoError(t, ack(ctx, nil))
	_, _, err = src.ReadBatch(ctx, 10)
	assert.ErrorIs(t, err, bridge.ErrEndOfInput, "DONE is there and the spool is empty")
}

func TestSecondDrainingConsumerNamesHolder(t *testing.T) {
	e := env()
	ctx := context.Background()
	dir := t.TempDir()
	a, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool://" + dir})
	require.NoError(t, err)
	require.NoError(t, a.Connect(ctx))
	defer a.Close(ctx)
	b, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool://" + dir})
	require.NoError(t, err)
	err = b.Connect(ctx)
	require.ErrorIs(t, err, core.ErrClaimed)
	assert.Contains(t, err.Error(), "CONSUMER claim is held by pid")
}

func TestDrainOnMissingDirectoryFails(t *testing.T) {
	e := env()
	src, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool://" + t.TempDir() + "/nope"})
	require.NoError(t, err)
	src.(bridge.Drainer).SetDrain(true)
	err = src.Connect(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "directory does not exist")
}

// A drain reports its total once the backlog is counted, in the
// background: exactly what was there, although chunks acked while the
// count lists may be deleted before it reaches them or after; once the
// spool is empty the total is what was acked.
func TestDrainProgressCountsInTheBackground(t *testing.T) {
	const chunks = 5000
	e := env()
	ctx := context.Background()
	dir := t.TempDir()
	o := core.DefaultOptions(dir)
	o.Fsync = core.FsyncNone
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	p, err := core.OpenProducer(fsys, o)
	require.NoError(t, err)
	msgs := make([]core.Message, chunks)
	for i := range msgs {
		msgs[i] = core.Message{Payload: []byte("x")}
	}
	_, err = p.Write(ctx, msgs)
	require.NoError(t, err)
	require.NoError(t, errors.Join(p.Close(), fsys.Close()))

	src, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool://" + dir})
	require.NoError(t, err)
	src.(bridge.Drainer).SetDrain(true)
	require.NoError(t, src.Connect(ctx))
	defer src.Close(ctx)
	pr := src.(bridge.Progresser)
	sawTotal := false
	for {
		done, total, unit := pr.Progress()
		assert.Equal(t, "messages", unit)
		if total != 0 {
			sawTotal = true
			require.Equal(t, int64(chunks), total, "the counted total (%d acked)", done)
		}
		ms, ack, err := src.ReadBatch(ctx, 7)
		if errors.Is(err, bridge.ErrEndOfInput) {
			break
		}
		require.NoError(t, err)
		require.NoError(t, ack(ctx, nil))
		assert.NotEmpty(t, ms)
	}
	assert.True(t, sawTotal, "the count never finished while %d chunks drained", chunks)
	done, total, _ := pr.Progress()
	assert.Equal(t, [2]int64{chunks, chunks}, [2]int64{done, total}, "a drained spool's total is what was acked")
}

// A source that does not drain has no total.
func TestProgressWithoutDrainHasNoTotal(t *testing.T) {
	e := env()
	src, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool://" + t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, src.Connect(context.Background()))
	defer src.Close(context.Background())
	_, total, _ := src.(bridge.Progresser).Progress()
	assert.Equal(t, int64(-1), total)
}
