package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// fakeSource hands out its messages in order, redelivers nacked ones first,
// and ends (or blocks, with wait) when it has none.
type fakeSource struct {
	mu        sync.Mutex
	queue     []*bridge.Message
	inflight  int
	wait      bool // block instead of ending when empty
	events    []string
	connected bool
	closed    bool
	drain     bool
}

func newFakeSource(n int) *fakeSource {
	s := &fakeSource{}
	for i := range n {
		s.queue = append(s.queue, &bridge.Message{Payload: []byte(fmt.Sprint(i))})
	}
	return s
}

func (s *fakeSource) log(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *fakeSource) SetDrain(d bool)                   { s.drain = d }
func (s *fakeSource) Connect(ctx context.Context) error { s.connected = true; return nil }
func (s *fakeSource) Close(ctx context.Context) error   { s.closed = true; return nil }

func (s *fakeSource) ReadBatch(ctx context.Context, max int) ([]*bridge.Message, bridge.AckFunc, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			n := min(max, len(s.queue))
			out := s.queue[:n:n]
			s.queue = s.queue[n:]
			s.inflight += n
			s.mu.Unlock()
			return out, func(_ context.Context, err error) error {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.inflight -= len(out)
				if err != nil {
					s.events = append(s.events, fmt.Sprintf("nack %d", len(out)))
					s.queue = append(append([]*bridge.Message(nil), out...), s.queue...)
					return nil
				}
				s.events = append(s.events, fmt.Sprintf("ack %d", len(out)))
				return nil
			}, nil
		}
		wait := s.wait
		s.mu.Unlock()
		if !wait {
			return nil, nil, bridge.ErrEndOfInput
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// fakeTarget stores what it is given; fail decides per call whether a write
// fails.
type fakeTarget struct {
	mu      sync.Mutex
	src     *fakeSource // to log into the same event list
	got     []*bridge.Message
	batches []int
	calls   int
	fail    func(call int) error
	delay   time.Duration
	cause   error
	closed  bool
}

func (t *fakeTarget) Connect(ctx context.Context) error { return nil }

func (t *fakeTarget) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	t.calls++
	call := t.calls
	t.mu.Unlock()
	if t.delay > 0 {
		time.Sleep(t.delay)
	}
	if t.fail != nil {
		if err := t.fail(call); err != nil {
			t.src.log(fmt.Sprintf("write %d failed", len(msgs)))
			return err
		}
	}
	t.mu.Lock()
	t.got = append(t.got, msgs...)
	t.batches = append(t.batches, len(msgs))
	t.mu.Unlock()
	t.src.log(fmt.Sprintf("write %d", len(msgs)))
	return nil
}

func (t *fakeTarget) Close(ctx context.Context, cause error) error {
	t.cause, t.closed = cause, true
	return nil
}

func payloads(ms []*bridge.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Payload)
	}
	return out
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}

func newRoute(src *fakeSource, tgt *fakeTarget) *bridge.Route {
	tgt.src = src
	return &bridge.Route{
		Source: src, Target: tgt, Input: "fake-in", Output: "fake-out",
		Retry:  &bridge.RetryPolicy{Initial: time.Millisecond, Max: 4 * time.Millisecond, MaxRetries: 5},
		Logger: slog.New(slog.DiscardHandler),
	}
}

type countingObserver struct {
	mu                                    sync.Mutex
	received, sent, failed, acked, nacked int
	retries                               []time.Duration
}

func (o *countingObserver) Received(n, _ int) { o.mu.Lock(); o.received += n; o.mu.Unlock() }
func (o *countingObserver) Sent(n, _ int, _ time.Duration) {
	o.mu.Lock()
	o.sent += n
	o.mu.Unlock()
}
func (o *countingObserver) WriteFailed(n int, _ error) { o.mu.Lock(); o.failed += n; o.mu.Unlock() }
func (o *countingObserver) Acked(n int)                { o.mu.Lock(); o.acked += n; o.mu.Unlock() }
func (o *countingObserver) Nacked(n int)               { o.mu.Lock(); o.nacked += n; o.mu.Unlock() }
func (o *countingObserver) Retrying(_ int, d time.Duration) {
	o.mu.Lock()
	o.retries = append(o.retries, d)
	o.mu.Unlock()
}

