package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Spool checks of delivery order: FIFO across shard directories, a
// producer and a consumer at once, nack redelivery, and the order in which
// an ack deletes files (protocol section 5).

func checkFIFOAcrossShards(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "naming_pattern={seq:03}&shard_depth=2&shard_width=1")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	msgs := testMessages("s", 0, 250)
	rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 2))
	for i := 0; i < len(msgs); {
		n := min(1+rng.IntN(13), len(msgs)-i)
		if k, err := p.Write(e.ctx, msgs[i:i+n]); err != nil || k != n {
			t.Fatalf("Write at %d = %d, %v", i, k, err)
		}
		i += n
	}
	noErr(t, "Close", p.Close())
	nm := names{digits: 3, depth: 2, width: 1, payload: ".bin", meta: ".json"}
	for _, s := range []uint64{0, 9, 10, 99, 100, 249} {
		if !exists(fsys, nm.payloadName(s)) || !exists(fsys, nm.sidecarName(s)) {
			t.Errorf("message %d is not at %s", s, nm.payloadName(s))
		}
	}
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	var ds []*core.Delivery
	for {
		batch, err := c.Read(e.ctx, 1+rng.IntN(17))
		if errors.Is(err, core.ErrEnd) {
			break
		}
		noErr(t, "Read", err)
		ds = append(ds, batch...)
		noErr(t, "Ack", c.Ack(batch...))
	}
	checkDeliveries(t, ds, msgs, true)
	// Empty leaf shard directories go once a later one exists (protocol
	// 5.5); the newest stays for the producer.
	var leaves []string
	for _, n := range tree(t, fsys) {
		if strings.HasSuffix(n, "/") && strings.Count(n, "/") == 2 {
			leaves = append(leaves, n)
		}
	}
	if !slices.Equal(leaves, []string{"2/4/"}) {
		t.Errorf("leaf shard directories after draining: %q, want only the newest, 2/4", leaves)
	}
	if left := chunkFiles(tree(t, fsys)); len(left) != 0 {
		t.Errorf("after draining: %q left", left)
	}
}

// checkConcurrent runs a producer and a consumer at once, flat and sharded
// (where the consumer removes shard directories the producer may be about
// to use), with nacks.
func checkConcurrent(t TB, e *env) {
	for _, q := range []string{"", "naming_pattern={seq:03}&shard_depth=2&shard_width=1"} {
		fsys := e.newFS()
		o := spoolOptions(t, strings.TrimPrefix(q+"&fsync=batch", "&"))
		const total = 300
		msgs := testMessages("c", 0, total)
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		perr := make(chan error, 1)
		go func() {
			rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 3))
			for i := 0; i < total; {
				n := min(1+rng.IntN(9), total-i)
				if k, err := p.Write(e.ctx, msgs[i:i+n]); err != nil || k != n {
					perr <- fmt.Errorf("Write at %d = %d, %v", i, k, err)
					return
				}
				i += n
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				}
			}
			perr <- p.Close()
		}()
		rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 4))
		next := 0
		var nacked *core.Delivery
		for next < total {
			ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
			ds, err := c.Read(ctx, 1+rng.IntN(16))
			cancel()
			if err != nil {
				select {
				case perr := <-perr:
					t.Logf("producer ended: %v", perr)
				default:
					t.Logf("producer still running")
				}
				t.Fatalf("%s: Read after %d messages (%d in flight): %v; spool holds %q", q, next, c.InFlight(), err, tree(t, fsys))
			}
			if nacked != nil && (ds[0].Name != nacked.Name || !ds[0].Redelivered) {
				t.Fatalf("%s: after a nack of %s, Read returned %s first", q, nacked.Name, ds[0].Name)
			}
			nacked = nil
			for i, d := range ds {
				id, ok := ParsePayload(d.Payload)
				if !ok || id != msgs[next].ID {
					t.Fatalf("%s: delivery %d is %q (whole: %v), want %q: order or content broken", q, next, id, ok, msgs[next].ID)
				}
				if rng.IntN(10) == 0 {
					noErr(t, "Ack", c.Ack(ds[:i]...))
					noErr(t, "Nack", c.Nack(ds[i:]...))
					nacked = d
					break
				}
				next++
			}
			if nacked == nil {
				noErr(t, "Ack", c.Ack(ds...))
			}
		}
		if err := <-perr; err != nil {
			t.Fatalf("%s: producer: %v", q, err)
		}
		noErr(t, "Consumer.Close", c.Close())
		if left := chunkFiles(tree(t, fsys)); len(left) != 0 {
			t.Errorf("%s: after draining: %q left", q, left)
		}
	}
}

