package nats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqb-project/mqb/core/option"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mqb-project/mqb/bridge"
)

// pollWait bounds one pull request while the source waits for a message;
// drainPoll is the wait of a draining source, which asks JetStream after
// each empty pull whether the durable consumer has anything left.
const (
	pollWait  = 5 * time.Second
	drainPoll = time.Second
)

// Source reads a stream through a durable pull consumer and acknowledges
// messages to JetStream only when the route acknowledges them.
type Source struct {
	cfg     *config
	log     *slog.Logger
	durable string
	ccfg    jetstream.ConsumerConfig
	drain   bool
	policy  bridge.RetryPolicy // how long a lost connection is waited out
	retry   *bridge.Backoff    // failing pulls and consumer lookups

	nc       *natsgo.Conn
	stream   string
	cons     jetstream.Consumer
	inflight atomic.Int64 // batches read and not yet settled
}

var (
	_ bridge.Source    = (*Source)(nil)
	_ bridge.Drainer   = (*Source)(nil)
	_ bridge.RetryUser = (*Source)(nil)
)

// NewSource builds a NATS JetStream source from decoded options.
func NewSource(env *bridge.Env, v *option.Values) (*Source, error) {
	cfg, err := decode(v)
	if err != nil {
		return nil, err
	}
	durable := v.String("durable")
	if durable == "" {
		return nil, &option.Error{Field: "durable", Msg: "is required for a source: the durable consumer keeps the position across restarts"}
	}
	if strings.ContainsAny(durable, ".*> \t") {
		return nil, &option.Error{Field: "durable", Value: durable, Msg: "must not contain '.', '*', '>' or white space"}
	}
	policy := map[string]jetstream.DeliverPolicy{
		"all": jetstream.DeliverAllPolicy, "new": jetstream.DeliverNewPolicy, "last": jetstream.DeliverLastPolicy,
	}[v.String("deliver_policy")]
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Source{cfg: cfg, log: log, durable: durable, policy: bridge.DefaultRetry, retry: bridge.NewBackoff(bridge.DefaultRetry), ccfg: jetstream.ConsumerConfig{
		Durable:       durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       v.Duration("ack_wait"),
		MaxAckPending: v.Int("max_ack_pending"),
		FilterSubject: cfg.subject,
		DeliverPolicy: policy,
	}}, nil
}

// SetDrain makes the source end once the durable consumer has nothing
// left: no message waiting for it in the stream and none delivered and not
// yet acknowledged, by this process or by another reading the same
// durable. The route calls it before Connect.
func (s *Source) SetDrain(drain bool) { s.drain = drain }

// SetRetry sets how long pulls may keep failing (while a cluster elects a
// leader, say) before ReadBatch fails. The route calls it before Connect.
func (s *Source) SetRetry(p bridge.RetryPolicy) { s.policy, s.retry = p, bridge.NewBackoff(p) }

// idle is how long ReadBatch waits without a message before it ends the
// input: idle_timeout, and only when not draining.
func (s *Source) idle() time.Duration {
	if s.drain || !s.cfg.idleSet {
		return 0
	}
	return s.cfg.idle
}

// Connect connects, finds (or creates) the stream and creates or updates
// the durable consumer.
func (s *Source) Connect(ctx context.Context) error {
	nc, js, stream, err := s.cfg.connect(ctx, s.log, "source")
	if err != nil {
		return err
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		cctx, cancel = context.WithTimeout(ctx, s.cfg.timeout)
	}
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(cctx, stream, s.ccfg)
	if err != nil {
		nc.Close()
		return configIf(fmt.Errorf("nats source: durable consumer %s: %w", s.durable, err))
	}
	s.nc, s.stream, s.cons = nc, stream, cons
	s.log.Info("nats source connected", "server", nc.ConnectedUrlRedacted(), "stream", stream, "subject", s.cfg.subject, "durable", s.durable)
	return nil
}

