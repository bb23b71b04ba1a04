package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"time"
)

// Metadata keys a route adds to a message it moves to its dead-letter
// target.
const (
	MetaDeadLetterError    = "dead_letter_error"    // the target's error
	MetaDeadLetterRoute    = "dead_letter_route"    // the route's name
	MetaDeadLetterSource   = "dead_letter_source"   // the input, redacted
	MetaDeadLetterTarget   = "dead_letter_target"   // the output that refused it, redacted
	MetaDeadLetterAttempts = "dead_letter_attempts" // deliveries tried, counting the last
	MetaDeadLetterTime     = "dead_letter_time"     // when, RFC 3339 UTC
)

// HeldIDLister is implemented by targets that can list the message ids of
// the newest messages they hold (a dir-spool target). A route asks its
// dead-letter target once, before it dead-letters its first message, so
// that a message dead-lettered just before a crash is not dead-lettered a
// second time when the source delivers it again. A route whose messages
// all go through never asks.
type HeldIDLister interface {
	// RecentIDs returns the ids of the newest n messages, oldest first.
	RecentIDs(ctx context.Context, n int) ([]string, error)
}

// MinDeadLetterWindow is the least number of the newest dead letters whose
// ids a route checks a refused message against (see deadLetters.window).
const MinDeadLetterWindow = 10000

// DeadLetterObserver is implemented by observers that count dead letters.
type DeadLetterObserver interface {
	DeadLettered(n int)
}

// deadLetters is a route's dead-letter state.
type deadLetters struct {
	target   Target
	output   string
	maxTries int
	window   int            // how many of the newest dead letters held remembers
	held     *recentIDs     // their ids; nil until the first refusal
	attempts map[string]int // refusals per message id, while under maxTries
	count    int64
}

// connectDeadLetter connects the dead-letter target with connect (the
// route's retrying connect).
func (r *Route) connectDeadLetter(ctx context.Context, connect func(context.Context) error) error {
	if r.DeadLetter == nil {
		return nil
	}
	if err := connect(ctx); err != nil {
		return fmt.Errorf("connect dead-letter target %s: %w", r.DeadLetterOutput, err)
	}
	r.dl = &deadLetters{target: r.DeadLetter, output: r.DeadLetterOutput,
		maxTries: max(1, r.MaxDeliveries), attempts: map[string]int{},
		window: max(MinDeadLetterWindow, 4*r.batchSize())}
	return nil
}

// isHeld reports whether id is among the newest dead letters, reading
// their ids from the dead-letter target the first time it is asked. A
// source delivers again, after a crash, the batch it had not yet seen
// acknowledged: its dead letters are the newest there. So the route looks
// back window dead letters, four batches at least, and its memory and its
// first refusal cost the same whatever the dead-letter spool holds.
func (dl *deadLetters) isHeld(ctx context.Context, id string) (bool, error) {
	if dl.held == nil {
		held := newRecentIDs(dl.window)
		if l, ok := dl.target.(HeldIDLister); ok {
			ids, err := l.RecentIDs(ctx, dl.window)
			if err != nil {
				return false, fmt.Errorf("list the newest messages in dead-letter target %s: %w", dl.output, err)
			}
			for _, id := range ids {
				held.add(id)
			}
		}
		dl.held = held
	}
	return dl.held.has(id), nil
}

// recentIDs remembers the last max ids added to it.
type recentIDs struct {
	max   int
	ring  []string // the ids, grown up to max; the oldest at next once full
	next  int
	count map[string]int // how many times each id is in ring
}

func newRecentIDs(max int) *recentIDs {
	return &recentIDs{max: max, count: map[string]int{}}
}

// add remembers id, forgetting the oldest id when full.
func (r *recentIDs) add(id string) {
	if len(r.ring) < r.max {
		r.ring = append(r.ring, id)
	} else {
		old := r.ring[r.next]
		if r.count[old]--; r.count[old] == 0 {
			delete(r.count, old)
		}
		r.ring[r.next] = id
		r.next = (r.next + 1) % len(r.ring)
	}
	r.count[id]++
}