func TestRouteAcksAfterWriteInBatches(t *testing.T) {
	src, tgt := newFakeSource(10), &fakeTarget{}
	r := newRoute(src, tgt)
	r.BatchSize, r.Drain = 3, true
	require.NoError(t, r.Run(context.Background()))

	assert.Equal(t, seq(10), payloads(tgt.got))
	assert.Equal(t, []int{3, 3, 3, 1}, tgt.batches)
	assert.Equal(t, []string{"write 3", "ack 3", "write 3", "ack 3", "write 3", "ack 3", "write 1", "ack 1"}, src.events)
	assert.True(t, src.drain, "the route passes its drain flag to a Drainer")
	assert.True(t, tgt.closed)
	assert.NoError(t, tgt.cause, "a clean end closes the target with a nil cause")
	assert.True(t, src.closed)
	read, written := r.Stats()
	assert.Equal(t, int64(10), read)
	assert.Equal(t, int64(10), written)
}

func TestRouteAssignsStableIDs(t *testing.T) {
	src := newFakeSource(3)
	src.queue[1].ID = "given"
	var failedIDs []string
	tgt := &fakeTarget{}
	r := newRoute(src, tgt)
	tgt.fail = func(call int) error {
		if call == 1 {
			return errors.New("transient")
		}
		return nil
	}
	r.Target = &idRecorder{fakeTarget: tgt, ids: &failedIDs}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, tgt.got, 3)
	var ids []string
	for _, m := range tgt.got {
		ids = append(ids, m.ID)
		assert.NotNil(t, m.Metadata)
	}
	assert.Len(t, ids[0], 32, "a UUIDv7 as 32 hex digits")
	assert.Equal(t, "given", ids[1], "an id from the source is kept")
	assert.Equal(t, failedIDs, ids, "a redelivered message keeps the id it got on its first attempt")
}

// idRecorder notes the ids of the first batch it is given.
type idRecorder struct {
	*fakeTarget
	ids  *[]string
	seen bool
}

func (r *idRecorder) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	if !r.seen {
		r.seen = true
		for _, m := range msgs {
			*r.ids = append(*r.ids, m.ID)
		}
	}
	return r.fakeTarget.WriteBatch(ctx, msgs)
}

func TestRouteNacksAndRetriesWithBackoff(t *testing.T) {
	src := newFakeSource(4)
	tgt := &fakeTarget{fail: func(call int) error {
		if call <= 3 {
			return fmt.Errorf("disk busy (call %d)", call)
		}
		return nil
	}}
	obs := &countingObserver{}
	r := newRoute(src, tgt)
	r.Observer = obs
	require.NoError(t, r.Run(context.Background()))

	assert.Equal(t, seq(4), payloads(tgt.got), "nothing lost, nothing duplicated")
	assert.Equal(t, []string{"write 4 failed", "nack 4", "write 4 failed", "nack 4", "write 4 failed", "nack 4", "write 4", "ack 4"}, src.events)
	assertJittered(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}, obs.retries)
	assert.Equal(t, 12, obs.nacked)
	assert.Equal(t, 4, obs.acked)
	assert.Equal(t, 4, obs.received, "a message read again after a failed write is received once")
	assert.Equal(t, 4, obs.sent)
	read, written := r.Stats()
	assert.Equal(t, [3]int64{4, 4, 12}, [3]int64{read, written, r.Retried()}, "read, written, retried")
}

// assertJittered checks that each wait is between half and all of the
// exponential backoff's.
func assertJittered(t *testing.T, want, got []time.Duration) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, d := range got {
		assert.True(t, d >= want[i]/2 && d <= want[i], "wait %d is %v, want between %v and %v", i+1, d, want[i]/2, want[i])
	}
}

