package core

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLocked is returned (wrapped in an *fs.PathError) by FS.Lock when
	// another holder has the lock.
	ErrLocked = errors.New("locked by another holder")

	// ErrClaimed is returned when opening a producer or a draining consumer
	// on a spool whose PRODUCER or CONSUMER claim another process holds. The
	// concrete error is a *ClaimError naming the holder.
	ErrClaimed = errors.New("spool role already claimed")

	// ErrSequenceExhausted is returned by Producer.Write when the next
	// sequence number would need more digits than the naming pattern has.
	// The producer never wraps around or widens the names.
	ErrSequenceExhausted = errors.New("sequence numbers exhausted")

	// ErrSpoolFull is returned by Producer.Write with when_full=fail when a
	// message does not fit in the spool's bounds (max_messages, max_bytes,
	// min_free_bytes). Nothing of that message was written.
	ErrSpoolFull = errors.New("spool is full")

	// ErrProducerFailed is returned by every Producer.Write after a sync or
	// an undo step failed: the fate of the data is unknown, so the producer
	// refuses to go on. Open a new producer to recover.
	ErrProducerFailed = errors.New("producer stopped after an unrecoverable error")

	// ErrBadSidecar is returned by Consumer.Read when a sidecar cannot be
	// read or parsed. The concrete error is a *SidecarError naming the file.
	ErrBadSidecar = errors.New("unreadable metadata sidecar")

	// ErrEnd is returned by Consumer.Read when the consumer has nothing more
	// to deliver: the backlog is empty in drain mode, or the producer's DONE
	// sentinel exists, the backlog is empty and nothing is in flight
	// (stop_on_done).
	ErrEnd = errors.New("end of spool")

	// ErrClosed is returned when a closed producer or consumer is used.
	ErrClosed = errors.New("spool handle is closed")

	// ErrUnknownDelivery is returned by Ack and Nack for a delivery that is
	// not in flight on this consumer (already settled, or from another one).
	ErrUnknownDelivery = errors.New("delivery is not in flight")
)

// Holder describes the process holding a claim, as recorded in the claim file.
type Holder struct {
	Role    string    `json:"role"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
	NextSeq *uint64   `json:"next_seq,omitempty"`
	// FloorSeq is a producer's floor: when it opened, no chunk numbered
	// below it was on disk, and it writes none. A first consumer starts
	// there without listing.
	FloorSeq *uint64 `json:"floor_seq,omitempty"`
	// AckedBelow is a draining consumer's resume point: every chunk with
	// a lower sequence number was acknowledged and deleted. It may lag
	// behind (a lower value), never run ahead.
	AckedBelow *uint64 `json:"acked_below,omitempty"`
	// Bounds are a bounded producer's limits, for `mqb spool stat`.
	Bounds *Bounds `json:"bounds,omitempty"`
}

// ClaimError is the error for a claim held by another process.
type ClaimError struct {
	Spool  string  // the spool root as the user named it
	File   string  // PRODUCER or CONSUMER
	Holder *Holder // nil when the holder had not yet recorded itself
}

func (e *ClaimError) Error() string {
	who := "another process (holder not yet recorded)"
	if h := e.Holder; h != nil {
		who = fmt.Sprintf("pid %d on host %s since %s", h.PID, h.Host, h.Since.Format(time.RFC3339))
	}
	return fmt.Sprintf("spool %s: %s claim is held by %s", e.Spool, e.File, who)
}

// Is reports ErrClaimed.
func (e *ClaimError) Is(target error) bool { return target == ErrClaimed }

// SidecarError is the error for a sidecar that cannot be read or parsed.
type SidecarError struct {
	Path string // relative to the spool root
	Err  error
}

func (e *SidecarError) Error() string {
	return fmt.Sprintf("metadata sidecar %s: %v (set bad_sidecar=deliver to deliver such payloads with what parses of the sidecar)", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *SidecarError) Unwrap() error { return e.Err }

// Is reports ErrBadSidecar.
func (e *SidecarError) Is(target error) bool { return target == ErrBadSidecar }
