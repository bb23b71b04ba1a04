package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mqb-project/mqb/core/option"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mqb-project/mqb/bridge"
)

// Target publishes messages to a JetStream subject with their ids as
// Nats-Msg-Id, and reports a batch written once the stream acknowledged all
// of it.
type Target struct {
	cfg    *config
	log    *slog.Logger
	nc     *natsgo.Conn
	js     jetstream.JetStream
	stream string
}

var _ bridge.Target = (*Target)(nil)

// NewTarget builds a NATS JetStream target from decoded options.
func NewTarget(env *bridge.Env, v *option.Values) (*Target, error) {
	cfg, err := decode(v)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(cfg.subject, "*>") {
		return nil, &option.Error{Field: "subject", Value: cfg.subject, Msg: "a target publishes to one subject: * and > are not allowed"}
	}
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Target{cfg: cfg, log: log}, nil
}

// Connect connects and checks that a stream captures the subject (creating
// it with create_stream=true).
func (t *Target) Connect(ctx context.Context) error {
	nc, js, stream, err := t.cfg.connect(ctx, t.log, "target")
	if err != nil {
		return err
	}
	t.nc, t.js, t.stream = nc, js, stream
	t.log.Info("nats target connected", "server", nc.ConnectedUrlRedacted(), "stream", stream, "subject", t.cfg.subject)
	return nil
}

// WriteBatch publishes msgs and returns nil once JetStream acknowledged
// every one. A message whose id the stream has already stored (within its
// duplicate window) is acknowledged as a duplicate and not stored again.
func (t *Target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	if t.js == nil {
		return errors.New("nats target: WriteBatch before Connect")
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.write)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i, m := range msgs {
		nm := &natsgo.Msg{Subject: t.cfg.subject, Data: m.Payload}
		if t.cfg.headers {
			if err := setHeaders(nm, m.Metadata); err != nil {
				return bridge.Permanent(fmt.Errorf("nats target: message %d of the batch (id %s): %w", i+1, m.ID, err))
			}
		}
		opts := []jetstream.PublishOpt{jetstream.WithExpectStream(t.stream)}
		if m.ID != "" {
			opts = append(opts, jetstream.WithMsgID(m.ID))
		}
		f, err := t.js.PublishMsgAsync(nm, opts...)
		if err != nil {
			return fmt.Errorf("nats target: publish message %d of %d: %w", i+1, len(msgs), err)
		}
		futures = append(futures, f)
	}
	dups := 0
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				dups++
			}
		case err := <-f.Err():
			return fmt.Errorf("nats target: publish message %d of %d: %w", i+1, len(msgs), err)
		case <-ctx.Done():
			return fmt.Errorf("nats target: waiting for the acknowledgement of message %d of %d: %w", i+1, len(msgs), ctx.Err())
		}
	}
	if dups > 0 {
		t.log.Debug("nats: the stream already had some messages of the batch", "stream", t.stream, "duplicates", dups, "batch", len(msgs))
	}
	return nil
}

// setHeaders copies metadata into headers, leaving out nats_* keys (the
// source's own description of a message, not part of it).
func setHeaders(nm *natsgo.Msg, md map[string]string) error {
	for k, v := range md {
		if strings.HasPrefix(k, "nats_") {
			continue
		}
		if !validHeaderKey(k) {
			return fmt.Errorf("metadata key %q cannot be a NATS header name (set metadata_headers=false to send no metadata)", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("metadata %q has a line break, which a NATS header cannot hold (set metadata_headers=false to send no metadata)", k)
		}
		if strings.HasPrefix(k, "Nats-") {
			return fmt.Errorf("metadata key %q is reserved by NATS (set metadata_headers=false to send no metadata)", k)
		}
		if nm.Header == nil {
			nm.Header = natsgo.Header{}
		}
		nm.Header.Set(k, v)
	}
	return nil
}

func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// Close flushes and closes the connection.
func (t *Target) Close(ctx context.Context, _ error) error {
	if t.nc == nil {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.cfg.write)
		defer cancel()
	}
	var err error
	if !t.nc.IsClosed() {
		if e := t.nc.FlushWithContext(ctx); e != nil && !errors.Is(e, context.DeadlineExceeded) {
			err = fmt.Errorf("nats target: flush: %w", e)
		}
	}
	t.nc.Close()
	return err
}