func (r *recentIDs) has(id string) bool { return r.count[id] > 0 }

// deliver writes batch to the target. Without a dead-letter target that is
// all. With one, a batch refused for what one of its messages holds (an
// error matching ErrRejected) is split in halves until the refused messages
// stand alone; those go to the dead-letter target, the rest to the target.
// It returns nil once every message is durable at one of the two.
func (r *Route) deliver(ctx context.Context, batch []*Message) error {
	err := r.Target.WriteBatch(ctx, batch)
	if err == nil {
		r.dl.accepted(batch)
		return nil
	}
	if r.dl == nil || !errors.Is(err, ErrRejected) {
		return err
	}
	if len(batch) == 1 {
		return r.deadLetter(ctx, batch[0], err)
	}
	mid := len(batch) / 2
	if err := r.deliver(ctx, batch[:mid]); err != nil {
		return err
	}
	return r.deliver(ctx, batch[mid:])
}

// deadLetter moves m, refused by the target with cause, to the dead-letter
// target once it has been refused maxTries times; before that it returns
// cause as a transient error, so the route retries the batch.
func (r *Route) deadLetter(ctx context.Context, m *Message, cause error) error {
	dl := r.dl
	if held, err := dl.isHeld(ctx, m.ID); err != nil || held {
		return err // held: dead-lettered before, and the source delivered it again
	}
	dl.attempts[m.ID]++
	tries := dl.attempts[m.ID]
	if tries < dl.maxTries {
		return fmt.Errorf("message %s refused (delivery %d of %d before it is dead-lettered): %w",
			m.ID, tries, dl.maxTries, unpermanent(cause))
	}
	md := maps.Clone(m.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[MetaDeadLetterError] = cause.Error()
	md[MetaDeadLetterRoute] = r.name()
	md[MetaDeadLetterSource] = r.Input
	md[MetaDeadLetterTarget] = r.Output
	md[MetaDeadLetterAttempts] = strconv.Itoa(tries)
	md[MetaDeadLetterTime] = time.Now().UTC().Format(time.RFC3339)
	dead := &Message{ID: m.ID, Metadata: md, Payload: m.Payload, Body: m.Body}
	if !streams(dl.target) {
		if err := dead.Load(); err != nil {
			return err
		}
	}
	if err := dl.target.WriteBatch(ctx, []*Message{dead}); err != nil {
		return fmt.Errorf("write message %s to dead-letter target %s: %w (it was refused by %s: %v)",
			m.ID, dl.output, err, r.Output, cause)
	}
	delete(dl.attempts, m.ID)
	dl.held.add(m.ID) // a retry of its batch delivers it again
	dl.count++
	r.log().Warn("message dead-lettered", "id", m.ID, "dead_letter", dl.output, "attempts", tries, "error", cause)
	if o, ok := r.Observer.(DeadLetterObserver); ok {
		o.DeadLettered(1)
	}
	return nil
}

// accepted forgets the refusals counted for the messages of batch, which
// the target has now taken: a message refused fewer than maxTries times
// and then accepted leaves no count behind. dl may be nil.
func (dl *deadLetters) accepted(batch []*Message) {
	if dl == nil || len(dl.attempts) == 0 {
		return
	}
	for _, m := range batch {
		delete(dl.attempts, m.ID)
	}
}

// unpermanent keeps err's text but lets the route retry it.
func unpermanent(err error) error { return errors.New(err.Error()) }

func (r *Route) closeDeadLetter(ctx context.Context, cause error) error {
	if r.dl == nil {
		return nil
	}
	if err := r.dl.target.Close(ctx, cause); err != nil {
		return fmt.Errorf("close dead-letter target %s: %w", r.DeadLetterOutput, err)
	}
	return nil
}

func (r *Route) name() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Input + " -> " + r.Output
}

func (r *Route) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// DeadLettered returns how many messages the route moved to its dead-letter
// target. Call it after Run returned.
func (r *Route) DeadLettered() int64 {
	if r.dl == nil {
		return 0
	}
	return r.dl.count
}
