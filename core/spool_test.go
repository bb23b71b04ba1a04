package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

func opts(t testing.TB, query string) Options {
	t.Helper()
	o, err := ParseURL("dir-spool:///spool" + query)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func produce(t testing.TB, fsys FS, o Options, payloads ...string) *Producer {
	t.Helper()
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]Message, len(payloads))
	for i, s := range payloads {
		msgs[i] = Message{Payload: []byte(s), Metadata: map[string]string{"n": fmt.Sprint(i)}}
	}
	if n, err := p.Write(context.Background(), msgs); err != nil || n != len(msgs) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	return p
}

func readN(t testing.TB, c *Consumer, limit int) []*Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ds, err := c.Read(ctx, limit)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return ds
}

func payloads(ds []*Delivery) string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d.Payload))
	}
	return strings.Join(s, ",")
}

func exists(fsys FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil
}

func TestProduceConsumeAck(t *testing.T) {
	for _, q := range []string{"", "?fsync=batch", "?fsync=none", "?atomic=false", "?shard_depth=2&shard_width=3", "?metadata_extension=", "?naming_pattern={seq:04}-x&payload_extension=.jsonl&metadata_extension=.meta&shard_depth=1&shard_width=2"} {
		t.Run(q, func(t *testing.T) {
			fsys := newRootFS(t)
			o := opts(t, q)
			p := produce(t, fsys, o, "a", "b", "c", "d", "e")
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			l, _ := o.Layout()
			if !exists(fsys, l.Payload(0)) || !exists(fsys, l.Payload(4)) || exists(fsys, l.Payload(5)) {
				t.Fatal("payload files not where the layout says")
			}
			o.ExitWhenEmpty = true
			c, err := OpenConsumer(fsys, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ds := readN(t, c, 3)
			if got := payloads(ds); got != "a,b,c" {
				t.Fatalf("first batch %q", got)
			}
			if l.Sidecars() && (ds[1].Metadata["n"] != "1" || len(ds[1].MessageID) != 32) {
				t.Fatalf("metadata not restored: %+v", ds[1])
			}
			if err := c.Ack(ds...); err != nil {
				t.Fatal(err)
			}
			if exists(fsys, l.Payload(0)) || (l.Sidecars() && exists(fsys, l.Sidecar(0))) {
				t.Fatal("acked chunk still on disk")
			}
			ds = readN(t, c, 10)
			if got := payloads(ds); got != "d,e" {
				t.Fatalf("second batch %q", got)
			}
			if err := c.Ack(ds...); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(context.Background(), 1); !errors.Is(err, ErrEnd) {
				t.Fatalf("Read after drain = %v, want ErrEnd", err)
			}
		})
	}
}

func TestNackRedeliversFirst(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	produce(t, fsys, o, "a", "b", "c", "d").Close()
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	ds := readN(t, c, 2)
	if err := c.Nack(ds[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ds[0]); err != nil {
		t.Fatal(err)
	}
	ds = readN(t, c, 10)
	if got := payloads(ds); got != "b,c,d" || !ds[0].Redelivered {
		t.Fatalf("after nack got %q (redelivered=%v)", got, ds[0].Redelivered)
	}
	if err := c.Ack(ds[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Ack(ds[0]); !errors.Is(err, ErrUnknownDelivery) {
		t.Fatalf("double ack = %v", err)
	}
}

func TestNonDestructivePass(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?drain_on_read=false&shard_depth=1&shard_width=1&naming_pattern={seq:03}")
	o.ExitWhenEmpty = true
	p := produce(t, fsys, o, "a", "b", "c")
	c, err := OpenConsumer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	ds := readN(t, c, 10)
	c.Ack(ds...)
	if got := payloads(ds); got != "a,b,c" {
		t.Fatalf("got %q", got)
	}
	if !exists(fsys, "0/00.bin") || !exists(fsys, "0/02.json") {
		t.Fatal("non-destructive pass deleted files")
	}
	if exists(fsys, ConsumerFile) {
		t.Fatal("non-destructive consumer took the CONSUMER claim")
	}
	// The cursor goes on with new chunks only.
	p.Write(context.Background(), []Message{{Payload: []byte("d")}})
	ds = readN(t, c, 10)
	if got := payloads(ds); got != "d" {
		t.Fatalf("after cursor got %q", got)
	}
	c.Ack(ds...)
	if _, err := c.Read(context.Background(), 1); !errors.Is(err, ErrEnd) {
		t.Fatalf("want ErrEnd, got %v", err)
	}
	c.Close()
	p.Close()
}

func TestStopOnDone(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?emit_done=success&stop_on_done=true")
	p := produce(t, fsys, o, "a")
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	ds := readN(t, c, 10)
	c.Ack(ds...)
	// No DONE yet: Read waits.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Read(ctx, 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read without DONE = %v, want to wait", err)
	}
	p.Write(context.Background(), []Message{{Payload: []byte("b")}})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadDone(fsys)
	if err != nil || rec.Status != "success" || rec.Count != 2 || *rec.LastSeq != 1 {
		t.Fatalf("DONE = %+v, %v", rec, err)
	}
	ds = readN(t, c, 10)
	if payloads(ds) != "b" {
		t.Fatalf("got %q", payloads(ds))
	}
	// DONE and empty, but b is in flight: a nack must still redeliver it.
	c.Nack(ds...)
	ds = readN(t, c, 10)
	c.Ack(ds...)
	if _, err := c.Read(context.Background(), 1); !errors.Is(err, ErrEnd) {
		t.Fatalf("want ErrEnd, got %v", err)
	}
	// A new producer removes the stale DONE before writing.
	p2, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	if exists(fsys, DoneFile) {
		t.Fatal("stale DONE survived producer open")
	}
	p2.CloseWithError(errors.New("boom"))
	if exists(fsys, DoneFile) {
		t.Fatal("emit_done=success wrote DONE for a failed run")
	}
	o.EmitDone = EmitAlways
	p3, _ := OpenProducer(fsys, o)
	p3.CloseWithError(errors.New("boom"))
	if rec, err := ReadDone(fsys); err != nil || rec.Status != "failure" || rec.Error != "boom" {
		t.Fatalf("DONE = %+v, %v", rec, err)
	}
}

func TestSequenceNeverReused(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	produce(t, fsys, o, "a", "b").Close()
	o2 := o
	o2.ExitWhenEmpty = true
	c, _ := OpenConsumer(fsys, o2)
	ds := readN(t, c, 10)
	c.Ack(ds...)
	c.Close()
	// Fully drained: only the PRODUCER record remembers where we were.
	p := produce(t, fsys, o, "c")
	if p.NextSeq() != 3 || !exists(fsys, "000000002.bin") {
		t.Fatalf("resumed at %d", p.NextSeq())
	}
	p.Close()
}

func TestRecoveryAtOpen(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?shard_depth=1&shard_width=3")
	produce(t, fsys, o, "a", "b").Close()
	// A crashed producer's leftovers: tmp files and a sidecar whose payload never landed.
	for name, data := range map[string]string{"000/000002.json": `{"message_id":"x","metadata":{}}`, "000/000003.json.tmp": "{", "000/000003.bin.tmp": "par"} {
		f, err := fsys.CreateExcl(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(data))
		f.Close()
	}
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"000/000002.json", "000/000003.json.tmp", "000/000003.bin.tmp"} {
		if exists(fsys, n) {
			t.Errorf("%s survived recovery", n)
		}
	}
	if p.NextSeq() < 4 {
		t.Fatalf("next = %d: a number seen in a leftover was reused", p.NextSeq())
	}
	p.Close()
}

func TestClaims(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	p, err := OpenProducer(fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenProducer(fsys, o)
	var ce *ClaimError
	if !errors.As(err, &ce) || !errors.Is(err, ErrClaimed) || ce.Holder == nil || ce.Holder.PID != os.Getpid() {
		t.Fatalf("second producer: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d on host %s", os.Getpid(), hostname)) {
		t.Fatalf("error does not name the holder: %v", err)
	}
	c1, err := OpenConsumer(fsys, o)
	if err != nil {
		t.Fatalf("a consumer must coexist with the producer: %v", err)
	}
	if _, err := OpenConsumer(fsys, o); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second draining consumer: %v", err)
	}
	o2 := o
	o2.DrainOnRead = false
	if c, err := OpenConsumer(fsys, o2); err != nil {
		t.Fatalf("non-destructive reader must not need the claim: %v", err)
	} else {
		c.Close()
	}
	p.Close()
	c1.Close()
	h, held, err := ReadHolder(fsys, ProducerFile)
	if err != nil || held || h == nil || h.NextSeq == nil {
		t.Fatalf("ReadHolder = %+v %v %v", h, held, err)
	}
	if p, err := OpenProducer(fsys, o); err != nil {
		t.Fatalf("claim not released: %v", err)
	} else {
		p.Close()
	}
}

func TestSequenceExhausted(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?naming_pattern={seq:01}")
	p := produce(t, fsys, o, "0", "1", "2", "3", "4", "5", "6", "7", "8")
	n, err := p.Write(context.Background(), []Message{{Payload: []byte("9")}, {Payload: []byte("10")}})
	if !errors.Is(err, ErrSequenceExhausted) || n != 0 || !strings.Contains(err.Error(), "9") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if n, err := p.Write(context.Background(), []Message{{Payload: []byte("9")}}); err != nil || n != 1 {
		t.Fatalf("last slot: %d %v", n, err)
	}
	if _, err := p.Write(context.Background(), []Message{{Payload: []byte("x")}}); !errors.Is(err, ErrSequenceExhausted) {
		t.Fatalf("past the end: %v", err)
	}
	p.Close()
	if exists(fsys, "10.bin") || exists(fsys, "0.bin.tmp") {
		t.Fatal("wrapped or widened")
	}
}

func TestBadSidecar(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	produce(t, fsys, o, "a", "b").Close()
	fsys.Remove("000000000.json")
	f, _ := fsys.CreateExcl("000000000.json")
	f.Write([]byte("{not json"))
	f.Close()
	c, _ := OpenConsumer(fsys, o)
	_, err := c.Read(context.Background(), 10)
	var se *SidecarError
	if !errors.As(err, &se) || se.Path != "000000000.json" || !strings.Contains(err.Error(), "000000000.json") {
		t.Fatalf("Read = %v", err)
	}
	if !exists(fsys, "000000000.bin") {
		t.Fatal("a chunk with a bad sidecar was deleted")
	}
	c.Close()
	o.BadSidecar = BadSidecarDeliver
	c, _ = OpenConsumer(fsys, o)
	defer c.Close()
	ds := readN(t, c, 10)
	if payloads(ds) != "a,b" || len(ds[0].Metadata) != 0 {
		t.Fatalf("deliver mode: %q %+v", payloads(ds), ds[0])
	}
}

func TestPayloadWithoutSidecar(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	f, _ := fsys.CreateExcl("000000007.bin")
	f.Write([]byte("external"))
	f.Close()
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	ds := readN(t, c, 10)
	if payloads(ds) != "external" || ds[0].Seq != 7 || len(ds[0].Metadata) != 0 || ds[0].MessageID != "" {
		t.Fatalf("got %+v", ds[0])
	}
}

func TestEmptyShardDirsRemovedBehind(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?naming_pattern={seq:03}&shard_depth=2&shard_width=1")
	p, _ := OpenProducer(fsys, o)
	msgs := make([]Message, 25)
	for i := range msgs {
		msgs[i].Payload = []byte{byte(i)}
	}
	p.Write(context.Background(), msgs)
	p.Close()
	o.ExitWhenEmpty = true
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	for {
		ds, err := c.Read(context.Background(), 4)
		if errors.Is(err, ErrEnd) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c.Ack(ds...)
	}
	var dirs []string
	walkLeaves(fsys, mustLayout(t, o), func(dir string, _ []fs.DirEntry) error { dirs = append(dirs, dir); return nil })
	if strings.Join(dirs, " ") != "0/2" {
		t.Fatalf("leaf dirs left: %v (want only the newest, 0/2)", dirs)
	}
}

func mustLayout(t testing.TB, o Options) *Layout {
	l, err := o.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConsumerWaitsForProducer(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?poll_interval=10ms&shard_depth=1&shard_width=2&naming_pattern={seq:04}")
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	p, _ := OpenProducer(fsys, o)
	defer p.Close()
	got := make(chan string, 1)
	go func() {
		var all []string
		for len(all) < 300 {
			ds, err := c.Read(context.Background(), 50)
			if err != nil {
				got <- err.Error()
				return
			}
			for _, d := range ds {
				all = append(all, string(d.Payload))
			}
			c.Ack(ds...)
		}
		got <- strings.Join(all, ",")
	}()
	var want []string
	for i := range 300 {
		s := fmt.Sprint(i)
		want = append(want, s)
		p.Write(context.Background(), []Message{{Payload: []byte(s)}})
	}
	select {
	case g := <-got:
		if g != strings.Join(want, ",") {
			t.Fatalf("order or loss: %s", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("consumer did not see the producer's chunks")
	}
}
