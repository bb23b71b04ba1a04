package conformance

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Payloads as streams: a producer writes a Message.Body, a consumer that
// streams large payloads (SetStreamAbove) leaves them on disk and reads them
// with Delivery.Open, and a payload whose size is not what was stated is an
// error, never a short or long delivery.

func streamChecks() []check {
	return []check{
		{"StreamedPayloadRoundTrip", checkStreamRoundTrip},
		{"StreamedBodyFailsCleanly", checkStreamBodyFails},
		{"StreamedPayloadChangedOnDisk", checkStreamChangedOnDisk},
		{"StreamedPayloadCountsInBounds", checkStreamBounds},
		{"StreamedMixedSizes", checkStreamMixedSizes},
		{"StreamedPayloadsKeptOpen", checkStreamKeptFiles},
	}
}

// streamSize is larger than any buffer on the way (readFile's size guess,
// io.Copy's buffer, a backend's copy buffer) and than the 1 MiB above which
// openStreaming leaves payloads on disk.
const streamSize = 2<<20 + 12345

// failSize is the size of the bodies that fail: still larger than the
// copy buffers, small enough to sync quickly under every fsync policy.
const failSize = 600<<10 + 123

// patternReader yields n bytes of a pattern without holding them, failing
// with failAt's error once failAt bytes were read (failAt < 0: never).
type patternReader struct {
	off, n, failAt int64
}

var errBodyBroke = errors.New("body broke off (injected)")

func (p *patternReader) Read(b []byte) (int, error) {
	if p.failAt >= 0 && p.off >= p.failAt {
		return 0, errBodyBroke
	}
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(b)), p.n-p.off))
	if p.failAt >= 0 {
		k = int(min(int64(k), p.failAt-p.off))
	}
	for i := range k {
		x := p.off + int64(i)
		b[i] = byte(x*7 ^ x>>9 ^ x>>17)
	}
	p.off += int64(k)
	return k, nil
}

func patternSum(n int64) [32]byte {
	h := sha256.New()
	_, _ = io.Copy(h, &patternReader{n: n, failAt: -1})
	return [32]byte(h.Sum(nil))
}

