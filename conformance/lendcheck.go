package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Lent payload buffers (Consumer.LendPayloadBuffers): a consumer reads
// payloads into buffers its caller lends, sized from the open, and falls
// back to a buffer of its own when the lent one is too small or missing.

func lendChecks() []check {
	return []check{
		{"StreamedIntoLentBuffers", checkLentBuffers},
		{"StreamedLargeBatchIntoLentBuffers", checkLentLargeBatch},
	}
}

// lender lends buffers of a planned capacity, in turn, and remembers them.
type lender struct {
	caps  []int // capacity of the next buffers; -1: lend nil
	asked []int // sizes asked for
	lent  [][]byte
}

func (l *lender) get(size int) []byte {
	l.asked = append(l.asked, size)
	c := l.caps[(len(l.asked)-1)%len(l.caps)]
	if c < 0 {
		l.lent = append(l.lent, nil)
		return nil
	}
	b := bytes.Repeat([]byte{0xEE}, c) // stale bytes the payload must replace
	l.lent = append(l.lent, b)
	return b
}

// uses reports whether payload is the memory of the i-th lent buffer.
func (l *lender) uses(i int, payload []byte) bool {
	b := l.lent[i]
	return len(payload) > 0 && cap(b) > 0 && &payload[0] == &b[:1][0]
}

// checkLentBuffers writes payloads of several sizes (an empty one, large
// ones above readFile's size guess, a large one growing past the last)
// to spools with and without sidecars, a bad sidecar delivered anyway
// among them, and reads them one at a time and in batches through lent
// buffers that fit, are too small, or are nil, and one at a time through
// buffers that always fit: the bytes are right either
// way, fitting buffers are used, and a nacked delivery comes back holding
// the buffer it was read into.
func checkLentBuffers(t TB, e *env) {
	sizes := []int{5, 0, 100 << 10, 300, 7, 90 << 10, 90 << 10, 90<<10 + 1, 90 << 10, 200 << 10}
	var msgs []core.Message
	for i, n := range sizes {
		msgs = append(msgs, core.Message{ID: fmt.Sprint("m", i), Payload: MakePayload(fmt.Sprint("m", i), n)})
	}
	mixed, plenty := []int{1 << 20, 0, 1000, -1, 7}, []int{1 << 20}
	for _, query := range []string{"bad_sidecar=deliver", "metadata_extension="} {
		for _, run := range []struct {
			batch int
			caps  []int
		}{{1, mixed}, {10, mixed}, {1, plenty}} {
			fsys := e.newFS()
			o := spoolOptions(t, query)
			o.ExitWhenEmpty = true
			p, err := core.OpenProducer(fsys, o)
			noErr(t, "OpenProducer", err)
			if _, err := p.Write(e.ctx, msgs); err != nil {
				t.Fatalf("%s: Write: %v", query, err)
			}
			noErr(t, "Producer.Close", p.Close())
			if o.MetadataExt != "" {
				noErr(t, "Remove", fsys.Remove("000000003"+o.MetadataExt))
				writeFile(t, fsys, "000000003"+o.MetadataExt, []byte("{not json"))
			}
			lendAndCheck(t, e, fsys, o, msgs, run.batch, run.caps)
		}
	}
}

// lendAndCheck drains the spool, batch messages at a time, through lent
// buffers of the capacities caps, in turn (-1: nil). It nacks the first
// delivery once.
func lendAndCheck(t TB, e *env, fsys core.FS, o core.Options, msgs []core.Message, batch int, caps []int) {
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	l := &lender{caps: caps}
	c.LendPayloadBuffers(l.get)
	first := readBatch(t, e, c, 1, 20*time.Second)
	noErr(t, "Nack", c.Nack(first...))
	ds := drain(t, e, c, batch)
	if len(ds) != len(msgs) || ds[0] != first[0] || !ds[0].Redelivered {
		t.Fatalf("lent buffers: %d deliveries of %d, the nacked one first: %v", len(ds), len(msgs), len(ds) > 0 && ds[0] == first[0])
	}
	for i, d := range ds {
		want := msgs[i].Payload
		if !bytes.Equal(d.Payload, want) || d.Size != int64(len(want)) {
			t.Errorf("lent buffers, message %d: %d payload bytes (Size %d), want %d and the bytes written", i, len(d.Payload), d.Size, len(want))
		}
	}
	checkLentUse(t, l, ds, reportsSize(t, fsys))
}

// reportsSize says whether the files of fsys report their size at open
// (core.SizedFile): only then does a consumer lend buffers.
func reportsSize(t TB, fsys core.FS) bool {
	writeFile(t, fsys, "sized.probe", []byte("x"))
	f, err := fsys.Open("sized.probe")
	noErr(t, "Open", err)
	defer fsys.Remove("sized.probe")
	defer f.Close()
	sf, ok := f.(core.SizedFile)
	return ok && sf.OpenSize() == 1
}