func TestRouteBackoffIsCapped(t *testing.T) {
	src := newFakeSource(1)
	tgt := &fakeTarget{fail: func(call int) error {
		if call <= 5 {
			return errors.New("busy")
		}
		return nil
	}}
	obs := &countingObserver{}
	r := newRoute(src, tgt)
	r.Observer = obs
	require.NoError(t, r.Run(context.Background()))
	ms := time.Millisecond
	assertJittered(t, []time.Duration{ms, 2 * ms, 4 * ms, 4 * ms, 4 * ms}, obs.retries)
}

func TestRouteFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      func(int) error
		wantErr   error
		wantCalls int
	}{
		{"permanent error stops at once", func(int) error { return bridge.Permanent(errors.New("payload not JSON")) }, bridge.ErrPermanent, 1},
		{"retries run out", func(int) error { return errors.New("still down") }, bridge.ErrRetriesExhausted, 6},
		{"a full disk is retried", func(int) error { return spoolErr(syscall.ENOSPC) }, bridge.ErrRetriesExhausted, 6},
		{"an I/O error is retried", func(int) error { return spoolErr(syscall.EIO) }, bridge.ErrRetriesExhausted, 6},
		{"a symbolic link stops at once", func(int) error { return spoolErr(syscall.ELOOP) }, syscall.ELOOP, 1},
		{"a refused permission stops at once", func(int) error { return spoolErr(syscall.EACCES) }, syscall.EACCES, 1},
		{"a name another writer holds stops at once", func(int) error { return spoolErr(syscall.EEXIST) }, syscall.EEXIST, 1},
		{"exhausted sequence numbers stop at once", func(int) error { return fmt.Errorf("spool /x: %w", core.ErrSequenceExhausted) }, core.ErrSequenceExhausted, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(2)
			tgt := &fakeTarget{fail: tc.fail}
			r := newRoute(src, tgt)
			err := r.Run(context.Background())
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), "fake-out")
			assert.Equal(t, tc.wantCalls, tgt.calls)
			assert.Empty(t, tgt.got)
			assert.Len(t, src.queue, 2, "the failed batch was nacked back to the source")
			assert.ErrorIs(t, tgt.cause, tc.wantErr, "the target is closed with the failure as cause")
			assert.True(t, src.closed)
		})
	}
}

// spoolErr is what a spool target returns when the filesystem fails with
// errno.
func spoolErr(errno syscall.Errno) error {
	return fmt.Errorf("spool /x: create 000000000.bin.tmp: %w", &fs.PathError{Op: "open", Path: "000000000.bin.tmp", Err: errno})
}

func TestRouteBatchPeriodGathersMessages(t *testing.T) {
	src := &fakeSource{wait: true}
	tgt := &fakeTarget{}
	r := newRoute(src, tgt)
	r.BatchSize, r.BatchPeriod = 100, 150*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for i := range 5 {
		src.mu.Lock()
		src.queue = append(src.queue, &bridge.Message{Payload: []byte(fmt.Sprint(i))})
		src.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		tgt.mu.Lock()
		defer tgt.mu.Unlock()
		return len(tgt.got) == 5
	}, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, bridge.ErrInterrupted)
	assert.Equal(t, []int{5}, tgt.batches, "messages arriving within the period form one batch")
}

