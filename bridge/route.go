package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Defaults of a route.
const (
	DefaultBatchSize       = 100
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultBatchMaxBytes bounds what one write holds in memory when the
	// output or a processor needs payloads as bytes (see Route.BatchMaxBytes).
	DefaultBatchMaxBytes = 32 << 20
)

// DefaultRetry is the retry policy of a route that sets none: 100ms,
// doubling up to 5s between attempts, at most 10 retries of a batch, and
// failures to connect (or to reach a cluster while running, see RetryUser)
// retried for a minute.
var DefaultRetry = RetryPolicy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, MaxRetries: 10, Budget: DefaultRetryBudget}

// RetryPolicy says how a route retries a batch its target failed to write,
// and a failure to connect an end (see Backoff). The wait before retry n
// is drawn at random between half and all of Initial*2^(n-1), capped at
// Max.
type RetryPolicy struct {
	Initial time.Duration
	Max     time.Duration
	// MaxRetries is how many times one batch is retried before the route
	// fails; 0 means never, a negative value means forever.
	MaxRetries int
	// Budget is how long connecting an end is retried before the route
	// fails, and how long an endpoint that retries by itself (see
	// RetryUser) may keep failing; 0 means no such retries.
	Budget time.Duration
}

func (p RetryPolicy) wait(attempt int) time.Duration {
	d := p.Initial
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Route moves messages from a Source to a Target in batches. A batch is
// acknowledged at the source only after Target.WriteBatch returned nil for
// it, that is once the target made it durable; a failed write negatively
// acknowledges the batch (the source delivers it again) and is retried
// after a capped exponential backoff.
//
// Fill the fields, then call Run once.
type Route struct {
	Source Source
	Target Target
	// Input and Output are how the endpoints appear in logs and errors.
	Input, Output string

	// BatchSize is the most messages written at once; 0 means
	// DefaultBatchSize.
	BatchSize int
	// BatchPeriod is how long a batch that is not full waits for more
	// messages after its first one. 0 writes whatever one read returned.
	BatchPeriod time.Duration
	// BatchMaxBytes bounds the payload bytes of one write when the target
	// or a processor needs payloads in memory (a target that is no
	// BodyStreamer, or a Pipeline): such a batch is loaded, processed and
	// written in parts of at most this many bytes, one message at least,
	// and acknowledged once every part is durable. A payload left on disk
	// (a Body) is read only for its part, and dropped after it, so a batch
	// of large files never sits in memory whole. 0 means
	// DefaultBatchMaxBytes.
	BatchMaxBytes int64
	// Drain makes sources that could wait for more input (a spool, a drop
	// zone) end as soon as they have nothing left (see Drainer).
	Drain bool
	// Retry is the retry policy; nil means DefaultRetry.
	Retry *RetryPolicy
	// ShutdownTimeout bounds how long in-flight messages are given to
	// settle once the context of Run ends; 0 means
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// DeadLetter, when set, receives every message the target refuses for
	// what it holds (an error matching ErrRejected), with the failure in
	// its metadata (MetaDeadLetterError...); the route acknowledges such a
	// message at the source only once the dead-letter target has made it
	// durable, and goes on. Nil: a refusal stops the route.
	DeadLetter Target
	// DeadLetterOutput is how the dead-letter target appears in logs.
	DeadLetterOutput string
	// MaxDeliveries is how many times a refused message is tried before it
	// is dead-lettered; 0 means 1.
	MaxDeliveries int
	// Name names the route in dead-letter metadata; "" means "input ->
	// output".
	Name string

	// Logger receives the route's logs; nil means slog.Default().
	Logger *slog.Logger
	// Observer receives the route's events; nil means none.
	Observer Observer
	// Pipeline reshapes messages between Source and Target; nil means
	// none.
	Pipeline *Pipeline

	read, written, retried int64
	// redo holds the ids of messages whose write failed, which the source
	// delivers again: read again, they count as retried, not read.
	redo map[string]struct{}
	dl   *deadLetters
}

// Stats returns how many messages the route has read and how many it has
// written and acknowledged. A message read again after a failed write
// counts once (see Retried). Call it after Run returned.
func (r *Route) Stats() (read, written int64) { return r.read, r.written }

// Retried returns how many times messages were read again after a failed
// write. Call it after Run returned.
func (r *Route) Retried() int64 { return r.retried }

// Run connects both ends and moves messages until the input ends (nil), a
// failure that retrying cannot fix or that outlasts the retry policy (an
// error), or ctx ends. When ctx ends Run stops reading, writes and
// acknowledges what it already read (within ShutdownTimeout), closes both
// ends and returns an error matching ErrInterrupted.
//
// The target is closed with the route's outcome as cause (nil after a
// clean end of input), so a dir-spool target writes DONE as its emit_done
// option says; the source is closed after it, which releases its claims.
func (r *Route) Run(ctx context.Context) (err error) {
	if r.Source == nil || r.Target == nil {
		return errors.New("bridge: a route needs a source and a target")
	}
	retry := DefaultRetry
	if r.Retry != nil {
		retry = *r.Retry
	}
	if retry.Initial <= 0 || retry.Max < retry.Initial {
		return fmt.Errorf("bridge: retry policy: initial interval must be positive and no more than the max interval (got %v, %v)", retry.Initial, retry.Max)
	}
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	obs := r.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	grace := r.ShutdownTimeout
	if grace <= 0 {
		grace = DefaultShutdownTimeout
	}

	// sctx outlives ctx by grace: writes, acks and closes use it so that
	// what was read is settled after an interrupt.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			scancel()
		case <-done:
		}
	}()

	r.configureEnds(retry)
	if err := r.connectEnds(ctx, sctx, retry, log); err != nil {
		return err
	}
	start := time.Now()
	if s, ok := obs.(StartObserver); ok {
		s.Started()
	}
	log.Info("route started", "input", r.Input, "output", r.Output, "batch_size", r.batchSize(), "batch_period", r.BatchPeriod, "batch_max_bytes", r.batchMaxBytes(), "drain", r.Drain)

	runErr := r.loop(ctx, sctx, retry, log, obs)

	errs := append([]error{runErr}, r.closeEnds(sctx, runErr)...)
	elapsed := time.Since(start)
	switch {
	case runErr == nil:
		log.Info("route finished", "read", r.read, "written", r.written, "retried", r.retried, "dead_lettered", r.DeadLettered(), "elapsed", elapsed.Round(time.Millisecond))
	case errors.Is(runErr, ErrInterrupted):
		log.Warn("route interrupted", "read", r.read, "written", r.written, "retried", r.retried, "elapsed", elapsed.Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

// connectEnds connects the source, the target and the dead-letter
// endpoint, each with the route's retrying connect, closing what it opened
// when a later one fails.
func (r *Route) connectEnds(ctx, sctx context.Context, retry RetryPolicy, log *slog.Logger) error {
	if err := r.connect(ctx, retry, log, "input", r.Input, r.Source.Connect); err != nil {
		if ctx.Err() != nil {
			return r.interrupted(ctx)
		}
		return fmt.Errorf("connect source %s: %w", r.Input, err)
	}
	if err := r.connect(ctx, retry, log, "output", r.Output, r.Target.Connect); err != nil {
		cerr := r.Source.Close(sctx)
		if ctx.Err() != nil {
			return errors.Join(r.interrupted(ctx), cerr)
		}
		return errors.Join(fmt.Errorf("connect target %s: %w", r.Output, err), cerr)
	}
	if err := r.connectDeadLetter(ctx, func(ctx context.Context) error {
		return r.connect(ctx, retry, log, "dead_letter", r.DeadLetterOutput, r.DeadLetter.Connect)
	}); err != nil {
		if ctx.Err() != nil {
			err = r.interrupted(ctx)
		}
		return errors.Join(err, r.Target.Close(sctx, err), r.Source.Close(sctx))
	}
	return nil
}

// closeEnds closes the target with the route's outcome (a dir-spool
// target writes DONE from it), then the dead-letter endpoint, then the
// source, which releases its claims.
func (r *Route) closeEnds(sctx context.Context, runErr error) []error {
	var errs []error
	if err := r.Target.Close(sctx, runErr); err != nil {
		errs = append(errs, fmt.Errorf("close target %s: %w", r.Output, err))
	}
	if err := r.closeDeadLetter(sctx, runErr); err != nil {
		errs = append(errs, err)
	}
	if err := r.Source.Close(sctx); err != nil {
		errs = append(errs, fmt.Errorf("close source %s: %w", r.Input, err))
	}
	return errs
}

// configureEnds gives the ends what they need to know before Connect: the
// drain flag, and the retry policy.
func (r *Route) configureEnds(retry RetryPolicy) {
	if d, ok := r.Source.(Drainer); ok {
		d.SetDrain(r.Drain)
	}
	for _, end := range []any{r.Source, r.Target} {
		if u, ok := end.(RetryUser); ok {
			u.SetRetry(retry)
		}
	}
	if l, ok := r.Source.(PayloadLender); ok && r.lendable() {
		l.LendPayloads()
	}
}

// lendable reports whether the source may reuse a payload's buffer once
// its batch is acknowledged: the target, the dead-letter target and every
// processor forget payloads (PayloadForgetter).
func (r *Route) lendable() bool {
	if !forgets(r.Target) || (r.DeadLetter != nil && !forgets(r.DeadLetter)) {
		return false
	}
	if r.Pipeline != nil {
		for _, p := range r.Pipeline.Processors {
			if !forgets(p) {
				return false
			}
		}
	}
	return true
}

func (r *Route) batchSize() int {
	if r.BatchSize <= 0 {
		return DefaultBatchSize
	}
	return r.BatchSize
}

func (r *Route) batchMaxBytes() int64 {
	if r.BatchMaxBytes <= 0 {
		return DefaultBatchMaxBytes
	}
	return r.BatchMaxBytes
}

// needsBytes reports whether the route needs payloads in memory: for
// processors, or for a target that does not read Bodies itself.
func (r *Route) needsBytes() bool { return r.Pipeline != nil || !streams(r.Target) }

// parts splits batch into runs whose payloads add up to at most
// batchMaxBytes, a larger payload alone, when the route needs payloads in
// memory; else the batch stays whole, one write.
func (r *Route) parts(batch []*Message) [][]*Message {
	if !r.needsBytes() {
		return [][]*Message{batch}
	}
	limit := r.batchMaxBytes()
	var parts [][]*Message
	start, sum := 0, int64(0)
	for i, m := range batch {
		if i > start && sum+m.Len() > limit {
			parts = append(parts, batch[start:i])
			start, sum = i, 0
		}
		sum += m.Len()
	}
	return append(parts, batch[start:])
}

func (r *Route) interrupted(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || cause == ctx.Err() {
		return fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	}
	return fmt.Errorf("%w: %w", ErrInterrupted, cause)
}

// connect connects one end, retrying failures that are not permanent
// within the retry budget: a server that is starting, a cluster that is
// electing a leader.
func (r *Route) connect(ctx context.Context, retry RetryPolicy, log *slog.Logger, side, where string, op func(context.Context) error) error {
	return Retry(ctx, retry, op, func(err error, attempt int, wait time.Duration) {
		log.Warn("connect failed; retrying", side, where, "attempt", attempt, "wait", wait.Round(time.Millisecond), "error", err)
	})
}

// count counts a batch read: messages whose write failed before count as
// retried, the others as read. It returns the new messages and their
// payload bytes.
func (r *Route) count(batch []*Message) (n, bytes int) {
	for _, m := range batch {
		if _, again := r.redo[m.ID]; again && m.ID != "" {
			delete(r.redo, m.ID)
			r.retried++
			continue
		}
		n++
		bytes += int(m.Len())
	}
	r.read += int64(n)
	return n, bytes
}

// failed remembers the ids of a batch whose write failed, to recognise
// them when the source delivers them again. Ids that never come back (a
// competing consumer took them) are forgotten once there are many.
func (r *Route) failed(batch []*Message) {
	if r.redo == nil || len(r.redo) > 1<<16 {
		r.redo = map[string]struct{}{}
	}
	for _, m := range batch {
		r.redo[m.ID] = struct{}{}
	}
}

func (r *Route) loop(ctx, sctx context.Context, retry RetryPolicy, log *slog.Logger, obs Observer) error {
	failures := 0
	for {
		batch, acks, rerr := r.collect(ctx)
		if len(batch) > 0 {
			werr := r.write(sctx, batch, acks, obs)
			if werr == nil {
				failures = 0
			} else {
				if !retryable(werr) {
					return werr
				}
				failures++
				if retry.MaxRetries >= 0 && failures > retry.MaxRetries {
					return fmt.Errorf("%w after %d retries: %w", ErrRetriesExhausted, retry.MaxRetries, werr)
				}
				if ctx.Err() != nil {
					return r.interrupted(ctx)
				}
				wait := jitter(retry.wait(failures))
				obs.Retrying(failures, wait)
				log.Warn("write failed; retrying", "output", r.Output, "attempt", failures, "wait", wait.Round(time.Millisecond), "error", werr)
				if sleep(ctx, wait) != nil {
					return r.interrupted(ctx)
				}
				continue // the source delivers the nacked batch again
			}
		}
		switch {
		case rerr == nil:
		case errors.Is(rerr, ErrEndOfInput):
			return nil
		case ctx.Err() != nil:
			return r.interrupted(ctx)
		default:
			return fmt.Errorf("read from %s: %w", r.Input, rerr)
		}
	}
}

// write writes one batch, in parts (see parts), and settles it at the
// source: acknowledged once every part is durable at the target (or
// dropped by the pipeline), negatively acknowledged (to be delivered
// again) when a part failed. The error says why the write or the settling
// failed.
func (r *Route) write(sctx context.Context, batch []*Message, acks []AckFunc, obs Observer) error {
	n := len(batch)
	if fresh, fbytes := r.count(batch); fresh > 0 {
		obs.Received(fresh, fbytes)
	}
	for _, m := range batch {
		if m.ID == "" {
			m.ID = core.NewMessageID()
		}
		if m.Metadata == nil {
			m.Metadata = map[string]string{}
		}
	}
	for _, part := range r.parts(batch) {
		if err := r.writePart(sctx, part, obs); err != nil {
			return r.settleFailed(sctx, batch, acks, obs, err)
		}
	}
	if err := settle(sctx, acks, nil); err != nil {
		return Permanent(fmt.Errorf("acknowledge %d message(s) at %s: %w", n, r.Input, err))
	}
	r.written += int64(n)
	obs.Acked(n)
	return nil
}

// pipelineError is the failure of a processor (or of dead-lettering what
// it refused), which ends the route unless the pipeline's on_error is
// nack.
type pipelineError struct{ err error }

func (e *pipelineError) Error() string { return e.err.Error() }
func (e *pipelineError) Unwrap() error { return e.err }

// writePart loads the payloads of part that are left on disk when the route
// needs them in memory, runs it through the pipeline and writes what comes
// out. What it loaded is garbage once it returns.
func (r *Route) writePart(sctx context.Context, part []*Message, obs Observer) error {
	if r.needsBytes() {
		var err error
		if part, err = loadBodies(part); err != nil {
			return err
		}
	}
	out := part
	if r.Pipeline != nil {
		var err error
		if out, err = r.Pipeline.apply(part, r.refusedByPipeline(sctx)); err != nil {
			return &pipelineError{err}
		}
		if len(out) == 0 {
			return nil // all dropped: acknowledged with the batch
		}
	}
	t0, bytes := time.Now(), payloadBytes(out)
	if err := r.deliver(sctx, out); err != nil {
		return err
	}
	obs.Sent(len(out), bytes, time.Since(t0))
	return nil
}

// refusedByPipeline returns what the pipeline does with a message a
// processor fails on: dead-letter it, when the route has a dead-letter
// target; nil ends the batch.
func (r *Route) refusedByPipeline(sctx context.Context) func(*Message, error) error {
	if r.dl == nil {
		return nil
	}
	return func(m *Message, err error) error { return r.deadLetter(sctx, m, err) }
}

// settleFailed negatively acknowledges batch, one of whose parts failed with
// err, so that the source delivers it again, and returns the error the loop
// acts on: permanent when the settling failed, or when a processor failed
// and the pipeline's on_error is not nack.
func (r *Route) settleFailed(sctx context.Context, batch []*Message, acks []AckFunc, obs Observer, err error) error {
	n := len(batch)
	r.failed(batch)
	var perr *pipelineError
	if errors.As(err, &perr) {
		nerr := settle(sctx, acks, perr.err)
		obs.Nacked(n)
		if nerr != nil || r.Pipeline.OnError != OnErrorNack {
			return Permanent(errors.Join(perr.err, nerr))
		}
		return perr.err
	}
	obs.WriteFailed(n, err)
	nerr := settle(sctx, acks, err)
	obs.Nacked(n)
	err = fmt.Errorf("write %d message(s) to %s: %w", n, r.Output, err)
	if nerr != nil {
		return Permanent(errors.Join(err, fmt.Errorf("negatively acknowledge at %s: %w", r.Input, nerr)))
	}
	return err
}

// collect reads one batch: up to BatchSize messages, waiting at most
// BatchPeriod after the first for more. Messages read are returned even
// with an error, so that they are settled.
func (r *Route) collect(ctx context.Context) ([]*Message, []AckFunc, error) {
	size := r.batchSize()
	var msgs []*Message
	var acks []AckFunc
	var first time.Time
	for len(msgs) < size {
		if err := ctx.Err(); err != nil {
			return msgs, acks, err // stop reading: sources with a backlog may not look at ctx
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if len(msgs) > 0 {
			left := r.BatchPeriod - time.Since(first)
			if r.BatchPeriod <= 0 || left <= 0 {
				break
			}
			rctx, cancel = context.WithTimeout(ctx, left)
		}
		ms, ack, err := r.Source.ReadBatch(rctx, size-len(msgs))
		cancel()
		if len(ms) > 0 {
			if first.IsZero() {
				first = time.Now()
			}
			msgs = append(msgs, ms...)
			if ack != nil {
				acks = append(acks, ack)
			}
		} else if ack != nil && err == nil {
			_ = ack(ctx, nil) // an empty batch: nothing to settle
		}
		if err != nil {
			if len(msgs) > 0 && ctx.Err() == nil && rctx.Err() != nil {
				return msgs, acks, nil // the batch period is over
			}
			return msgs, acks, err
		}
	}
	return msgs, acks, nil
}

func settle(ctx context.Context, acks []AckFunc, err error) error {
	var errs []error
	for _, a := range acks {
		if e := a(ctx, err); e != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

func payloadBytes(ms []*Message) int {
	n := 0
	for _, m := range ms {
		n += int(m.Len())
	}
	return n
}
