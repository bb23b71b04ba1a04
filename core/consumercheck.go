package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// ErrUnseenChunks is matched by the *UnseenError a stop_on_done consumer
// returns instead of ErrEnd when the DONE record shows that the producer
// wrote chunks this consumer never delivered.
var ErrUnseenChunks = errors.New("DONE reports chunks this consumer never saw")

// UnseenError is the error for a DONE record that names chunks the consumer
// never delivered: an earlier reader took them, or they sit where the
// consumer's options do not look.
type UnseenError struct {
	Spool     string
	Done      *DoneRecord
	Delivered int     // messages this consumer delivered
	MaxSeq    *uint64 // the highest sequence it delivered; nil when none
}

func (e *UnseenError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "spool %s: DONE records %d message(s)", e.Spool, e.Done.Count)
	if e.Done.LastSeq != nil {
		fmt.Fprintf(&b, " up to sequence %d", *e.Done.LastSeq)
	}
	if e.MaxSeq == nil {
		b.WriteString(", but this consumer delivered none of them")
	} else {
		fmt.Fprintf(&b, ", but this consumer delivered %d, up to sequence %d", e.Delivered, *e.MaxSeq)
	}
	b.WriteString(": an earlier reader consumed them, or they sit where these options do not look (mqb spool stat shows what the spool holds)")
	return b.String()
}

// Is reports ErrUnseenChunks.
func (e *UnseenError) Is(target error) bool { return target == ErrUnseenChunks }

// consumerCheck is what a Consumer watches besides delivering: files it
// will never deliver, and whether it saw what DONE says was written.
type consumerCheck struct {
	log       *slog.Logger
	surveyed  bool
	refused   error           // the layout error startCheck found; it stays
	warned    map[string]bool // names already warned about
	delivered int
	maxSeq    uint64
	saw       bool
}

// SetLogger sets where the consumer warns about files it will never
// deliver (once per name) and about sidecars it salvaged; nil means
// slog.Default(). Call it before the first Read.
func (c *Consumer) SetLogger(l *slog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.check.log = l
}

func (c *Consumer) logger() *slog.Logger {
	if c.check.log != nil {
		return c.check.log
	}
	return slog.Default()
}

// warnOnce logs msg about name the first time only. It remembers at most
// maxForeignNames names, then says that it stops naming them.
func (c *Consumer) warnOnce(name, msg string, args ...any) {
	if c.check.warned == nil {
		c.check.warned = map[string]bool{}
	}
	if c.check.warned[name] {
		return
	}
	if len(c.check.warned) >= maxForeignNames {
		if !c.check.warned["\x00"] {
			c.check.warned["\x00"] = true
			c.logger().Warn("more files the consumer will not deliver; not naming them one by one", "spool", c.opts.Path)
		}
		return
	}
	c.check.warned[name] = true
	c.logger().Warn(msg, append([]any{"spool", c.opts.Path, "file", name}, args...)...)
}

// checkDue runs startCheck once the first deliveries are out, and returns
// the refusal it made, if any. The survey reads every directory, so it does
// not delay the first delivery: a consumer of a large backlog, or one
// resuming from its CONSUMER record, delivers first and surveys on the next
// Read. A spool with nothing this consumer can deliver is surveyed before
// the consumer waits or ends.
func (c *Consumer) checkDue(ctx context.Context) error {
	if c.check.surveyed || c.check.delivered > 0 {
		return c.startCheck(ctx)
	}
	return nil
}

// startCheck surveys the spool once: it refuses a spool that holds chunks
// of another layout, for good, and warns about foreign files and links.
func (c *Consumer) startCheck(ctx context.Context) error {
	if c.check.surveyed {
		return c.check.refused
	}
	sv, err := SurveyLayout(ctx, c.fsys, c.opts)
	if ctx.Err() != nil {
		return ctx.Err() // not surveyed: the next Read looks again
	}
	if err != nil {
		return c.errorf("check layout: %w", err)
	}
	c.check.surveyed = true
	c.warnSurvey(sv)
	if sv.Mismatch != nil {
		c.check.refused = sv.Mismatch
	}
	return c.check.refused
}

func (c *Consumer) warnSurvey(sv *Survey) {
	for _, name := range sv.Links {
		c.warnOnce(name, "symbolic link in the spool is not followed; mqb never follows links in a spool")
	}
	for _, name := range sv.ForeignNames {
		c.warnForeign(name)
	}
}

func (c *Consumer) warnForeign(name string) {
	c.warnOnce(name, "file has the payload extension but does not fit the naming pattern; it is never delivered",
		"naming_pattern", c.opts.NamingPattern, "shard_depth", c.opts.ShardDepth, "shard_width", c.opts.ShardWidth)
}

// noteEntry is called for each regular file of a leaf directory that is
// not a chunk file of the layout.
func (c *Consumer) noteEntry(dir, name string) {
	if strings.HasSuffix(name, c.opts.PayloadExt) {
		c.warnForeign(joinPath(dir, name))
	}
}

// noteDelivered records a chunk handed out for the first time.
func (c *Consumer) noteDelivered(seq uint64) {
	c.check.delivered++
	if !c.check.saw || seq > c.check.maxSeq {
		c.check.maxSeq, c.check.saw = seq, true
	}
}

// endCheck decides how a consumer with nothing left ends: with ErrEnd, or
// with an error when chunks of another layout arrived, or (stop_on_done)
// when DONE names chunks it never saw.
func (c *Consumer) endCheck(ctx context.Context) error {
	sv, err := SurveyLayout(ctx, c.fsys, c.opts)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return c.errorf("check layout: %w", err)
	}
	c.warnSurvey(sv)
	if sv.Mismatch != nil {
		return sv.Mismatch
	}
	if !c.opts.StopOnDone {
		return ErrEnd
	}
	rec, err := ReadDone(c.fsys)
	if err != nil {
		return ErrEnd // gone, or a DONE without details: nothing to compare
	}
	switch {
	case rec.LastSeq != nil && c.check.saw && c.check.maxSeq >= *rec.LastSeq:
		return ErrEnd
	case rec.LastSeq == nil && (rec.Count == 0 || c.check.saw):
		return ErrEnd
	}
	ue := &UnseenError{Spool: c.opts.Path, Done: rec, Delivered: c.check.delivered}
	if c.check.saw {
		m := c.check.maxSeq
		ue.MaxSeq = &m
	}
	args := []any{"spool", c.opts.Path, "done_count", rec.Count, "delivered", c.check.delivered}
	if rec.LastSeq != nil {
		args = append(args, "done_last_seq", *rec.LastSeq)
	}
	c.logger().Warn("the producer's DONE record names chunks this consumer never delivered; not ending with success", args...)
	return ue
}

// salvageSidecar fills d from a sidecar that did not parse, under
// bad_sidecar=deliver: it keeps the message id when it is a string and the
// metadata values that are strings, and warns once per file.
func (c *Consumer) salvageSidecar(d *Delivery, b []byte, err error) {
	d.MessageID, d.Metadata = salvageSidecar(b)
	c.warnOnce(d.sidecar, "bad metadata sidecar; delivering the payload with what could be read of it (bad_sidecar=deliver)",
		"error", err.Error(), "message_id", d.MessageID, "metadata_keys", len(d.Metadata))
}