func TestRouteInterruptSettlesInFlight(t *testing.T) {
	src := &fakeSource{wait: true}
	for i := range 3 {
		src.queue = append(src.queue, &bridge.Message{Payload: []byte(fmt.Sprint(i))})
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	tgt := &fakeTarget{delay: 100 * time.Millisecond}
	r := newRoute(src, tgt)
	tgt.fail = func(call int) error {
		if call == 1 {
			cancel(errors.New("got SIGINT")) // interrupted while the batch is being written
		}
		return nil
	}
	err := r.Run(ctx)
	require.ErrorIs(t, err, bridge.ErrInterrupted)
	assert.Contains(t, err.Error(), "got SIGINT")
	assert.Equal(t, seq(3), payloads(tgt.got), "the batch in flight is still written")
	assert.Equal(t, []string{"write 3", "ack 3"}, src.events, "and acknowledged")
	assert.ErrorIs(t, tgt.cause, bridge.ErrInterrupted, "an interrupted route is not a success: no DONE for emit_done=success")
	assert.True(t, src.closed, "the source is closed, releasing its claims")
}

func TestRouteInterruptDuringBackoff(t *testing.T) {
	src := newFakeSource(2)
	ctx, cancel := context.WithCancel(context.Background())
	tgt := &fakeTarget{fail: func(int) error { cancel(); return errors.New("down") }}
	r := newRoute(src, tgt)
	r.Retry = &bridge.RetryPolicy{Initial: time.Hour, Max: time.Hour, MaxRetries: -1}
	start := time.Now()
	err := r.Run(ctx)
	require.ErrorIs(t, err, bridge.ErrInterrupted)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Len(t, src.queue, 2, "the failed batch was nacked, nothing is in flight")
}

func TestRouteReadErrorFails(t *testing.T) {
	src := &errSource{err: &bridge.RecordError{Path: "/data/in.jsonl", Line: 7, Err: errors.New("not JSON")}}
	tgt := &fakeTarget{}
	r := newRoute(&fakeSource{}, tgt)
	r.Source = src
	err := r.Run(context.Background())
	require.ErrorIs(t, err, bridge.ErrMalformedInput)
	assert.Contains(t, err.Error(), "/data/in.jsonl:7: not JSON")
	assert.Equal(t, []string{"0"}, payloads(tgt.got), "what was read before the bad record is written")
}

type errSource struct {
	calls int
	err   error
}

func (s *errSource) Connect(context.Context) error { return nil }
func (s *errSource) Close(context.Context) error   { return nil }
func (s *errSource) ReadBatch(ctx context.Context, max int) ([]*bridge.Message, bridge.AckFunc, error) {
	s.calls++
	if s.calls == 1 {
		return []*bridge.Message{{Payload: []byte("0")}}, func(context.Context, error) error { return nil }, nil
	}
	return nil, nil, s.err
}

// blindSource never looks at its context while it has messages, like a
// spool consumer with a backlog.
type blindSource struct {
	mu    sync.Mutex
	next  int
	acked int
}

func (s *blindSource) Connect(context.Context) error { return nil }
func (s *blindSource) Close(context.Context) error   { return nil }
func (s *blindSource) ReadBatch(_ context.Context, max int) ([]*bridge.Message, bridge.AckFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*bridge.Message, max)
	for i := range out {
		out[i] = &bridge.Message{Payload: []byte(fmt.Sprint(s.next))}
		s.next++
	}
	return out, func(_ context.Context, err error) error {
		if err == nil {
			s.mu.Lock()
			s.acked += len(out)
			s.mu.Unlock()
		}
		return nil
	}, nil
}

func TestRouteStopsReadingOnInterruptWithABacklog(t *testing.T) {
	src := &blindSource{}
	ctx, cancel := context.WithCancel(context.Background())
	tgt := &fakeTarget{src: &fakeSource{}}
	tgt.fail = func(call int) error {
		if call == 3 {
			cancel()
		}
		return nil
	}
	r := &bridge.Route{Source: src, Target: tgt, BatchSize: 2, Logger: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, bridge.ErrInterrupted)
	case <-time.After(10 * time.Second):
		t.Fatal("the route kept reading after its context ended")
	}
	assert.Equal(t, 3, tgt.calls, "no batch is read after the interrupt")
	assert.Equal(t, 6, src.acked, "and every batch read was written and acknowledged")
	assert.Equal(t, 6, src.next)
}