// checkLentUse checks get's asks against the payloads, in the order they
// were read (the nacked delivery was not read again): for each payload, at
// most a guess (one more than the payload before it, asked before its size
// was known) and then its exact size, the latter only when the guess had
// no room. Each payload sits in the buffer lent for it, when that fits.
func checkLentUse(t TB, l *lender, ds []*core.Delivery, sized bool) {
	if !sized {
		if len(l.asked) != 0 {
			t.Errorf("lent buffers: get was asked %v for files of unknown size", l.asked)
		}
		return
	}
	j := 0 // the next ask
	for i, d := range ds {
		n := len(d.Payload)
		if isGuess(l, j, ds, i) {
			j++
			if cap(l.lent[j-1]) >= n {
				if n > 0 && !l.uses(j-1, d.Payload) {
					t.Errorf("lent buffers, message %d: a buffer of %d bytes lent first fits %d but was not used", i, cap(l.lent[j-1]), n)
				}
				continue
			}
		}
		if j >= len(l.asked) || l.asked[j] != n {
			t.Fatalf("lent buffers, message %d of %d bytes: get was asked %v", i, n, l.asked)
		}
		if cap(l.lent[j]) >= n && n > 0 && !l.uses(j, d.Payload) {
			t.Errorf("lent buffers, message %d: a buffer of %d bytes fits %d but was not used", i, cap(l.lent[j]), n)
		}
		j++
	}
	if j != len(l.asked) {
		t.Errorf("lent buffers: get was asked %v for payloads of %d bytes and more", l.asked[j:], len(ds[len(ds)-1].Payload))
	}
}

// isGuess reports whether ask j, made for payload i, was a guess: one more
// than payload i-1. One that is also payload i's size was a guess when it
// fits, or when an ask for that size follows it.
func isGuess(l *lender, j int, ds []*core.Delivery, i int) bool {
	if i == 0 || j >= len(l.asked) || l.asked[j] != len(ds[i-1].Payload)+1 {
		return false
	}
	n := len(ds[i].Payload)
	return l.asked[j] != n || cap(l.lent[j]) >= n || j+1 < len(l.asked) && l.asked[j+1] == n
}

// checkLentLargeBatch drains batches of large payloads, which an FS may
// read on several threads (core.WholeFileReader), through a lender that
// is not safe for concurrent use (the race detector watches it): every
// payload arrives whole and in order, get is asked once for each payload's
// size, in whatever order, and each payload sits in a buffer it lent.
func checkLentLargeBatch(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	o.ExitWhenEmpty = true
	var msgs []core.Message
	for i := range 48 {
		id := fmt.Sprint("big", i)
		msgs = append(msgs, core.Message{ID: id, Payload: MakePayload(id, 40<<10+i)})
	}
	writeAll(t, e, fsys, o, msgs)
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	l := &lender{caps: []int{64 << 10}}
	c.LendPayloadBuffers(l.get)
	ds := drain(t, e, c, 64)
	if len(ds) != len(msgs) {
		t.Fatalf("large lent batch: %d deliveries of %d", len(ds), len(msgs))
	}
	for i, d := range ds {
		if d.MessageID != msgs[i].ID || !bytes.Equal(d.Payload, msgs[i].Payload) {
			t.Errorf("large lent batch, delivery %d: message %q with %d bytes, want %q with the %d written", i, d.MessageID, len(d.Payload), msgs[i].ID, len(msgs[i].Payload))
		}
	}
	if !reportsSize(t, fsys) {
		return
	}
	checkLentAnyOrder(t, l, ds)
}

// checkLentAnyOrder checks that get was asked once per payload, in any
// order, each time for a payload's size or, before the size was known, for
// one more than an earlier payload's, and that each payload is in memory
// get lent (every lent buffer fits).
func checkLentAnyOrder(t TB, l *lender, ds []*core.Delivery) {
	sizes := map[int]bool{}
	for _, d := range ds {
		sizes[len(d.Payload)] = true
	}
	if len(l.asked) != len(ds) {
		t.Errorf("large lent batch: get was asked %d times for %d payloads", len(l.asked), len(ds))
	}
	for _, n := range l.asked {
		if !sizes[n] && !sizes[n-1] {
			t.Errorf("large lent batch: get was asked for %d bytes, neither a payload's size nor one more", n)
		}
	}
	for _, d := range ds {
		if !slices.ContainsFunc(l.lent, func(b []byte) bool { return &d.Payload[0] == &b[:1][0] }) {
			t.Errorf("large lent batch: the payload of %s is not in a lent buffer", d.Name)
		}
	}
}
