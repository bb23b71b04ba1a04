package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

// WhenFull says what a bounded producer does with a message that does not
// fit (the when_full option).
type WhenFull string

// when_full values.
const (
	// WhenFullBlock makes Producer.Write wait until a consumer has made
	// room, or its context ends.
	WhenFullBlock WhenFull = "block"
	// WhenFullFail makes Producer.Write return an error matching
	// ErrSpoolFull.
	WhenFullFail WhenFull = "fail"
	// WhenFullDropNewest makes Producer.Write drop the messages that do not
	// fit; they count as handled and Producer.Dropped counts them.
	WhenFullDropNewest WhenFull = "drop_newest"
)

// WhenFullValues lists the valid when_full values.
var WhenFullValues = []string{string(WhenFullBlock), string(WhenFullFail), string(WhenFullDropNewest)}

// Valid reports whether w is one of the when_full values.
func (w WhenFull) Valid() bool {
	return w == WhenFullBlock || w == WhenFullFail || w == WhenFullDropNewest
}

// Bounds limit what a spool holds. A zero field is no limit.
type Bounds struct {
	MaxMessages  int64    `json:"max_messages,omitempty"`   // chunks in the spool
	MaxBytes     int64    `json:"max_bytes,omitempty"`      // bytes of payload and sidecar files
	MinFreeBytes int64    `json:"min_free_bytes,omitempty"` // free space to leave on the filesystem
	WhenFull     WhenFull `json:"when_full,omitempty"`      // "" means block
}

// Set reports whether any limit is set.
func (b Bounds) Set() bool { return b.MaxMessages > 0 || b.MaxBytes > 0 || b.MinFreeBytes > 0 }

// Validate checks the bounds: limits are positive when set, and when_full
// is one of its values.
func (b Bounds) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_messages", b.MaxMessages}, {"max_bytes", b.MaxBytes}, {"min_free_bytes", b.MinFreeBytes}} {
		if f.v < 0 {
			return &option.Error{Field: f.name, Value: fmt.Sprint(f.v), Msg: "must be positive; leave it unset for no limit"}
		}
	}
	if b.WhenFull != "" && !b.WhenFull.Valid() {
		return &option.Error{Field: "when_full", Value: string(b.WhenFull), Msg: "is not a valid value", Valid: WhenFullValues}
	}
	return nil
}

// boundsFromValues reads max_messages, max_bytes, min_free_bytes and
// when_full. A limit given as 0 is refused: unset means no limit.
func boundsFromValues(v *option.Values) (Bounds, error) {
	b := Bounds{
		MaxMessages:  int64(v.Int("max_messages")),
		MaxBytes:     v.Size("max_bytes"),
		MinFreeBytes: v.Size("min_free_bytes"),
		WhenFull:     WhenFull(v.String("when_full")),
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"max_messages", b.MaxMessages}, {"max_bytes", b.MaxBytes}, {"min_free_bytes", b.MinFreeBytes}} {
		if v.IsSet(f.name) && f.v == 0 {
			return b, &option.Error{Field: f.name, Value: "0", Msg: "must be at least 1; leave it unset for no limit"}
		}
	}
	return b, nil
}

// SpaceReporter is implemented by an FS that can tell how many bytes are
// free for an unprivileged writer on the filesystem holding the spool
// (statfs's f_bavail). A producer needs it for min_free_bytes.
type SpaceReporter interface {
	FreeBytes() (uint64, error)
}

// usage is a bounded producer's account of what the spool holds: one entry
// per chunk, oldest first. Chunks are added as the producer commits them;
// consumers remove them behind its back, oldest first, so a refresh drops
// entries from the front while their payload is gone. That costs one Stat
// per consumed chunk, never a walk per write.
type usage struct {
	fsys   FS
	layout *Layout
	chunks []chunkUse // chunks[head:] are believed to be in the spool
	head   int
	bytes  int64
}

type chunkUse struct {
	seq  uint64
	size int64
}