// ReadBatch returns up to max messages, waiting for at least one. Without
// drain it returns bridge.ErrEndOfInput after idle_timeout without a
// message (when set), counted only while the connection is up and no batch
// is unsettled. With drain it returns it once the durable consumer has
// nothing pending and nothing awaiting acknowledgement (see SetDrain).
func (s *Source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	if s.cons == nil {
		return nil, nil, errors.New("nats source: ReadBatch before Connect")
	}
	limit = max(limit, 1)
	idle := s.idle()
	quiet := time.Now() // since when nothing arrived
	for {
		msgs, err := s.fetch(ctx, limit, 0)
		if err != nil {
			return nil, nil, err
		}
		if len(msgs) == 0 {
			// Nothing right now: wait for one message, then take what else
			// is there.
			wait := pollWait
			switch {
			case s.drain:
				wait = drainPoll
			case idle > 0:
				wait = max(min(wait, idle-time.Since(quiet)), 50*time.Millisecond)
			}
			if msgs, err = s.fetch(ctx, 1, wait); err != nil {
				return nil, nil, err
			}
			if len(msgs) > 0 && limit > 1 {
				more, err := s.fetch(ctx, limit-1, 0)
				if err != nil {
					s.settle(context.Background(), msgs, err)
					return nil, nil, err
				}
				msgs = append(msgs, more...)
			}
		}
		if len(msgs) > 0 {
			return s.deliver(msgs)
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if s.drain {
			done, err := s.drained(ctx)
			if err != nil || done {
				return nil, nil, cmp.Or(err, bridge.ErrEndOfInput)
			}
			continue
		}
		if !s.nc.IsConnected() || s.inflight.Load() > 0 {
			quiet = time.Now()
		} else if idle > 0 && time.Since(quiet) >= idle {
			return nil, nil, bridge.ErrEndOfInput
		}
	}
}

// drained asks JetStream whether the durable consumer has nothing left:
// no message of the stream waiting for it, and none delivered (to this
// process or another) and not yet acknowledged. A message held by a reader
// that died counts until ack_wait has passed and it was delivered again.
func (s *Source) drained(ctx context.Context) (bool, error) {
	if !s.nc.IsConnected() || s.inflight.Load() > 0 {
		return false, nil
	}
	ictx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	info, err := s.cons.Info(ictx)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, s.failed(ctx, fmt.Errorf("nats source: state of consumer %s: %w", s.durable, err))
	}
	s.retry.Reset()
	if info.NumPending > 0 || info.NumAckPending > 0 {
		s.log.Debug("nats: draining; the durable consumer still has messages", "durable", s.durable,
			"pending", info.NumPending, "awaiting_ack", info.NumAckPending)
		return false, nil
	}
	return true, nil
}

// failed waits before the source tries again after err, a failure to reach
// the consumer that may pass (a leader election, a server restarting). It
// returns nil to try again, or err once such failures have lasted the
// route's retry budget; a failure that cannot pass (the consumer was
// deleted) is returned at once.
func (s *Source) failed(ctx context.Context, err error) error {
	var api *jetstream.APIError
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrNotPullConsumer) ||
		errors.As(err, &api) && api.Code == 400 {
		return err
	}
	return s.waitOut(ctx, s.retry, "nats: consumer unreachable; retrying", err)
}

