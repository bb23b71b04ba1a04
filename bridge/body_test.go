package bridge_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

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
