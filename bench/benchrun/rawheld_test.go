//go:build linux || darwin || freebsd

package benchrun

import (
	"bytes"
	"context"
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRawHeldKeepsEachPayload drains a backlog with the held raw consumer:
// every payload of a batch must sit whole in a buffer of its own, and the
// next batch must reuse the same buffers (from heldBuffers, as the spool
// reuses its lent ones); the plain consumer keeps none.
func TestRawHeldKeepsEachPayload(t *testing.T) {
	for _, hold := range []bool{false, true} {
		dir := t.TempDir()
		payload := makePayload(3000)
		fsys, err := openFS(osfs.Name, dir)
		require.NoError(t, err)
		b, err := openBacklog(fsys.fs, spoolOptions(dir, "none", LayoutFlat, true), payload)
		require.NoError(t, err)
		require.NoError(t, b.write(16))
		require.NoError(t, b.close())
		require.NoError(t, fsys.close())

		rc, err := newRawConsumer(dir, rawNames{sidecar: true}, "none", len(payload))
		require.NoError(t, err)
		rc.hold = hold
		require.NoError(t, rc.consume(8))
		if !hold {
			assert.Empty(t, rc.held, "the plain raw consumer holds nothing")
			require.NoError(t, rc.close())
			continue
		}
		require.Len(t, rc.held, 8, "one buffer per payload of the batch")
		first := make([]*byte, len(rc.held))
		for i, b := range rc.held {
			assert.True(t, bytes.HasPrefix(b, payload), "held[%d] holds payload %d whole", i, i)
			first[i] = &b[0]
		}
		for i := range first {
			for j := range i {
				assert.NotSame(t, first[i], first[j], "held[%d] and held[%d] share memory", i, j)
			}
		}
		require.NoError(t, rc.consume(8))
		require.Len(t, rc.held, 8, "the second batch holds 8 payloads too")
		for i, b := range rc.held {
			assert.True(t, bytes.HasPrefix(b, payload), "second batch: held[%d] holds its payload whole", i)
			assert.Contains(t, first, &b[0], "second batch: held[%d] is a new buffer, not one of the first batch's", i)
		}
		require.NoError(t, rc.close())
	}
}

// TestRunRawHeld runs consume cells with the held baseline: each has both
// raw arms, a ratio to each, and the table's ratio is the one to the faster.
func TestRunRawHeld(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Ops: []string{OpConsume}, Fsync: []string{"none"}, BatchSizes: []int{1, 8},
		Sizes: []int{100}, RawHeld: true, Count: 40, Rounds: 2}
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		require.Len(t, r.RawStrategies, 2, r.Name)
		require.Len(t, r.RawRatios, 2, r.Name)
		for _, arm := range []string{RawArmPrefix + "/" + RawOneBuffer, RawArmPrefix + "/" + RawHeld} {
			assert.Positive(t, r.RawStrategies[arm], "%s: %s msgs/s", r.Name, arm)
			assert.Positive(t, r.RawRatios[arm], "%s: ratio to %s", r.Name, arm)
		}
		assert.Equal(t, r.RawStrategies[r.RawArm], r.RawMsgsPerSec, "%s: the faster raw arm is the baseline", r.Name)
		assert.Equal(t, r.RawRatios[r.RawArm], r.RatioToRaw, "%s: the table's ratio is to that arm", r.Name)
	}
	var buf bytes.Buffer
	require.NoError(t, rep.WriteText(&buf))
	assert.Regexp(t, `held [0-9]+ \(x [0-9.]+\)`, buf.String(), "the held baseline is listed with the ratio to it")

	_, err = Run(context.Background(), Config{Dir: t.TempDir(), Ops: []string{OpProduce}, RawHeld: true, Count: 10, Rounds: 1})
	require.NoError(t, err, "RawHeld leaves produce cells alone")
	_, err = NewTrial(t.TempDir(), Case{Op: OpProduce, Fsync: "none", BatchSize: 1, Layout: LayoutFlat, Backend: osfs.Name, RawHeld: true})
	assert.ErrorContains(t, err, "only consume cases", "a produce case cannot hold payloads")
}

// TestStreamReadsEachIntoOneBuffer drains a backlog the way --read stream
// does: the deliveries of payloads above streamAbove must come without
// their payload in memory, and every payload must be read into the same
// buffer, batch after batch.
func TestStreamReadsEachIntoOneBuffer(t *testing.T) {
	dir := t.TempDir()
	payload := makePayload(streamAbove + 3000)
	o := spoolOptions(dir, "none", LayoutFlat, true)
	fsys, err := openFS(osfs.Name, dir)
	require.NoError(t, err)
	b, err := openBacklog(fsys.fs, o, payload)
	require.NoError(t, err)
	require.NoError(t, b.write(16))
	require.NoError(t, b.close())

	s, err := newSpoolConsumer(fsys, o, ReadStream, len(payload))
	require.NoError(t, err)
	ds, err := s.c.Read(context.Background(), 8)
	require.NoError(t, err)
	require.Len(t, ds, 8)
	for _, d := range ds {
		assert.Nil(t, d.Payload, "%s: payload read into memory by Read", d.Name)
		assert.EqualValues(t, len(payload), d.Size, "%s: size", d.Name)
	}
	require.NoError(t, s.readEach(ds))
	require.Equal(t, payload, s.one, "the one buffer holds the last payload read")
	one := &s.one[0]
	require.NoError(t, s.c.Ack(ds...))
	require.NoError(t, s.consume(8))
	require.Equal(t, payload, s.one, "after the second batch")
	assert.Same(t, one, &s.one[0], "the second batch was read into a new buffer")
	require.NoError(t, s.close())
}