// newUsage counts the chunks already in the spool with one walk.
func newUsage(ctx context.Context, fsys FS, l *Layout) (*usage, error) {
	u := &usage{fsys: fsys, layout: l}
	return u, u.recount(ctx)
}

func (u *usage) count() int64 { return int64(len(u.chunks) - u.head) }

func (u *usage) add(seq uint64, size int64) {
	u.chunks = append(u.chunks, chunkUse{seq, size})
	u.bytes += size
}

// recount lists the spool and rebuilds the account: each payload with its
// sidecar's size, in sequence order. Each leaf directory is streamed where
// the FS can, so that only its chunks' numbers and sizes are held.
func (u *usage) recount(ctx context.Context) error {
	u.chunks, u.head, u.bytes = u.chunks[:0], 0, 0
	var payloads, sidecars []chunkUse
	return walkLeafDirs(ctx, u.fsys, u.layout, func(dir string) error {
		payloads, sidecars = payloads[:0], sidecars[:0]
		err := listInfo(ctx, u.fsys, dir, true, func(name string, typ fs.FileMode, size func() int64) {
			seq, kind, ok := u.layout.ParseLeaf(dir, name)
			switch {
			case !ok || !typ.IsRegular():
			case kind == KindPayload:
				payloads = append(payloads, chunkUse{seq, size()})
			case kind == KindSidecar:
				sidecars = append(sidecars, chunkUse{seq, size()})
			}
		})
		if err == nil {
			u.addLeaf(payloads, sidecars)
		}
		return err
	})
}

// addLeaf adds the payloads of one leaf directory in sequence order, each
// with the size of its sidecar; a sidecar without a payload is no chunk.
func (u *usage) addLeaf(payloads, sidecars []chunkUse) {
	bySeq := func(a, b chunkUse) int { return cmp.Compare(a.seq, b.seq) }
	slices.SortFunc(payloads, bySeq)
	slices.SortFunc(sidecars, bySeq)
	j := 0
	for _, c := range payloads {
		for j < len(sidecars) && sidecars[j].seq < c.seq {
			j++
		}
		if j < len(sidecars) && sidecars[j].seq == c.seq {
			c.size += sidecars[j].size
		}
		u.add(c.seq, c.size)
	}
}

// refresh forgets the oldest chunks that consumers have removed. It stops at
// the first chunk still there, so a chunk acknowledged out of order is
// counted until the ones before it are gone (see recount).
func (u *usage) refresh() error {
	for u.head < len(u.chunks) {
		c := u.chunks[u.head]
		_, err := u.fsys.Stat(u.layout.Payload(c.seq))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		u.bytes -= c.size
		u.head++
	}
	if u.head > 1024 && u.head > len(u.chunks)/2 {
		u.chunks = append(u.chunks[:0], u.chunks[u.head:]...)
		u.head = 0
	}
	return nil
}

// room is how much more the spool may take right now.
type room struct {
	messages, bytes int64 // -1: no limit
}

// fit returns how many of msgs, in order, fit in r.
func (r room) fit(sizes []int64) int {
	n := 0
	msgs, bytes := r.messages, r.bytes
	for _, s := range sizes {
		if msgs == 0 || (bytes >= 0 && s > bytes) {
			break
		}
		if msgs > 0 {
			msgs--
		}
		if bytes >= 0 {
			bytes -= s
		}
		n++
	}
	return n
}

// room computes what the bounds leave after the account and the free space.
func (p *Producer) room() (room, error) {
	b := p.opts.Bounds
	r := room{messages: -1, bytes: -1}
	if b.MaxMessages > 0 {
		r.messages = max(0, b.MaxMessages-p.use.count())
	}
	if b.MaxBytes > 0 {
		r.bytes = max(0, b.MaxBytes-p.use.bytes)
	}
	if b.MinFreeBytes > 0 {
		free, err := p.fsys.(SpaceReporter).FreeBytes()
		if err != nil {
			return r, p.errorf("read free space: %w", err)
		}
		left := max(0, int64(min(free, 1<<62))-b.MinFreeBytes)
		if r.bytes < 0 || left < r.bytes {
			r.bytes = left
		}
	}
	return r, nil
}

