package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// bodyOf is a Body of s that counts its opens; broken ones fail to open.
func bodyOf(s string, opens *int, broken bool) *bridge.Body {
	return &bridge.Body{Size: int64(len(s)), Open: func() (io.ReadCloser, error) {
		*opens++
		if broken {
			return nil, errors.New("payload file gone")
		}
		return core.ExactReadCloser(io.NopCloser(strings.NewReader(s)), int64(len(s)), "test"), nil
	}}
}

// streamingTarget is a fakeTarget that reads bodies itself.
type streamingTarget struct{ *fakeTarget }

func (streamingTarget) StreamsBodies() bool { return true }

// TestRouteLoadsBodiesOnlyForTargetsThatNeedBytes sends messages with a
// Body: a target without BodyStreamer gets Payload, one with it gets the
// Body untouched; the route's byte counts are the sizes either way.
func TestRouteLoadsBodiesOnlyForTargetsThatNeedBytes(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		opens := 0
		src := newFakeSource(0)
		src.queue = []*bridge.Message{{ID: "a", Body: bodyOf("hello body", &opens, false)}, {ID: "b", Payload: []byte("bytes")}}
		tgt := &fakeTarget{}
		r := newRoute(src, tgt)
		if streaming {
			r.Target = streamingTarget{tgt}
		}
		obs := &byteObserver{}
		r.Observer = obs
		require.NoError(t, r.Run(context.Background()))
		require.Len(t, tgt.got, 2)
		if streaming {
			assert.Zero(t, opens, "a streaming target opens the body itself")
			assert.Nil(t, tgt.got[0].Payload)
		} else {
			assert.Equal(t, 1, opens)
			assert.Nil(t, tgt.got[0].Body)
			assert.Equal(t, "hello body", string(tgt.got[0].Payload))
		}
		assert.Equal(t, len("hello body")+len("bytes"), obs.received, "bytes counted from sizes")
	}
}

type byteObserver struct {
	countingObserver
	received int
}

func (o *byteObserver) Received(_, bytes int) { o.received += bytes }

// TestBodyThatCannotBeReadIsNotDelivered: a Body that fails to open, or
// holds fewer bytes than its Size, is never delivered short: the write
// fails and the batch is nacked.
func TestBodyThatCannotBeReadIsNotDelivered(t *testing.T) {
	opens := 0
	short := &bridge.Body{Size: 100, Open: func() (io.ReadCloser, error) {
		return core.ExactReadCloser(io.NopCloser(bytes.NewReader(make([]byte, 10))), 100, "short"), nil
	}}
	for _, body := range []*bridge.Body{bodyOf("x", &opens, true), short} {
		src := newFakeSource(0)
		src.queue = []*bridge.Message{{ID: "a", Body: body}}
		tgt := &fakeTarget{}
		r := newRoute(src, tgt)
		err := r.Run(context.Background())
		require.Error(t, err)
		assert.Empty(t, tgt.got)
		assert.Contains(t, src.events, "nack 1")
	}
	m := &bridge.Message{Body: short}
	require.ErrorIs(t, m.Load(), core.ErrPayloadSize)
	assert.Nil(t, m.Payload, "a failed Load leaves the message as it was")
}

// refuseBodies streams, and refuses every message that has a Body.
type refuseBodies struct{ fakeTarget }

func (*refuseBodies) StreamsBodies() bool { return true }
func (t *refuseBodies) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	for _, m := range msgs {
		if m.Body != nil {
			return bridge.Reject(errors.New("payload too large for this target"))
		}
	}
	return t.fakeTarget.WriteBatch(ctx, msgs)
}

// streamingDead is a deadTarget that reads bodies itself.
type streamingDead struct{ deadTarget }

func (*streamingDead) StreamsBodies() bool { return true }

// TestDeadLetterGetsTheBody: a message with a Body refused by a streaming
// target reaches the dead-letter target whole: loaded into Payload for
// one that needs bytes, as the Body for one that streams.
func TestDeadLetterGetsTheBody(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		opens := 0
		src := newFakeSource(0)
		src.queue = []*bridge.Message{{ID: "big", Body: bodyOf("a large payload", &opens, false)}}
		tgt := &refuseBodies{}
		tgt.src = src
		var dead bridge.Target
		plain, stream := &deadTarget{}, &streamingDead{}
		dead = plain
		if streaming {
			dead = stream
		}
		r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, Input: "in", Output: "out", Retry: fastRetry()}
		require.NoError(t, r.Run(context.Background()))
		if streaming {
			require.Len(t, stream.msgs, 1)
			assert.NotNil(t, stream.msgs[0].Body)
			assert.Zero(t, opens)
			continue
		}
		require.Len(t, plain.msgs, 1)
		assert.Equal(t, "a large payload", string(plain.msgs[0].Payload))
		assert.NotEmpty(t, plain.msgs[0].Metadata[bridge.MetaDeadLetterError])
	}
}

// partsTarget records, at each write, how many Bodies have been read so
// far: a part is loaded just before it is written, never sooner.
type partsTarget struct {
	fakeTarget
	opens  *int
	opened []int // per write: Bodies read by then
}

