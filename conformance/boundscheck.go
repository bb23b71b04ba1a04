package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

// Spool checks of a bounded producer: max_messages, max_bytes and
// min_free_bytes, with each when_full behaviour, and an account of the
// spool that survives a restart and follows a consumer's removals.

func checkBounds(t TB, e *env) {
	boundsFail(t, e)
	boundsDropNewest(t, e)
	boundsMaxBytes(t, e)
	boundsSurviveRestart(t, e)
	boundsCountedAtOpen(t, e)
	boundsBlockWaitsForConsumer(t, e)
	boundsBlockEndsWithContext(t, e)
	boundsRecountOutOfOrder(t, e)
	boundsMinFree(t, e)
}

func boundedOptions(t TB, query string) core.Options {
	t.Helper()
	return spoolOptions(t, query+"&poll_interval=5ms")
}

func spoolChunks(t TB, fsys core.FS, o core.Options) int {
	t.Helper()
	st, err := core.Scan(context.Background(), fsys, o)
	noErr(t, "Scan", err)
	return st.Chunks
}

func openBounded(t TB, fsys core.FS, o core.Options) *core.Producer {
	t.Helper()
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// boundsFail: with when_full=fail, what does not fit is refused with
// ErrSpoolFull naming the bound, and nothing of it is written.
func boundsFail(t TB, e *env) {
	fsys := e.newFS()
	o := boundedOptions(t, "max_messages=2&when_full=fail")
	p := openBounded(t, fsys, o)
	if n, err := p.Write(e.ctx, testMessages("f", 0, 2)); n != 2 || err != nil {
		t.Fatalf("Write = %d, %v; want 2, nil", n, err)
	}
	n, err := p.Write(e.ctx, testMessages("f", 2, 1))
	if n != 0 || !errors.Is(err, core.ErrSpoolFull) || !strings.Contains(err.Error(), "max_messages=2") {
		t.Fatalf("Write on a full spool = %d, %v; want 0 and ErrSpoolFull naming max_messages=2", n, err)
	}
	if got := spoolChunks(t, fsys, o); got != 2 {
		t.Fatalf("spool holds %d chunks, want 2", got)
	}
}

// boundsDropNewest: the messages that do not fit are dropped, counted and
// reported to OnDrop; Write counts them as handled.
func boundsDropNewest(t TB, e *env) {
	fsys := e.newFS()
	o := boundedOptions(t, "max_messages=2&when_full=drop_newest")
	p := openBounded(t, fsys, o)
	var dropped []string
	p.OnDrop(func(m core.Message) { dropped = append(dropped, m.ID) })
	if n, err := p.Write(e.ctx, testMessages("d", 0, 5)); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v; want 5 handled, nil", n, err)
	}
	if p.Dropped() != 3 || len(dropped) != 3 || dropped[0] != testMessage("d", 2).ID {
		t.Fatalf("Dropped = %d, OnDrop saw %v; want the last 3", p.Dropped(), dropped)
	}
	if got := spoolChunks(t, fsys, o); got != 2 {
		t.Fatalf("spool holds %d chunks, want 2", got)
	}
}

// boundsMaxBytes: max_bytes counts payload and sidecar bytes.
func boundsMaxBytes(t TB, e *env) {
	fsys := e.newFS()
	p := openBounded(t, fsys, boundedOptions(t, "max_bytes=1000&when_full=fail"))
	msgs := make([]core.Message, 3)
	for i := range msgs {
		msgs[i] = core.Message{Payload: []byte(strings.Repeat("x", 300))}
	}
	// Each chunk is 300 payload bytes and a sidecar of some 60: two fit.
	n, err := p.Write(e.ctx, msgs)
	if n != 2 || !errors.Is(err, core.ErrSpoolFull) || !strings.Contains(err.Error(), "max_bytes=1000") {
		t.Fatalf("Write = %d, %v; want 2 written, then ErrSpoolFull naming max_bytes", n, err)
	}
	chunks, bytes, ok := p.Usage()
	if !ok || chunks != 2 || bytes <= 600 || bytes > 1000 {
		t.Fatalf("Usage = %d chunks, %d bytes, %v", chunks, bytes, ok)
	}
}

// boundsSurviveRestart: a producer opened on a full spool counts what is
// already there.
func boundsSurviveRestart(t TB, e *env) {
	fsys := e.newFS()
	o := boundedOptions(t, "max_messages=3&when_full=fail")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("r", 0, 3))
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	p = openBounded(t, fsys, o)
	if _, err := p.Write(e.ctx, testMessages("r", 3, 1)); !errors.Is(err, core.ErrSpoolFull) {
		t.Fatalf("Write to a reopened full spool = %v, want ErrSpoolFull", err)
	}
}

