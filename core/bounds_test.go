package core

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

func bounded(t testing.TB, b Bounds) Options {
	t.Helper()
	o := opts(t, "?poll_interval=5ms")
	o.Bounds = b
	return o
}

func msgs(n int, size int) []Message {
	out := make([]Message, n)
	for i := range out {
		out[i] = Message{Payload: []byte(strings.Repeat("x", size))}
	}
	return out
}

func chunkCount(t testing.TB, fsys FS, o Options) int {
	t.Helper()
	st, err := Scan(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	return st.Chunks
}

func TestBoundsFailRefusesWhatDoesNotFit(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 2, WhenFull: WhenFullFail})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.Write(context.Background(), msgs(2, 10)); n != 2 || err != nil {
		t.Fatalf("Write = %d, %v; want 2, nil", n, err)
	}
	n, err := p.Write(context.Background(), msgs(1, 10))
	if n != 0 || !errors.Is(err, ErrSpoolFull) || !strings.Contains(err.Error(), "max_messages=2") {
		t.Fatalf("Write on a full spool = %d, %v; want 0 and ErrSpoolFull naming max_messages=2", n, err)
	}
	if got := chunkCount(t, fsys, o); got != 2 {
		t.Fatalf("spool holds %d chunks, want 2", got)
	}
}

func TestBoundsDropNewestCountsDrops(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 2, WhenFull: WhenFullDropNewest})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.Write(context.Background(), msgs(5, 10)); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v; want 5 handled, nil", n, err)
	}
	if got := p.Dropped(); got != 3 {
		t.Fatalf("Dropped = %d, want 3", got)
	}
	if got := chunkCount(t, fsys, o); got != 2 {
		t.Fatalf("spool holds %d chunks, want 2", got)
	}
}

func TestBoundsMaxBytesCountsPayloadAndSidecar(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxBytes: 1000, WhenFull: WhenFullFail})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Each chunk is a 300-byte payload plus a sidecar of about 60 bytes:
	// two fit in 1000 bytes, a third does not.
	n, err := p.Write(context.Background(), msgs(3, 300))
	if n != 2 || !errors.Is(err, ErrSpoolFull) || !strings.Contains(err.Error(), "max_bytes=1000") {
		t.Fatalf("Write = %d, %v; want 2 written, then ErrSpoolFull naming max_bytes", n, err)
	}
	chunks, bytes, ok := p.Usage()
	if !ok || chunks != 2 || bytes <= 600 || bytes > 1000 {
		t.Fatalf("Usage = %d chunks, %d bytes, %v", chunks, bytes, ok)
	}
}

// A producer opened on a spool that is already full counts what is there:
// the account survives a restart.
func TestBoundsSurviveRestart(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 3, WhenFull: WhenFullFail})
	produce(t, fsys, o, "a", "b", "c").Close()
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Write(context.Background(), msgs(1, 1)); !errors.Is(err, ErrSpoolFull) {
		t.Fatalf("Write to a reopened full spool = %v, want ErrSpoolFull", err)
	}
}

// With when_full=block a write waits for a consumer, and the spool never
// holds more than the bound while it does.
func TestBoundsBlockWaitsForTheConsumer(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 3})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var peak atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st, err := Scan(fsys, o); err == nil && int64(st.Chunks) > peak.Load() {
				peak.Store(int64(st.Chunks))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := p.Write(context.Background(), msgs(10, 10))
		done <- err
	}()
	for chunkCount(t, fsys, o) < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the producer now waits for room
	c, err := OpenConsumer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for got := 0; got < 10; {
		ds := readN(t, c, 2)
		time.Sleep(3 * time.Millisecond) // let the producer find the spool full
		if err := c.Ack(ds...); err != nil {
			t.Fatal(err)
		}
		got += len(ds)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked Write: %v", err)
	}
	close(stop)
	<-watched
	if peak.Load() > 3 {
		t.Fatalf("the spool held %d chunks at one point, over max_messages=3", peak.Load())
	}
	if p.FullWaits() == 0 {
		t.Fatal("FullWaits = 0 after writing 10 messages through a bound of 3")
	}
}

// A blocked write gives up when its context ends, having written only what
// fit.
func TestBoundsBlockEndsWithTheContext(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 2})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n, err := p.Write(ctx, msgs(3, 1))
	if n != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write = %d, %v; want 2 and a deadline error", n, err)
	}
}

// A chunk acknowledged out of order is found by the periodic recount, so a
// blocked producer does not wait for the oldest chunk to go.
func TestBoundsRecountFindsOutOfOrderRemoval(t *testing.T) {
	fsys := newRootFS(t)
	o := bounded(t, Bounds{MaxMessages: 2})
	p := produce(t, fsys, o, "a", "b")
	defer p.Close()
	c, err := OpenConsumer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ds := readN(t, c, 2)
	if err := c.Ack(ds[1]); err != nil { // the newer one only
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := p.Write(ctx, msgs(1, 1)); n != 1 || err != nil {
		t.Fatalf("Write = %d, %v; want the recount to find room", n, err)
	}
}

func TestBoundsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Bounds
		field string
	}{
		{"negative max_messages", Bounds{MaxMessages: -1}, "max_messages"},
		{"negative max_bytes", Bounds{MaxBytes: -5}, "max_bytes"},
		{"negative min_free_bytes", Bounds{MinFreeBytes: -5}, "min_free_bytes"},
		{"unknown when_full", Bounds{MaxMessages: 1, WhenFull: "sometimes"}, "when_full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(t, "")
			o.Bounds = tc.b
			_, err := OpenProducer(newRootFS(t), o)
			var oe *option.Error
			if !errors.As(err, &oe) || oe.Field != tc.field {
				t.Fatalf("OpenProducer = %v, want an OptionError for %s", err, tc.field)
			}
		})
	}
}

// min_free_bytes needs a backend that reports free space; one that cannot
// is refused at open rather than ignored.
func TestBoundsMinFreeNeedsSpaceReporter(t *testing.T) {
	o := bounded(t, Bounds{MinFreeBytes: 1 << 20})
	_, err := OpenProducer(newRootFS(t), o)
	if !errors.Is(err, option.ErrInvalid) || !strings.Contains(err.Error(), "min_free_bytes") {
		t.Fatalf("OpenProducer = %v, want an option error naming min_free_bytes", err)
	}
}

type spaceFS struct {
	*rootFS
	free uint64
}

func (s *spaceFS) FreeBytes() (uint64, error) { return s.free, nil }

func TestBoundsMinFreeBytes(t *testing.T) {
	fsys := &spaceFS{rootFS: newRootFS(t), free: 1000}
	o := bounded(t, Bounds{MinFreeBytes: 900, WhenFull: WhenFullFail})
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.Write(context.Background(), msgs(1, 10)); n != 1 || err != nil {
		t.Fatalf("Write with 1000 free, 900 to keep = %d, %v", n, err)
	}
	_, err = p.Write(context.Background(), msgs(1, 200))
	if !errors.Is(err, ErrSpoolFull) || !strings.Contains(err.Error(), "min_free_bytes=900") {
		t.Fatalf("Write past min_free_bytes = %v", err)
	}
}