// streamSum reads a delivery's payload through Open.
func streamSum(d *core.Delivery) ([32]byte, int64, error) {
	r, err := d.Open()
	if err != nil {
		return [32]byte{}, 0, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	return [32]byte(h.Sum(nil)), n, err
}

// openStreaming opens a draining consumer that leaves payloads above 1 MiB
// on disk.
func openStreaming(t TB, fsys core.FS, o core.Options) *core.Consumer {
	t.Helper()
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	c.SetStreamAbove(1 << 20)
	return c
}

// checkReadInto reads the payload of d, left on disk, into a buffer of
// exactly its size, one with room to spare and one too small: the first two
// must hold the payload in the lent memory, the third in new memory.
func checkReadInto(t TB, d *core.Delivery) {
	t.Helper()
	for _, room := range []int{streamSize, streamSize + 4096, 1024} {
		lent := make([]byte, 0, room)
		got, err := d.ReadInto(lent)
		noErr(t, "ReadInto", err)
		if len(got) != streamSize || sha256.Sum256(got) != patternSum(streamSize) {
			t.Errorf("ReadInto with a %d-byte buffer: %d bytes, not the payload written", room, len(got))
			continue
		}
		if shares := &got[0] == &lent[:1][0]; shares != (room >= streamSize) {
			t.Errorf("ReadInto with a %d-byte buffer for %d bytes: result in the lent memory = %v", room, streamSize, shares)
		}
	}
}

// checkStreamRoundTrip writes a large Body, an empty Body and a small
// Payload, reads them with a streaming consumer, copies the large one into
// a second spool from its stream (spool to spool) and reads that back.
func checkStreamRoundTrip(t TB, e *env) {
	src, dst := e.newFS(), e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(src, o)
	noErr(t, "OpenProducer", err)
	msgs := []core.Message{
		{ID: "big", Body: &patternReader{n: streamSize, failAt: -1}, Size: streamSize},
		{ID: "empty", Body: strings.NewReader(""), Size: 0},
		{ID: "small", Payload: []byte("small")},
	}
	if n, err := p.Write(e.ctx, msgs); err != nil || n != 3 {
		t.Fatalf("Write of streamed bodies = %d, %v", n, err)
	}
	noErr(t, "Producer.Close", p.Close())
	c := openStreaming(t, src, o)
	defer c.Close()
	ds := readBatch(t, e, c, 3, 20*time.Second)
	if len(ds) != 3 {
		t.Fatalf("read %d deliveries, want 3", len(ds))
	}
	big := ds[0]
	if big.Payload != nil || big.Size != streamSize || big.MessageID != "big" {
		t.Fatalf("large delivery: %d payload bytes in memory, Size %d, id %q; want it left on disk with Size %d", len(big.Payload), big.Size, big.MessageID, streamSize)
	}
	if sum, n, err := streamSum(big); err != nil || sum != patternSum(streamSize) {
		t.Fatalf("stream of the large payload: %d bytes, %v; not the bytes written", n, err)
	}
	if ds[1].Size != 0 || len(ds[1].Payload) != 0 || string(ds[2].Payload) != "small" || ds[2].Size != 5 {
		t.Errorf("small deliveries: sizes %d and %d, payload %q", ds[1].Size, ds[2].Size, ds[2].Payload)
	}
	checkReadInto(t, big)
	copyStream(t, e, big, dst, o)
	noErr(t, "Ack", c.Ack(ds...))
	c2 := openStreaming(t, dst, o)
	defer c2.Close()
	out := drain(t, e, c2, 10)
	if len(out) != 1 || out[0].Size != streamSize || out[0].MessageID != "big" {
		t.Fatalf("copied spool delivered %d messages", len(out))
	}
}

// copyStream writes d's payload stream into the spool on dst.
func copyStream(t TB, e *env, d *core.Delivery, dst core.FS, o core.Options) {
	t.Helper()
	r, err := d.Open()
	noErr(t, "Delivery.Open", err)
	defer r.Close()
	p, err := core.OpenProducer(dst, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	if _, err := p.Write(e.ctx, []core.Message{{ID: d.MessageID, Body: r, Size: d.Size}}); err != nil {
		t.Fatalf("spool to spool copy of a stream: %v", err)
	}
	if got := mustRead(t, dst, "000000000.bin"); sha256.Sum256(got) != patternSum(streamSize) {
		t.Errorf("spool to spool copy holds %d bytes, not the payload", len(got))
	}
}

// checkStreamBodyFails feeds bodies that break off, are shorter or longer
// than their Size: each write fails, no chunk (nor .tmp) is left, and a
// retry with a good body succeeds, for every fsync policy.
func checkStreamBodyFails(t TB, e *env) {
	for _, fsync := range []string{"none", "batch", "chunk"} {
		fsys := e.newFS()
		o := spoolOptions(t, "fsync="+fsync)
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		bad := []struct {
			body io.Reader
			size int64
			want error
		}{
			{&patternReader{n: failSize, failAt: failSize / 2}, failSize, errBodyBroke},
			{&patternReader{n: failSize - 1, failAt: -1}, failSize, core.ErrPayloadSize},
			{&patternReader{n: failSize + 1, failAt: -1}, failSize, core.ErrPayloadSize},
		}
		for i, b := range bad {
			msgs := []core.Message{{Payload: []byte("before")}, {ID: fmt.Sprint("bad", i), Body: b.body, Size: b.size}}
			n, err := p.Write(e.ctx, msgs)
			if !errors.Is(err, b.want) {
				t.Fatalf("fsync=%s, bad body %d: Write = %d, %v; want an error matching %v", fsync, i, n, err, b.want)
			}
			for _, name := range tree(t, fsys) {
				if strings.HasSuffix(name, core.TmpSuffix) || (fsync != "chunk" && name != "PRODUCER") {
					t.Fatalf("fsync=%s, bad body %d: after the failed write the spool holds %q", fsync, i, tree(t, fsys))
				}
			}
		}
		if _, err := p.Write(e.ctx, []core.Message{{ID: "good", Body: &patternReader{n: failSize, failAt: -1}, Size: failSize}}); err != nil {
			t.Fatalf("fsync=%s: retry with a good body: %v", fsync, err)
		}
		noErr(t, "Producer.Close", p.Close())
		c := openStreaming(t, fsys, o)
		var ds []*core.Delivery
		for len(ds) == 0 || ds[len(ds)-1].MessageID != "good" {
			ds = append(ds, readBatch(t, e, c, 10, 20*time.Second)...)
		}
		if sum, n, err := streamSum(ds[len(ds)-1]); err != nil || sum != patternSum(failSize) {
			t.Errorf("fsync=%s: the good body after failed ones reads back as %d bytes, %v", fsync, n, err)
		}
		noErr(t, "Ack", c.Ack(ds...))
		noErr(t, "Consumer.Close", c.Close())
	}
}

// checkStreamChangedOnDisk replaces a delivered payload, left on disk, by a
// shorter and then a longer file: reading it fails with ErrPayloadSize,
// and the chunk, nacked, is still there to deliver.
func checkStreamChangedOnDisk(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, []core.Message{{ID: "x", Body: &patternReader{n: streamSize, failAt: -1}, Size: streamSize}})
	noErr(t, "Write", err)
	noErr(t, "Producer.Close", p.Close())
	c := openStreaming(t, fsys, o)
	defer c.Close()
	for _, size := range []int{streamSize / 2, streamSize + 1} {
		ds := readBatch(t, e, c, 1, 20*time.Second)
		noErr(t, "Remove", fsys.Remove(ds[0].Name))
		writeFile(t, fsys, ds[0].Name, bytes.Repeat([]byte{'z'}, size))
		if _, n, err := streamSum(ds[0]); !errors.Is(err, core.ErrPayloadSize) {
			t.Errorf("payload file of %d bytes under a delivery of %d: stream gave %d bytes, %v; want ErrPayloadSize", size, ds[0].Size, n, err)
		}
		if _, err := ds[0].ReadInto(nil); !errors.Is(err, core.ErrPayloadSize) {
			t.Errorf("payload file of %d bytes under a delivery of %d: ReadInto: %v; want ErrPayloadSize", size, ds[0].Size, err)
		}
		noErr(t, "Nack", c.Nack(ds...))
		if !slices.Contains(tree(t, fsys), ds[0].Name) {
			t.Fatalf("nacked chunk %s is gone", ds[0].Name)
		}
	}
}

// checkStreamBounds fills a spool bounded by max_bytes with streamed
// bodies: their Size counts like the bytes of a Payload, so the second
// one does not fit.
func checkStreamBounds(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, fmt.Sprintf("max_bytes=%d&when_full=fail", failSize+failSize/2))
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	body := func() []core.Message {
		return []core.Message{{Body: &patternReader{n: failSize, failAt: -1}, Size: failSize}}
	}
	if _, err := p.Write(e.ctx, body()); err != nil {
		t.Fatalf("first streamed body of %d bytes under max_bytes %d: %v", failSize, o.Bounds.MaxBytes, err)
	}
	if _, err := p.Write(e.ctx, body()); !errors.Is(err, core.ErrSpoolFull) {
		t.Fatalf("second streamed body of %d bytes under max_bytes %d: %v; want ErrSpoolFull", failSize, o.Bounds.MaxBytes, err)
	}
	if got := chunkFiles(tree(t, fsys)); len(got) != 2 {
		t.Errorf("spool holds %q, want the first chunk only", got)
	}
}

