package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// pickyTarget refuses any batch holding a payload that starts with "bad",
// as a database refuses a transaction with one row that breaks a
// constraint; transient makes its next writes fail as a lost connection.
type pickyTarget struct {
	mu        sync.Mutex
	got       map[string]int // payload -> times written
	calls     int
	transient int
	held      map[string]bool
}

func newPicky() *pickyTarget { return &pickyTarget{got: map[string]int{}} }

func (t *pickyTarget) Connect(context.Context) error      { return nil }
func (t *pickyTarget) Close(context.Context, error) error { return nil }

func (t *pickyTarget) WriteBatch(_ context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	if t.transient > 0 {
		t.transient--
		return errors.New("connection reset by peer")
	}
	for _, m := range msgs {
		if strings.HasPrefix(string(m.Payload), "bad") {
			return bridge.Reject(fmt.Errorf("new row violates check constraint \"amount_positive\""))
		}
	}
	for _, m := range msgs {
		t.got[string(m.Payload)]++
	}
	return nil
}

// deadTarget stores dead letters by payload; after, when set, runs after
// each write.
type deadTarget struct {
	mu    sync.Mutex
	msgs  []*bridge.Message
	held  []string // ids it held before the route started, oldest first
	lists []int    // the n of each RecentIDs call
	after func()
}

func (d *deadTarget) Connect(context.Context) error      { return nil }
func (d *deadTarget) Close(context.Context, error) error { return nil }
func (d *deadTarget) WriteBatch(_ context.Context, msgs []*bridge.Message) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.msgs = append(d.msgs, msgs...)
	if d.after != nil {
		d.after()
	}
	return nil
}

func (d *deadTarget) RecentIDs(_ context.Context, n int) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists = append(d.lists, n)
	return slices.Clone(d.held[max(0, len(d.held)-n):]), nil
}

func feed(payloads []string) *fakeSource {
	s := &fakeSource{}
	for i, p := range payloads {
		s.queue = append(s.queue, &bridge.Message{ID: fmt.Sprintf("id-%03d", i), Payload: []byte(p)})
	}
	return s
}

func rows(n int, bad ...int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("row %d", i)
	}
	for _, b := range bad {
		out[b] = fmt.Sprintf("bad %d", b)
	}
	return out
}

func fastRetry() *bridge.RetryPolicy {
	return &bridge.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, MaxRetries: 10}
}

func TestDeadLetterIsolatesRefusedMessages(t *testing.T) {
	src, tgt, dead := feed(rows(100, 3, 41, 42, 99)), newPicky(), &deadTarget{}
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, Input: "in", Output: "out",
		BatchSize: 16, Retry: fastRetry(), Name: "orders"}
	require.NoError(t, r.Run(context.Background()))

	assert.Len(t, tgt.got, 96)
	for p, n := range tgt.got {
		assert.Equal(t, 1, n, "%s written %d times", p, n)
	}
	require.Len(t, dead.msgs, 4)
	var ids []string
	for _, m := range dead.msgs {
		ids = append(ids, m.ID)
		assert.Contains(t, m.Metadata[bridge.MetaDeadLetterError], "amount_positive")
		assert.Equal(t, "orders", m.Metadata[bridge.MetaDeadLetterRoute])
		assert.Equal(t, "in", m.Metadata[bridge.MetaDeadLetterSource])
		assert.Equal(t, "out", m.Metadata[bridge.MetaDeadLetterTarget])
		assert.Equal(t, "1", m.Metadata[bridge.MetaDeadLetterAttempts])
	}
	assert.Equal(t, []string{"id-003", "id-041", "id-042", "id-099"}, ids)
	assert.Equal(t, int64(4), r.DeadLettered())
	assert.Zero(t, src.inflight)
	assert.Empty(t, src.queue)
}

// Without a dead-letter target, a refusal stops the route as before.
func TestRefusalStopsARouteWithoutDeadLetter(t *testing.T) {
	src, tgt := feed(rows(10, 5)), newPicky()
	r := &bridge.Route{Source: src, Target: tgt, Retry: fastRetry()}
	err := r.Run(context.Background())
	require.ErrorIs(t, err, bridge.ErrRejected)
	assert.Equal(t, 1, tgt.calls, "a refusal is not retried")
}

// max_deliveries: a refused message is tried that many times before it is
// dead-lettered, and the count is in its metadata.
func TestMaxDeliveries(t *testing.T) {
	src, tgt, dead := feed(rows(4, 2)), newPicky(), &deadTarget{}
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, MaxDeliveries: 3, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, dead.msgs, 1)
	assert.Equal(t, "3", dead.msgs[0].Metadata[bridge.MetaDeadLetterAttempts])
	assert.Len(t, tgt.got, 3)
}

// Transient failures are retried and never dead-lettered.
func TestTransientFailuresAreNotDeadLettered(t *testing.T) {
	src, tgt, dead := feed(rows(20)), newPicky(), &deadTarget{}
	tgt.transient = 3
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	assert.Empty(t, dead.msgs)
	assert.Len(t, tgt.got, 20)
}