func (t *partsTarget) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.opened = append(t.opened, *t.opens)
	return t.fakeTarget.WriteBatch(ctx, msgs)
}

// bodies returns n messages whose payloads are Bodies of size bytes.
func bodies(n, size int, opens *int) []*bridge.Message {
	ms := make([]*bridge.Message, n)
	for i := range ms {
		ms[i] = &bridge.Message{ID: fmt.Sprintf("m%d", i), Body: bodyOf(strings.Repeat("x", size), opens, false)}
	}
	return ms
}

// TestBatchLoadedInPartsOfMaxBytes: a batch of Bodies for a target that
// needs bytes is loaded and written in parts of at most BatchMaxBytes, a
// larger payload alone, each part loaded only when its turn comes; the
// source's messages keep their Bodies, and the batch is acknowledged once,
// after its last part.
func TestBatchLoadedInPartsOfMaxBytes(t *testing.T) {
	opens := 0
	src := newFakeSource(0)
	src.queue = append(bodies(5, 100, &opens), &bridge.Message{ID: "big", Body: bodyOf(strings.Repeat("y", 300), &opens, false)})
	src.queue = append(src.queue, bodies(1, 100, &opens)...)
	batch := slices.Clone(src.queue)
	tgt := &partsTarget{opens: &opens}
	r := newRoute(src, &tgt.fakeTarget)
	r.Target = tgt
	r.BatchMaxBytes = 250
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, []int{2, 2, 1, 1, 1}, tgt.batches, "100+100, 100+100, 100, then 300 alone, then 100")
	assert.Equal(t, []int{2, 4, 5, 6, 7}, tgt.opened, "a part is read when it is written")
	assert.Equal(t, []string{"write 2", "write 2", "write 1", "write 1", "write 1", "ack 7"}, src.events)
	for _, m := range batch {
		assert.Nil(t, m.Payload, "%s: the source's message is not loaded", m.ID)
		assert.NotNil(t, m.Body, "%s: and keeps its Body", m.ID)
	}
	assert.Equal(t, strings.Repeat("y", 300), string(tgt.got[5].Payload), "the target got the bytes")
}

// streamingRoute is a route from a source of msgs to a target that reads
// Bodies itself, with BatchMaxBytes maxBytes.
func streamingRoute(msgs []*bridge.Message, maxBytes int64) (*bridge.Route, *fakeSource, *fakeTarget) {
	src := newFakeSource(0)
	src.queue = msgs
	tgt := &fakeTarget{}
	r := newRoute(src, tgt)
	r.Target = streamingTarget{tgt}
	r.BatchMaxBytes = maxBytes
	return r, src, tgt
}

// TestBatchForStreamingTargetStaysWhole: a target that reads Bodies itself
// gets the batch in one write, whatever its size: nothing is loaded.
func TestBatchForStreamingTargetStaysWhole(t *testing.T) {
	opens := 0
	r, src, tgt := streamingRoute(bodies(6, 100, &opens), 250)
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, []int{6}, tgt.batches)
	assert.Equal(t, []string{"write 6", "ack 6"}, src.events)
	assert.Zero(t, opens)
}

// TestBatchPartFailureNacksTheWholeBatch: when a later part fails, the
// whole batch is negatively acknowledged, the parts written before it
// included, and written again (at least once, never lost).
func TestBatchPartFailureNacksTheWholeBatch(t *testing.T) {
	opens := 0
	src := newFakeSource(0)
	src.queue = bodies(4, 100, &opens)
	tgt := &fakeTarget{src: src, fail: func(call int) error {
		if call == 2 {
			return errors.New("connection reset")
		}
		return nil
	}}
	r := newRoute(src, tgt)
	r.BatchMaxBytes = 200
	r.Retry = &bridge.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, MaxRetries: 3}
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, []string{"write 2", "write 2 failed", "nack 4", "write 2", "write 2", "ack 4"}, src.events)
	read, written := r.Stats()
	assert.Equal(t, int64(4), read)
	assert.Equal(t, int64(4), written)
	assert.Equal(t, int64(4), r.Retried())
}

// TestPipelineRunsPerPart: processors see each part loaded, and a part
// they drop whole is acknowledged with the batch.
func TestPipelineRunsPerPart(t *testing.T) {
	opens := 0
	r, src, tgt := streamingRoute(bodies(4, 100, &opens), 200)
	seen := 0
	r.Pipeline = &bridge.Pipeline{Processors: []bridge.Processor{procFunc(func(m *bridge.Message) ([]*bridge.Message, error) {
		require.NotNil(t, m.Payload, "a processor gets bytes")
		seen++
		if m.ID == "m0" || m.ID == "m1" {
			return nil, nil // the first part is dropped whole
		}
		return []*bridge.Message{m}, nil
	})}}
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, 4, seen)
	assert.Equal(t, []int{2}, tgt.batches, "the dropped part writes nothing")
	assert.Equal(t, []string{"write 2", "ack 4"}, src.events)
}