// boundsBlockWaitsForConsumer: with when_full=block a write waits for a
// consumer, and the spool never holds more than the bound meanwhile.
func boundsBlockWaitsForConsumer(t TB, e *env) {
	fsys := e.newFS()
	o := boundedOptions(t, "max_messages=3")
	p := openBounded(t, fsys, o)
	var peak atomic.Int64
	ctx, stop := context.WithCancel(e.ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			if st, err := core.Scan(context.Background(), fsys, o); err == nil && int64(st.Chunks) > peak.Load() {
				peak.Store(int64(st.Chunks))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := p.Write(e.ctx, testMessages("b", 0, 10))
		done <- err
	}()
	for spoolChunks(t, fsys, o) < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the producer now waits for room
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	for got := 0; got < 10; {
		ds := readBatch(t, e, c, 2, 10*time.Second)
		time.Sleep(3 * time.Millisecond)
		noErr(t, "Ack", c.Ack(ds...))
		got += len(ds)
	}
	noErr(t, "blocked Write", <-done)
	stop()
	<-watched
	if peak.Load() > 3 {
		t.Fatalf("the spool held %d chunks at one point, over max_messages=3", peak.Load())
	}
	if p.FullWaits() == 0 {
		t.Fatalf("FullWaits = 0 after writing 10 messages through a bound of 3")
	}
}

// boundsBlockEndsWithContext: a blocked write gives up with its context,
// having written what fit.
func boundsBlockEndsWithContext(t TB, e *env) {
	p := openBounded(t, e.newFS(), boundedOptions(t, "max_messages=2"))
	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	n, err := p.Write(ctx, testMessages("c", 0, 3))
	if n != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write = %d, %v; want 2 and a deadline error", n, err)
	}
}

// boundsRecountOutOfOrder: a chunk acknowledged out of order is found by
// the periodic recount, so a blocked producer does not wait for the oldest.
func boundsRecountOutOfOrder(t TB, e *env) {
	fsys := e.newFS()
	o := boundedOptions(t, "max_messages=2")
	p := openBounded(t, fsys, o)
	_, err := p.Write(e.ctx, testMessages("o", 0, 2))
	noErr(t, "Write", err)
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ds := readBatch(t, e, c, 2, 10*time.Second)
	if len(ds) != 2 {
		t.Fatalf("read %d deliveries, want 2", len(ds))
	}
	noErr(t, "Ack of the newer one", c.Ack(ds[1]))
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if n, err := p.Write(ctx, testMessages("o", 2, 1)); n != 1 || err != nil {
		t.Fatalf("Write = %d, %v; want the recount to find room", n, err)
	}
}

// spaceFS reports a fixed amount of free space.
type spaceFS struct {
	core.FS
	free uint64
}

func (s spaceFS) FreeBytes() (uint64, error) { return s.free, nil }

// boundsMinFree: min_free_bytes keeps that much free, and needs an FS that
// reports free space.
func boundsMinFree(t TB, e *env) {
	o := boundedOptions(t, "min_free_bytes=900&when_full=fail")
	if _, ok := e.newFS().(core.SpaceReporter); !ok {
		_, err := core.OpenProducer(e.newFS(), o)
		if !errors.Is(err, option.ErrInvalid) || !strings.Contains(err.Error(), "min_free_bytes") {
			t.Fatalf("OpenProducer on an FS without free space = %v, want an option error naming min_free_bytes", err)
		}
	}
	p := openBounded(t, spaceFS{e.newFS(), 1000}, o)
	if n, err := p.Write(e.ctx, []core.Message{{ID: "m", Payload: []byte("x")}}); n != 1 || err != nil {
		t.Fatalf("Write with 1000 free, 900 to keep = %d, %v", n, err)
	}
	big := []core.Message{{Payload: make([]byte, 200)}}
	if _, err := p.Write(e.ctx, big); !errors.Is(err, core.ErrSpoolFull) || !strings.Contains(err.Error(), "min_free_bytes=900") {
		t.Fatalf("Write past min_free_bytes = %v, want ErrSpoolFull naming it", err)
	}
}

// boundsCountedAtOpen: a producer opened on a spool counts every committed
// chunk with the bytes of its payload and its sidecar, flat and across
// shard directories.
func boundsCountedAtOpen(t TB, e *env) {
	for _, layout := range []string{"", "shard_depth=2&shard_width=1"} {
		fsys := e.newFS()
		o := boundedOptions(t, layout+"&max_bytes=1000000")
		unbounded := o
		unbounded.Bounds = core.Bounds{}
		msgs := make([]core.Message, 25) // sharded: three leaf directories
		for i := range msgs {
			msgs[i] = core.Message{ID: fmt.Sprint(i), Payload: bytes.Repeat([]byte("x"), 10*i)}
		}
		writeAll(t, e, fsys, unbounded, msgs)
		var want int64
		for _, name := range chunkFiles(tree(t, fsys)) {
			fi, err := fsys.Stat(name)
			noErr(t, "Stat", err)
			want += fi.Size()
		}
		p := openBounded(t, fsys, o)
		if chunks, got, ok := p.Usage(); !ok || chunks != 25 || got != want {
			t.Errorf("layout %q: Usage = %d chunks, %d bytes, %v; want 25 chunks, %d bytes", layout, chunks, got, ok, want)
		}
	}
}