// mixedSizes are the payload sizes of checkStreamMixedSizes: runs of small
// and large in both orders, so that a consumer guessing the next size from
// the last one guesses wrong at every change.
var mixedSizes = []int{100, 9000, 100, 100, 9000, 9000, 100, 9000, 0, 4096, 4097}

// checkStreamMixedSizes drains payloads above and below the threshold of a
// consumer that leaves those above 4096 bytes on disk, in batches (read
// ahead) and one by one with lent buffers: each large one must come with
// Payload nil and its Size, each small one in memory, every one whole.
func checkStreamMixedSizes(t TB, e *env) {
	for _, pass := range []struct {
		limit int
		lend  bool
	}{{len(mixedSizes), false}, {1, true}} {
		fsys := e.newFS()
		o := spoolOptions(t, "")
		msgs := make([]core.Message, len(mixedSizes))
		for i, n := range mixedSizes {
			msgs[i] = core.Message{ID: fmt.Sprint(i), Payload: bytes.Repeat([]byte{byte('a' + i)}, n)}
		}
		writeAll(t, e, fsys, o, msgs)
		o.ExitWhenEmpty = true
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		c.SetStreamAbove(4096)
		if pass.lend {
			c.LendPayloadBuffers(func(n int) []byte { return make([]byte, n) })
		}
		for i := 0; i < len(msgs); {
			ds := readBatch(t, e, c, pass.limit, 20*time.Second)
			for _, d := range ds[:min(len(ds), len(msgs)-i)] {
				checkMixedDelivery(t, d, msgs[i].Payload, pass.limit)
				i++
			}
			noErr(t, "Ack", c.Ack(ds...)) // after the reads: a drained payload is gone
		}
		noErr(t, "Consumer.Close", c.Close())
	}
}

