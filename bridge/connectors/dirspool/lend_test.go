package dirspool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// fillSpool writes n chunks of 1 KiB to a spool at dir, chunk i's payload
// made of the byte 'a'+i%26 after its number, and returns the payloads.
func fillSpool(t *testing.T, dir string, n int) [][]byte {
	t.Helper()
	o := core.DefaultOptions(dir)
	o.Fsync = core.FsyncNone
	fsys, err := osfs.New(dir, osfs.Options{CreateRoot: true})
	require.NoError(t, err)
	p, err := core.OpenProducer(fsys, o)
	require.NoError(t, err)
	want := make([][]byte, n)
	msgs := make([]core.Message, n)
	for i := range msgs {
		b := make([]byte, 1024)
		for j := range b {
			b[j] = byte('a' + i%26)
		}
		copy(b, fmt.Sprint(i))
		want[i], msgs[i] = b, core.Message{Payload: b}
	}
	_, err = p.Write(context.Background(), msgs)
	require.NoError(t, err)
	require.NoError(t, errors.Join(p.Close(), fsys.Close()))
	return want
}

// keepingTarget keeps every message it is given, payload included, as a
// client library with a resend queue would; forgets is what it says of
// that (bridge.PayloadForgetter).
type keepingTarget struct {
	mu      sync.Mutex
	kept    []*bridge.Message
	forgets bool
}

func (t *keepingTarget) Connect(context.Context) error      { return nil }
func (t *keepingTarget) Close(context.Context, error) error { return nil }
func (t *keepingTarget) ForgetsPayloads() bool              { return t.forgets }
func (t *keepingTarget) WriteBatch(_ context.Context, ms []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kept = append(t.kept, ms...)
	return nil
}

// drainTo runs a draining route from the spool at dir to tgt in batches of
// 10.
func drainTo(t *testing.T, dir string, tgt bridge.Target) {
	t.Helper()
	src, _, err := env().NewSource(bridge.Endpoint{URL: "dir-spool://" + dir})
	require.NoError(t, err)
	r := &bridge.Route{Source: src, Target: tgt, Input: dir, Output: "keeping", BatchSize: 10, Drain: true,
		Logger: slog.New(slog.DiscardHandler)}
	require.NoError(t, r.Run(context.Background()))
}

// A route whose target keeps payloads gets each in memory of its own, which
// no later batch overwrites; one whose target forgets them has the source
// reuse the buffers of acknowledged batches.
func TestSourceLendsOnlyToTargetsThatForget(t *testing.T) {
	const n = 200
	for _, forgets := range []bool{false, true} {
		t.Run(fmt.Sprintf("forgets=%v", forgets), func(t *testing.T) {
			dir := t.TempDir()
			want := fillSpool(t, dir, n)
			tgt := &keepingTarget{forgets: forgets}
			drainTo(t, dir, tgt)
			require.Len(t, tgt.kept, n)
			arrays := map[*byte]bool{}
			intact := 0
			for i, m := range tgt.kept {
				arrays[&m.Payload[0]] = true
				if string(m.Payload) == string(want[i]) {
					intact++
				}
			}
			if !forgets {
				assert.Len(t, arrays, n, "a payload shares its memory with another")
				assert.Equal(t, n, intact, "payloads changed after their write")
				return
			}
			// Batches of 10: the buffers of a batch serve the next ones.
			assert.LessOrEqual(t, len(arrays), 20, "buffers were not reused")
		})
	}
}

// A lending source gives a later batch the buffers of an acknowledged one,
// and each payload read into a reused buffer is the chunk's own.
func TestLentBuffersHoldEachPayload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	want := fillSpool(t, dir, 30)
	src, _, err := env().NewSource(bridge.Endpoint{URL: "dir-spool://" + dir})
	require.NoError(t, err)
	src.(bridge.PayloadLender).LendPayloads()
	require.NoError(t, src.Connect(ctx))
	defer src.Close(ctx)
	seen := map[*byte]bool{}
	reused := 0
	for i := 0; i < 30; {
		ms, ack, err := src.ReadBatch(ctx, 10)
		require.NoError(t, err)
		for _, m := range ms {
			assert.Equal(t, string(want[i]), string(m.Payload), "payload %d", i)
			if seen[&m.Payload[0]] {
				reused++
			}
			seen[&m.Payload[0]] = true
			i++
		}
		require.NoError(t, ack(ctx, nil))
	}
	assert.Equal(t, 20, reused, "the second and third batches reuse the first's buffers")
}
