package bridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mqb-project/mqb/core"
)

// DefaultRetryBudget is how long a route keeps retrying a transient failure
// to connect or to reach its servers (see RetryPolicy.Budget): long enough to
// ride out a server restart or the leader election of a cluster.
const DefaultRetryBudget = time.Minute

// RetryUser is implemented by endpoints that retry failures of their own
// while they run (a pull during a cluster's leader election). The route
// calls SetRetry with its policy before Connect; such an endpoint retries
// with a Backoff and fails once the failures have lasted the policy's
// Budget.
type RetryUser interface {
	SetRetry(p RetryPolicy)
}

// retryable reports whether a failure may go away if the operation is tried
// again: everything but a failure a target marked Permanent, a
// configuration mistake, or an error core.Permanent classifies as permanent
// (a symbolic link in a spool, a refused permission, a held claim, an
// exhausted sequence, a bad option...). A full disk or an I/O error is
// retried.
func retryable(err error) bool {
	return !errors.Is(err, ErrPermanent) && !errors.Is(err, ErrConfig) && !core.Permanent(err)
}

// Backoff paces the retries of one operation under a RetryPolicy: the wait
// before retry n is drawn at random between half and all of
// Initial*2^(n-1) (capped at Max), so that a fleet of processes that failed
// together does not retry in lockstep; retrying stops once the failures have
// lasted Budget (the last wait is cut short to end with it). The zero
// Backoff is not usable: make one with NewBackoff.
type Backoff struct {
	policy RetryPolicy
	first  time.Time // the first failure since the last success
	n      int       // failures since the last success
}

// NewBackoff returns a Backoff for p.
func NewBackoff(p RetryPolicy) *Backoff { return &Backoff{policy: p} }

// Reset records a success: the next failure starts a new budget.
func (b *Backoff) Reset() { b.n, b.first = 0, time.Time{} }

// Next records the failure err and returns how long to wait before the
// next attempt. It returns err itself when err is permanent (see Permanent,
// ConfigError), and an error wrapping err once the failures have lasted the
// budget.
func (b *Backoff) Next(err error) (time.Duration, error) {
	if !retryable(err) {
		return 0, err
	}
	now := time.Now()
	if b.n == 0 {
		b.first = now
	}
	b.n++
	spent := now.Sub(b.first)
	left := b.policy.Budget - spent
	if left <= 0 {
		return 0, fmt.Errorf("still failing after %d attempt(s) in %v (retry budget %v): %w",
			b.n, spent.Round(time.Millisecond), b.policy.Budget, err)
	}
	// The last attempt comes when the budget ends.
	return min(jitter(b.policy.wait(b.n)), left), nil
}

// Wait is Next followed by the wait it returned; it returns nil when the
// caller should try again, and ctx's error when ctx ends while waiting.
func (b *Backoff) Wait(ctx context.Context, err error) error {
	wait, err := b.Next(err)
	if err != nil {
		return err
	}
	return sleep(ctx, wait)
}

// jitter returns a wait drawn at random between half and all of d.
func jitter(d time.Duration) time.Duration { return d - rand.N(d/2+1) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry calls op until it returns nil, a permanent error, or keeps failing
// past p.Budget (see Backoff). Before each retry it calls onRetry, if not
// nil, with the failure, the retry's number and the wait before it. When
// ctx ends it returns op's last error.
func Retry(ctx context.Context, p RetryPolicy, op func(context.Context) error, onRetry func(err error, attempt int, wait time.Duration)) error {
	b := NewBackoff(p)
	for {
		err := op(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		wait, nerr := b.Next(err)
		if nerr != nil {
			return nerr
		}
		if onRetry != nil {
			onRetry(err, b.n, wait)
		}
		if sleep(ctx, wait) != nil {
			return err
		}
	}
}

// Attempt is the number of failures since the last success.
func (b *Backoff) Attempt() int { return b.n }