// waitOut records the failure err in b and waits the backoff's next wait,
// logging msg. It returns nil to try again, ctx's error if ctx ends first,
// or an error wrapping err once such failures have lasted the budget.
func (s *Source) waitOut(ctx context.Context, b *bridge.Backoff, msg string, err error) error {
	attempt := b.Attempt() + 1
	wait, werr := b.Next(err)
	if werr != nil {
		return werr
	}
	s.log.Warn(msg, "durable", s.durable, "attempt", attempt, "wait", wait.Round(time.Millisecond), "error", err)
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetch pulls up to n messages: those available now when wait is 0, else
// waiting up to wait for the first.
func (s *Source) fetch(ctx context.Context, n int, wait time.Duration) ([]jetstream.Msg, error) {
	if !s.nc.IsConnected() {
		// Pull requests fail while the client reconnects: wait instead,
		// within the retry budget.
		return nil, s.failed(ctx, fmt.Errorf("nats source: connection lost, reconnecting to %s: %w", s.cfg.where(), natsgo.ErrDisconnected))
	}
	var (
		batch jetstream.MessageBatch
		err   error
	)
	var wctx context.Context
	if wait == 0 {
		batch, err = s.cons.FetchNoWait(n)
	} else {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
		batch, err = s.cons.Fetch(n, jetstream.FetchContext(wctx))
	}
	if err != nil {
		// nats.go compares a context's deadline with the clock and refuses
		// one already past as an invalid option, possibly before the
		// context's own timer has fired. A caller's deadline that passed is
		// the caller's; only our own wait running out means "nothing yet".
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if expired(ctx) {
			return nil, context.DeadlineExceeded
		}
		if wctx != nil && expired(wctx) {
			return nil, nil
		}
		return nil, s.fetchErr(ctx, err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if err := batch.Error(); err != nil && len(msgs) == 0 {
		return nil, s.fetchErr(ctx, err)
	}
	s.retry.Reset()
	return msgs, nil
}

// expired reports whether ctx ended or its deadline has passed by the clock.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// fetchErr sorts a failed pull: a context that ended is the caller's, a
// lost connection is waited out, anything else is retried within the retry
// budget (see failed).
func (s *Source) fetchErr(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, natsgo.ErrTimeout), errors.Is(err, jetstream.ErrNoHeartbeat), s.lostConnection(err):
		return nil
	}
	return s.failed(ctx, fmt.Errorf("nats source: pull from consumer %s: %w", s.durable, err))
}

func (s *Source) deliver(raw []jetstream.Msg) ([]*bridge.Message, bridge.AckFunc, error) {
	msgs := make([]*bridge.Message, len(raw))
	for i, m := range raw {
		msgs[i] = s.convert(m)
	}
	s.inflight.Add(1)
	var settled atomic.Bool
	ack := func(ctx context.Context, err error) error {
		if !settled.CompareAndSwap(false, true) {
			return nil
		}
		defer s.inflight.Add(-1)
		return s.settle(ctx, raw, err)
	}
	return msgs, ack, nil
}

// settle acknowledges (err == nil) or negatively acknowledges the messages
// and flushes, so that the server has the answers when it returns. When the
// connection drops before the flush returns (the server node died), the
// answers may have died with it: settle sends them again once the client
// has reconnected, within the route's retry budget. JetStream ignores an
// answer it already has, and redelivers after ack_wait a message whose
// answer never came.
func (s *Source) settle(ctx context.Context, raw []jetstream.Msg, err error) error {
	verb, body, answer := "acknowledge", []byte("+ACK"), jetstream.Msg.Ack
	if err != nil {
		verb, body, answer = "negatively acknowledge", []byte("-NAK"), jetstream.Msg.Nak
	}
	again := func(m jetstream.Msg) error { return s.nc.Publish(m.Reply(), body) }
	retry := bridge.NewBackoff(s.policy)
	for {
		serr := s.answer(ctx, raw, answer)
		if serr == nil {
			return nil
		}
		serr = fmt.Errorf("nats source: %s %d message(s): %w", verb, len(raw), serr)
		if !s.lostConnection(serr) || ctx.Err() != nil {
			return serr
		}
		if werr := s.waitOut(ctx, retry, "nats: connection lost while settling; sending the answers again", serr); werr != nil {
			if ctx.Err() != nil {
				return serr
			}
			return werr // the retry budget is spent
		}
		// The library answers a message once; the answer sent again is the
		// same protocol message on its reply subject.
		answer = again
	}
}

// answer sends one answer per message, then flushes and waits for the
// server's reply to the flush (with the write timeout when ctx has no
// deadline).
func (s *Source) answer(ctx context.Context, raw []jetstream.Msg, send func(jetstream.Msg) error) error {
	if !s.nc.IsConnected() && !s.nc.IsClosed() {
		return natsgo.ErrDisconnected
	}
	var errs []error
	for _, m := range raw {
		if e := send(m); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.write)
		defer cancel()
	}
	return s.nc.FlushWithContext(ctx)
}

// lostConnection reports whether err came from a connection that dropped
// and is being re-established, not one this process closed.
func (s *Source) lostConnection(err error) bool {
	if s.nc.IsClosed() {
		return false
	}
	return errors.Is(err, natsgo.ErrConnectionClosed) || errors.Is(err, natsgo.ErrConnectionReconnecting) ||
		errors.Is(err, natsgo.ErrDisconnected) || errors.Is(err, context.DeadlineExceeded) && !s.nc.IsConnected()
}

func (s *Source) convert(m jetstream.Msg) *bridge.Message {
	md := map[string]string{}
	h := m.Headers()
	if s.cfg.headers {
		for k, vs := range h {
			if len(vs) > 0 && !strings.HasPrefix(k, "Nats-") {
				md[k] = vs[0]
			}
		}
	}
	md["nats_subject"] = m.Subject()
	md["nats_stream"] = s.stream
	if meta, err := m.Metadata(); err == nil {
		md["nats_stream"] = meta.Stream
		md["nats_sequence"] = strconv.FormatUint(meta.Sequence.Stream, 10)
		md["nats_delivered"] = strconv.FormatUint(meta.NumDelivered, 10)
	}
	return &bridge.Message{ID: h.Get(natsgo.MsgIdHdr), Metadata: md, Payload: m.Data()}
}

// Close closes the connection. Messages not yet acknowledged are delivered
// again after ack_wait, to this durable consumer's next reader.
func (s *Source) Close(context.Context) error {
	if s.nc != nil {
		s.nc.Close()
	}
	return nil
}
