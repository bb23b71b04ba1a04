package bridge_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core/option"
)

func TestBackoffWaitsWithJitterWithinTheBudget(t *testing.T) {
	p := bridge.RetryPolicy{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond, Budget: time.Hour}
	seen := map[time.Duration]bool{}
	for range 50 {
		b := bridge.NewBackoff(p)
		for i, want := range []time.Duration{10, 20, 40, 40} {
			want *= time.Millisecond
			d, err := b.Next(errors.New("refused"))
			require.NoError(t, err)
			assert.True(t, d >= want/2 && d <= want, "retry %d waits %v, want %v to %v", i+1, d, want/2, want)
			if i == 0 {
				seen[d] = true
			}
		}
	}
	assert.Greater(t, len(seen), 5, "waits differ from one process to the next")
}

func TestBackoffStops(t *testing.T) {
	p := bridge.RetryPolicy{Initial: 20 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 50 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"a transient failure, once the budget is spent", errors.New("connection refused"), true},
		{"a permanent failure, at once", bridge.Permanent(errors.New("bad payload")), false},
		{"a configuration mistake, at once", &bridge.ConfigError{Err: errors.New("no such stream")}, false},
		{"an invalid option, at once", &option.Error{Field: "x", Msg: "bad"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bridge.NewBackoff(p)
			start := time.Now()
			n := 0
			for {
				d, err := b.Next(tc.err)
				if err != nil {
					assert.ErrorIs(t, err, tc.err)
					break
				}
				n++
				time.Sleep(d)
			}
			if !tc.transient {
				assert.Zero(t, n)
				return
			}
			// Waits of 10-20ms, the last cut short to end with the budget:
			// at least one retry, at most six, and not before 50ms.
			assert.True(t, n >= 1 && n <= 6, "%d retries", n)
			assert.GreaterOrEqual(t, time.Since(start), p.Budget, "retried until the budget was spent")
		})
	}
}

func TestBackoffResetStartsANewBudget(t *testing.T) {
	b := bridge.NewBackoff(bridge.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Budget: 30 * time.Millisecond})
	for range 3 {
		_, err := b.Next(errors.New("down"))
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		b.Reset()
	}
	assert.Zero(t, b.Attempt())
}

// flakyEnd is a source or target whose Connect fails with errs in turn.
type flakyEnd struct {
	*fakeSource
	errs  []error
	calls int
}

func (f *flakyEnd) Connect(context.Context) error {
	f.calls++
	if f.calls <= len(f.errs) {
		return f.errs[f.calls-1]
	}
	return nil
}

func TestRouteRetriesConnect(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:4222: connect: connection refused")
	for _, tc := range []struct {
		name      string
		errs      []error
		budget    time.Duration
		wantErr   error // nil: the route runs
		wantCalls int
	}{
		{"transient failures, then a connection", []error{refused, refused, refused}, time.Minute, nil, 4},
		{"a configuration mistake fails at once", []error{&bridge.ConfigError{Err: errors.New("stream ORDERS does not exist")}}, time.Minute, bridge.ErrConfig, 1},
		{"a budget of 0 does not retry", []error{refused}, 0, refused, 1},
		{"failures past the budget", slices.Repeat([]error{refused}, 1000), 15 * time.Millisecond, refused, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &flakyEnd{fakeSource: newFakeSource(2), errs: tc.errs}
			tgt := &fakeTarget{}
			r := newRoute(src.fakeSource, tgt)
			r.Source = src
			r.Retry.Budget = tc.budget
			err := r.Run(context.Background())
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, seq(2), payloads(tgt.got))
			} else {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), "connect source fake-in")
				assert.Empty(t, tgt.got)
			}
			if tc.wantCalls > 0 {
				assert.Equal(t, tc.wantCalls, src.calls)
			} else {
				assert.GreaterOrEqual(t, src.calls, 2, "retried while the budget lasted")
				assert.Less(t, src.calls, len(tc.errs), "and stopped when it was spent")
			}
		})
	}
}

// retryUser records the policy the route gives it.
type retryUser struct {
	*fakeSource
	got *bridge.RetryPolicy
}

func (u *retryUser) SetRetry(p bridge.RetryPolicy) { u.got = &p }

func TestRouteGivesItsRetryPolicyToEndpoints(t *testing.T) {
	src := &retryUser{fakeSource: newFakeSource(1)}
	r := newRoute(src.fakeSource, &fakeTarget{})
	r.Source = src
	r.Retry.Budget = 42 * time.Second
	require.NoError(t, r.Run(context.Background()))
	require.NotNil(t, src.got)
	assert.Equal(t, *r.Retry, *src.got)
}