// checkMixedDelivery checks one delivery of checkStreamMixedSizes.
func checkMixedDelivery(t TB, d *core.Delivery, want []byte, limit int) {
	t.Helper()
	onDisk := len(want) > 4096
	if (d.Payload == nil && len(want) > 0) != onDisk || d.Size != int64(len(want)) {
		t.Errorf("limit %d, message %s of %d bytes: %d bytes in memory, Size %d; want it on disk: %v",
			limit, d.MessageID, len(want), len(d.Payload), d.Size, onDisk)
		return
	}
	if !onDisk {
		if !bytes.Equal(d.Payload, want) {
			t.Errorf("limit %d, message %s: payload in memory is not the one written", limit, d.MessageID)
		}
		return
	}
	got, err := d.ReadInto(nil)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("limit %d, message %s: ReadInto gave %d bytes, %v; not the payload written", limit, d.MessageID, len(got), err)
	}
}

// keptCount is more large payloads than a consumer keeps open in its
// deliveries at once (256; core's measureKept).
const keptCount = 270

// checkStreamKeptFiles reads keptCount payloads left on disk in one go, each
// after a large one, so that a backend that can keeps each one open from its
// measure: every third is read with ReadInto, every third with Open, the
// rest are settled unread, half of those nacked. Each read gives the payload
// written, and so does each nacked one when it is delivered again.
func checkStreamKeptFiles(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	msgs := make([]core.Message, keptCount)
	for i := range msgs {
		msgs[i] = core.Message{ID: fmt.Sprint(i), Payload: MakePayload(fmt.Sprint(i), 5000+i)}
	}
	writeAll(t, e, fsys, o, msgs)
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	c.SetStreamAbove(4096)
	var ds, acked, nacked []*core.Delivery
	for len(ds) < keptCount {
		ds = append(ds, readBatch(t, e, c, keptCount-len(ds), 20*time.Second)...)
	}
	for i, d := range ds {
		switch {
		case i%3 == 0:
			checkMixedDelivery(t, d, msgs[i].Payload, keptCount) // ReadInto
		case i%3 == 1:
			checkOpenGives(t, d, msgs[i].Payload)
		case i%2 == 0:
			nacked = append(nacked, d)
			continue
		}
		acked = append(acked, d)
	}
	noErr(t, "Nack", c.Nack(nacked...))
	noErr(t, "Ack", c.Ack(acked...))
	again := readBatch(t, e, c, keptCount, 20*time.Second)
	if len(again) != len(nacked) {
		t.Fatalf("%d nacked deliveries, %d delivered again", len(nacked), len(again))
	}
	for i, d := range again {
		if d != nacked[i] || !d.Redelivered {
			t.Fatalf("delivered again: %s (redelivered %v), want nacked %s", d.Name, d.Redelivered, nacked[i].Name)
		}
		checkOpenGives(t, d, msgs[slices.Index(ds, d)].Payload)
	}
	noErr(t, "Ack", c.Ack(again...))
	if rest := drain(t, e, c, keptCount); len(rest) > 0 {
		t.Errorf("%d more deliveries after every one was acked", len(rest))
	}
	if left := chunkFiles(tree(t, fsys)); len(left) > 0 {
		t.Errorf("drained spool still holds %q", left)
	}
}

// checkOpenGives checks that d's stream gives want.
func checkOpenGives(t TB, d *core.Delivery, want []byte) {
	t.Helper()
	r, err := d.Open()
	if err != nil {
		t.Errorf("message %s: Open: %v", d.MessageID, err)
		return
	}
	got, err := io.ReadAll(r)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("message %s: Open gave %d bytes, %v; want the %d bytes written", d.MessageID, len(got), err, len(want))
	}
}