// A message the dead-letter target already holds (dead-lettered before a
// crash, never acknowledged at the source) is not written there again.
func TestDeadLetterOncePerMessage(t *testing.T) {
	src, tgt := feed(rows(6, 1, 4)), newPicky()
	dead := &deadTarget{held: []string{"id-001"}}
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, dead.msgs, 1)
	assert.Equal(t, "id-004", dead.msgs[0].ID)
}

// A route reads the ids the dead-letter target holds only once a message
// is refused, so a route whose messages all go through never reads a large
// dead-letter spool; and then the newest MinDeadLetterWindow of them, or
// four batches when that is more.
func TestDeadLetterHeldIDsListedAtTheFirstRefusal(t *testing.T) {
	dead := &deadTarget{}
	r := &bridge.Route{Source: feed(rows(20)), Target: newPicky(), DeadLetter: dead, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	assert.Empty(t, dead.lists, "nothing refused, nothing listed")

	for _, tc := range []struct{ batch, window int }{{4, bridge.MinDeadLetterWindow}, {5000, 20000}} {
		dead = &deadTarget{}
		r = &bridge.Route{Source: feed(rows(20, 2, 5, 17)), Target: newPicky(), DeadLetter: dead, BatchSize: tc.batch, Retry: fastRetry()}
		require.NoError(t, r.Run(context.Background()))
		assert.Equal(t, []int{tc.window}, dead.lists, "batch %d: listed once, at the first refusal", tc.batch)
		assert.Len(t, dead.msgs, 3)
	}
}

// A message dead-lettered before the newest MinDeadLetterWindow dead
// letters is past what a source delivers again after a crash: the route
// does not look that far back, and dead-letters it again.
func TestDeadLetterLooksBackAWindow(t *testing.T) {
	held := []string{"id-001"}
	for i := range bridge.MinDeadLetterWindow - 1 {
		held = append(held, fmt.Sprintf("older-%d", i))
	}
	dead := &deadTarget{held: held}
	r := &bridge.Route{Source: feed(rows(6, 1, 4)), Target: newPicky(), DeadLetter: dead, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, dead.msgs, 1, "id-001 is the oldest of the window: held")
	assert.Equal(t, "id-004", dead.msgs[0].ID)

	dead = &deadTarget{held: append(slices.Clone(held), "newer")}
	r = &bridge.Route{Source: feed(rows(6, 1, 4)), Target: newPicky(), DeadLetter: dead, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, dead.msgs, 2, "one newer dead letter pushes id-001 out of the window")
	assert.Equal(t, "id-001", dead.msgs[0].ID)
}

// A batch retried after one of its messages was dead-lettered (the rest
// of it failed for a passing reason) does not dead-letter it again.
func TestDeadLetterOnceWhenTheBatchIsRetried(t *testing.T) {
	src, tgt, dead := feed(rows(8, 1)), newPicky(), &deadTarget{}
	var once sync.Once
	dead.after = func() {
		once.Do(func() {
			tgt.mu.Lock()
			defer tgt.mu.Unlock()
			tgt.transient = 1 // the batch's next write fails, once
		})
	}
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, BatchSize: 4, Retry: fastRetry()}
	require.NoError(t, r.Run(context.Background()))
	require.Len(t, dead.msgs, 1)
	assert.Equal(t, "id-001", dead.msgs[0].ID)
	assert.Len(t, tgt.got, 7)
}

// A config that names a dead-letter endpoint builds a route with it, and a
// bad max_deliveries is a configuration error.
func TestDeadLetterConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := bridge.ParseConfig(strings.NewReader(fmt.Sprintf(`
input: {url: "stdin://"}
output: {url: "stdout://"}
dead_letter: "dir-spool://%s/dead"
max_deliveries: 2
`, dir)))
	require.NoError(t, err)
	require.NotNil(t, c.DeadLetter)
	assert.Equal(t, "dir-spool://"+dir+"/dead", c.DeadLetter.URL)
	assert.Equal(t, 2, c.MaxDeliveries)

	_, err = bridge.ParseConfig(strings.NewReader("input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nmax_deliveries: -1\n"))
	require.ErrorIs(t, err, bridge.ErrConfig)
}

// A processor that fails on a message sends that message, as it came from
// the source, to the dead-letter endpoint; the rest of the batch goes on.
func TestProcessorErrorsAreDeadLettered(t *testing.T) {
	src, tgt, dead := feed(rows(10, 3, 7)), newPicky(), &deadTarget{}
	r := &bridge.Route{Source: src, Target: tgt, DeadLetter: dead, Retry: fastRetry(),
		Pipeline: &bridge.Pipeline{Processors: []bridge.Processor{procFunc(func(m *bridge.Message) ([]*bridge.Message, error) {
			if strings.HasPrefix(string(m.Payload), "bad") {
				return nil, errors.New("cannot iterate over string")
			}
			return []*bridge.Message{{ID: m.ID, Metadata: m.Metadata, Payload: append([]byte("ok "), m.Payload...)}}, nil
		})}}}
	require.NoError(t, r.Run(context.Background()))
	assert.Len(t, tgt.got, 8)
	require.Len(t, dead.msgs, 2)
	assert.Equal(t, "bad 3", string(dead.msgs[0].Payload), "the message as the source gave it")
	assert.Contains(t, dead.msgs[0].Metadata[bridge.MetaDeadLetterError], "cannot iterate over string")
	assert.Zero(t, src.inflight)
}
