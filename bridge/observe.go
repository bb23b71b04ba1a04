package bridge

import (
	"time"

	"github.com/mqb-project/mqb/core"
)

// Observer receives a route's events, for metrics and progress displays.
// Its methods are called from the route's goroutine and must return quickly.
type Observer interface {
	// Received reports a batch read from the source: n messages, bytes of
	// payload.
	Received(n, bytes int)
	// Sent reports a batch the target made durable, and how long the
	// successful write took.
	Sent(n, bytes int, latency time.Duration)
	// WriteFailed reports a failed write of n messages.
	WriteFailed(n int, err error)
	// Acked reports n messages acknowledged at the source.
	Acked(n int)
	// Nacked reports n messages negatively acknowledged at the source.
	Nacked(n int)
	// Retrying reports that the route waits wait before the attempt-th
	// retry of a failed write.
	Retrying(attempt int, wait time.Duration)
}

// Drainer is implemented by sources that can either wait for more input or
// end when there is none. The route calls SetDrain with its drain flag
// before Connect: with true the source returns ErrEndOfInput once it has
// nothing to deliver right now and nothing in flight.
type Drainer interface {
	SetDrain(drain bool)
}

// Progresser is implemented by sources that know how far through their
// input they are, for progress displays. done and total are in unit
// ("messages" or "bytes"); total is negative when unknown.
type Progresser interface {
	Progress() (done, total int64, unit string)
}

// BacklogReporter is implemented by spool endpoints: Backlog returns the
// number of chunks waiting in the spool right now. It may scan the spool,
// so call it only when the value is wanted.
type BacklogReporter interface {
	Backlog() (chunks int64, err error)
	// SpoolPath is the spool directory, to label the gauge.
	SpoolPath() string
}

// BoundedSpool is implemented by a dir-spool target, for the metrics of its
// bounds (max_messages, max_bytes, min_free_bytes, when_full).
type BoundedSpool interface {
	// Bounded reports whether the spool has a bound.
	Bounded() bool
	// Dropped counts messages dropped because the spool was full.
	Dropped() uint64
	// FullWaits counts writes that waited for a consumer to make room.
	FullWaits() uint64
}

// SpoolStatter is implemented by spool endpoints: SpoolStats scans the
// spool and counts what it holds, for the mqb_spool_* gauges. It reads
// the whole spool, so call it only when the values are wanted.
type SpoolStatter interface {
	SpoolStats() (*core.Stats, error)
	// SpoolPath is the spool directory, to label the gauges.
	SpoolPath() string
}

// StartObserver is an Observer that also wants to know when the route
// starts moving messages: Started is called once, after both ends are
// connected.
type StartObserver interface {
	Started()
}

type nopObserver struct{}

func (nopObserver) Received(int, int)            {}
func (nopObserver) Sent(int, int, time.Duration) {}
func (nopObserver) WriteFailed(int, error)       {}
func (nopObserver) Acked(int)                    {}
func (nopObserver) Nacked(int)                   {}
func (nopObserver) Retrying(int, time.Duration)  {}