func checkNack(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	msgs := testMessages("n", 0, 6)
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	pay := func(ds []*core.Delivery) string {
		var s []string
		for _, d := range ds {
			id, _ := ParsePayload(d.Payload)
			if d.Redelivered {
				id += "*"
			}
			s = append(s, id)
		}
		return strings.Join(s, ",")
	}
	ds := readBatch(t, e, c, 3, 10*time.Second) // 0 1 2
	noErr(t, "Nack", c.Nack(ds[2], ds[1]))
	noErr(t, "Ack", c.Ack(ds[0]))
	if !exists(fsys, "000000001.bin") || !exists(fsys, "000000002.json") {
		t.Fatalf("a nack deleted the chunk")
	}
	ds = readBatch(t, e, c, 2, 10*time.Second)
	if got := pay(ds); got != "n000001*,n000002*" {
		t.Fatalf("after nacking 2 then 1, Read gave %s, want n000001*,n000002* (redelivered first, in order)", got)
	}
	noErr(t, "Ack", c.Ack(ds[0]))
	ds2 := readBatch(t, e, c, 1, 10*time.Second)
	if got := pay(ds2); got != "n000003" {
		t.Fatalf("next Read gave %s, want n000003", got)
	}
	noErr(t, "Nack", c.Nack(ds[1]))
	ds = readBatch(t, e, c, 5, 10*time.Second)
	if got := pay(ds); got != "n000002*,n000004,n000005" {
		t.Fatalf("after a late nack, Read gave %s, want n000002*,n000004,n000005", got)
	}
	wantErr(t, "a double Ack", c.Ack(ds2[0], ds2[0]), core.ErrUnknownDelivery)
	// Close with deliveries in flight: the next consumer gets them first.
	noErr(t, "Close", c.Close())
	c, err = core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer again", err)
	defer c.Close()
	ds = readBatch(t, e, c, 10, 10*time.Second)
	if got := pay(ds); got != "n000002,n000004,n000005" {
		t.Fatalf("after Close with deliveries in flight, a new consumer read %s, want n000002,n000004,n000005", got)
	}
	wantErr(t, "Nack of an unknown delivery", c.Nack(&core.Delivery{Name: "000000000.bin"}), core.ErrUnknownDelivery)
}

func checkAckOrder(t TB, e *env) {
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		ackOrderCase(t, e, policy)
	}
}

// ackOrderCase acks all but the first of 103 messages over two shard
// directories and checks the operations the Ack made under policy.
func ackOrderCase(t TB, e *env, policy core.FsyncPolicy) {
	inner := e.newFS()
	fsys, log := recording(inner)
	o := spoolOptions(t, "fsync="+string(policy)+"&naming_pattern={seq:04}&shard_depth=1&shard_width=2")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("a", 0, 103))
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	ds := readBatch(t, e, c, 4, 10*time.Second)
	skip := ds[0]
	for len(ds) < 6 || ds[len(ds)-1].Seq < 100 {
		more := readBatch(t, e, c, 50, 10*time.Second)
		ds = append(ds, more...)
	}
	ds = ds[1:] // keep one in flight, acked last
	log.take()
	noErr(t, "Ack", c.Ack(ds...))
	ops := log.take()
	nm := names{digits: 4, depth: 1, width: 2, payload: ".bin", meta: ".json"}
	for _, d := range ds {
		ackRemovals(t, policy, ops, nm, d)
	}
	dirSyncs := 0
	for _, op := range ops {
		if op.Kind == OpSyncDir {
			dirSyncs++
		}
	}
	if policy == core.FsyncBatch && dirSyncs != 2 {
		t.Errorf("fsync=batch: an Ack spanning 2 directories made %d SyncDir calls, want 2", dirSyncs)
	}
	if policy == core.FsyncNone && dirSyncs != 0 {
		t.Errorf("fsync=none: Ack made %d SyncDir calls, want none", dirSyncs)
	}
	for _, d := range ds {
		if exists(inner, d.Name) {
			t.Errorf("fsync=%s: %s still exists after its Ack", policy, d.Name)
		}
	}
	if !exists(inner, skip.Name) {
		t.Errorf("fsync=%s: %s, still in flight, was deleted", policy, skip.Name)
	}
	noErr(t, "Close", c.Close())
}

// ackRemovals checks, in the operations of an Ack, that d's payload was
// removed before its sidecar and, unless fsync=none, that the removal was
// made durable in between: a power cut must not leave a payload without
// its sidecar.
func ackRemovals(t TB, policy core.FsyncPolicy, ops []Op, nm names, d *core.Delivery) {
	t.Helper()
	pi := find(ops, 0, isOp(OpRemove, nm.payloadName(d.Seq)))
	si := find(ops, 0, isOp(OpRemove, nm.sidecarName(d.Seq)))
	if pi < 0 || si < 0 {
		t.Fatalf("fsync=%s: Ack of %s did not remove both files (ops %v)", policy, d.Name, ops)
	}
	if si < pi {
		t.Errorf("fsync=%s: Ack removed the sidecar of %s before its payload", policy, d.Name)
	}
	dir := strings.Split(d.Name, "/")[0]
	syncAt := find(ops, pi, isOp(OpSyncDir, dir))
	switch policy {
	case core.FsyncChunk:
		next := find(ops, pi+1, func(o Op) bool { return o.Kind == OpRemove && strings.HasSuffix(o.Name, ".bin") })
		if syncAt < 0 || syncAt > si || (next >= 0 && syncAt > next) {
			t.Errorf("fsync=chunk: no SyncDir(%s) between removing %s and its sidecar", dir, d.Name)
		}
	case core.FsyncBatch:
		if syncAt < 0 || syncAt > si {
			t.Errorf("fsync=batch: no SyncDir(%s) between removing %s and its sidecar", dir, d.Name)
		}
	}
}