// chunkSizes returns the bytes each message will take on disk, or zeros
// when no bound counts bytes.
func (p *Producer) chunkSizes(msgs []Message) []int64 {
	sizes := make([]int64, len(msgs))
	if p.opts.Bounds.MaxBytes == 0 && p.opts.Bounds.MinFreeBytes == 0 {
		return sizes
	}
	for i := range msgs {
		sizes[i] = payloadSize(&msgs[i])
		if p.layout.Sidecars() {
			sizes[i] += int64(len(encodeSidecar(msgs[i].ID, msgs[i].Metadata)))
		}
	}
	return sizes
}

// admit returns how many of msgs, in order, may be written now. With
// when_full=block it waits until at least one fits; with fail it returns
// ErrSpoolFull; with drop_newest it returns 0 and the caller drops the
// first message.
func (p *Producer) admit(ctx context.Context, msgs []Message) (int, error) {
	sizes := p.chunkSizes(msgs)
	for waits := 0; ; waits++ {
		r, err := p.room()
		if err != nil {
			return 0, err
		}
		if n := r.fit(sizes); n > 0 {
			return n, nil
		}
		// Full by the account: look at what consumers removed, and every
		// few rounds recount, in case they removed chunks out of order.
		if waits%8 == 7 {
			err = p.use.recount(ctx)
		} else {
			err = p.use.refresh()
		}
		if err != nil {
			return 0, p.errorf("count the spool's chunks: %w", err)
		}
		if r, err = p.room(); err != nil {
			return 0, err
		}
		if n := r.fit(sizes); n > 0 {
			return n, nil
		}
		if err := p.whenFull(ctx, waits, r, sizes[0]); err != nil {
			return 0, err
		}
		if p.opts.Bounds.WhenFull == WhenFullDropNewest {
			return 0, nil
		}
	}
}

// whenFull handles one full round: it fails, drops, or waits a poll
// interval.
func (p *Producer) whenFull(ctx context.Context, waits int, r room, size int64) error {
	switch p.opts.Bounds.WhenFull {
	case WhenFullFail:
		return p.fullError(r, size)
	case WhenFullDropNewest:
		return nil
	}
	if waits == 0 {
		p.fullWaits.Add(1)
	}
	t := time.NewTimer(p.opts.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w while waiting for room (when_full=block)", context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

func (p *Producer) fullError(r room, size int64) error {
	b := p.opts.Bounds
	switch {
	case r.messages == 0:
		return p.errorf("%w: it holds %d chunks, max_messages=%d", ErrSpoolFull, p.use.count(), b.MaxMessages)
	case b.MaxBytes > 0 && p.use.bytes+size > b.MaxBytes:
		return p.errorf("%w: it holds %d bytes and the next chunk takes %d, max_bytes=%d", ErrSpoolFull, p.use.bytes, size, b.MaxBytes)
	default:
		return p.errorf("%w: the next chunk (%d bytes) would leave less than min_free_bytes=%d free on the filesystem", ErrSpoolFull, size, b.MinFreeBytes)
	}
}

// OnDrop sets a function that Write calls, with the producer's lock held,
// for each message when_full=drop_newest drops. It must return quickly.
func (p *Producer) OnDrop(fn func(Message)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onDrop = fn
}

// Dropped returns how many messages when_full=drop_newest has dropped. It
// does not wait for a write in progress.
func (p *Producer) Dropped() uint64 { return p.dropped.Load() }

// FullWaits returns how many writes had to wait for room (when_full=block).
// It does not wait for a write in progress, so it can be read while one
// waits.
func (p *Producer) FullWaits() uint64 { return p.fullWaits.Load() }

// Usage returns the chunks and bytes the spool holds by a bounded
// producer's account; ok is false for an unbounded producer, which keeps
// none. It waits for a write in progress, which may be waiting for room.
func (p *Producer) Usage() (chunks, bytes int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.use == nil {
		return 0, 0, false
	}
	return p.use.count(), p.use.bytes, true
}
