package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Layer 2: the spool protocol on the FS under test.

func spoolChecks() []check {
	return []check{
		{"SpoolRoundTrip", checkRoundTrip},
		{"SidecarShape", checkSidecarShape},
		{"PayloadWithoutSidecar", checkPayloadWithoutSidecar},
		{"ForeignFilesIgnored", checkForeignFiles},
		{"FIFOAcrossShards", checkFIFOAcrossShards},
		{"ProducerConsumerConcurrent", checkConcurrent},
		{"NackRedeliversFirst", checkNack},
		{"AckDeletesPayloadThenSidecar", checkAckOrder},
		{"WriteProtocolOrder", checkWriteOrder},
		{"NonDestructiveRead", checkNonDestructive},
		{"DoneSentinel", checkDone},
		{"StopOnDone", checkStopOnDone},
		{"StaleDoneRemoved", checkStaleDone},
		{"SequenceNeverReused", checkSeqNeverReused},
		{"RecoveryAtOpen", checkRecovery},
		{"ClaimsEnforced", checkClaimsEnforced},
		{"SequenceExhausted", checkSeqExhausted},
		{"CorruptSidecar", checkCorruptSidecar},
	}
}

// opLog records the operations that go through a recording FS.
type opLog struct {
	mu  sync.Mutex
	ops []Op
}

func recording(inner core.FS) (core.FS, *opLog) {
	l := &opLog{}
	return wrapFS(inner, func(op Op) error {
		l.mu.Lock()
		l.ops = append(l.ops, op)
		l.mu.Unlock()
		return nil
	}), l
}

// take returns the operations recorded since the last take.
func (l *opLog) take() []Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

// find returns the index of the first op at or after from that matches, or -1.
func find(ops []Op, from int, match func(Op) bool) int {
	for i := max(from, 0); i < len(ops); i++ {
		if match(ops[i]) {
			return i
		}
	}
	return -1
}

func findLast(ops []Op, match func(Op) bool) int {
	for i := len(ops) - 1; i >= 0; i-- {
		if match(ops[i]) {
			return i
		}
	}
	return -1
}

func isOp(kind OpKind, name string) func(Op) bool {
	return func(o Op) bool { return o.Kind == kind && o.Name == name }
}

func isRename(from, to string) func(Op) bool {
	return func(o Op) bool { return o.Kind == OpRename && o.Name == from && o.To == to }
}

func checkRoundTrip(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i ^ i>>8)
	}
	msgs := []core.Message{
		{ID: "a", Payload: []byte("hello\n")},
		{ID: "b", Payload: nil}, // an empty payload is a valid message
		{ID: "c", Payload: []byte{0, 1, 2, 0xff, 0xfe, '\r', '\n', 0}},
		{ID: "d", Payload: big},
	}
	n, err := p.Write(e.ctx, msgs)
	if err != nil || n != len(msgs) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	noErr(t, "Producer.Close", p.Close())
	want := []string{"000000000.bin", "000000000.json", "000000001.bin", "000000001.json", "000000002.bin", "000000002.json",
		"000000003.bin", "000000003.json", "PRODUCER"}
	if got := tree(t, fsys); !slices.Equal(got, want) {
		t.Errorf("spool holds %q, want %q", got, want)
	}
	for i, m := range msgs {
		if got := mustRead(t, fsys, fmt.Sprintf("%09d.bin", i)); string(got) != string(m.Payload) {
			t.Errorf("payload file %d: %d bytes, not the %d written byte for byte", i, len(got), len(m.Payload))
		}
	}
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	checkDeliveries(t, drain(t, e, c, 3), msgs, true)
	if got := chunkFiles(tree(t, fsys)); len(got) != 0 {
		t.Errorf("after acking everything the spool still holds %q", got)
	}
}

var uuidV7 = regexp.MustCompile(`^[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$`)

func checkSidecarShape(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	msgs := []core.Message{
		{ID: "0195f4a0c7d77801a2b3c4d5e6f78901", Metadata: map[string]string{"content_type": "application/json", "source": "orders"}, Payload: []byte(`{"order":1}`)},
		{Payload: []byte("no id, no metadata")},
		{Metadata: map[string]string{"quote\"": "line\nbreak", "unicode": "é✓", "": "empty key"}, Payload: []byte("x")},
	}
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	if msgs[1].ID == "" || msgs[1].ID == msgs[2].ID {
		t.Errorf("Write did not give fresh ids to messages without one: %q %q", msgs[1].ID, msgs[2].ID)
	}
	for i, m := range msgs {
		raw := mustRead(t, fsys, fmt.Sprintf("%09d.json", i))
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatalf("sidecar %d is not a JSON object: %v\n%s", i, err, raw)
		}
		var keys []string
		for k := range top {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"message_id", "metadata"}) {
			t.Errorf("sidecar %d has keys %q, want exactly message_id and metadata", i, keys)
		}
		var id string
		if err := json.Unmarshal(top["message_id"], &id); err != nil {
			t.Errorf("sidecar %d: message_id is not a string: %s", i, top["message_id"])
		}
		if id != m.ID {
			t.Errorf("sidecar %d: message_id %q, want %q", i, id, m.ID)
		}
		if i > 0 && !uuidV7.MatchString(id) {
			t.Errorf("sidecar %d: generated id %q is not a UUIDv7 in 32 lowercase hex digits", i, id)
		}
		var md map[string]string
		if err := json.Unmarshal(top["metadata"], &md); err != nil || md == nil {
			t.Errorf("sidecar %d: metadata is not an object of strings: %s (%v)", i, top["metadata"], err)
		}
		want := m.Metadata
		if want == nil {
			want = map[string]string{}
		}
		if !equalMaps(md, want) {
			t.Errorf("sidecar %d: metadata %v, want %v", i, md, want)
		}
	}
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ds := drain(t, e, c, 10)
	for i := range msgs {
		if msgs[i].Metadata == nil {
			msgs[i].Metadata = map[string]string{}
		}
	}
	checkDeliveries(t, ds, msgs, true)
}

func checkPayloadWithoutSidecar(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	// Another program's chunks: payload only, finalized by a rename.
	writeFile(t, fsys, "000000003.bin.tmp", []byte("external 3"))
	noErr(t, "Rename", fsys.Rename("000000003.bin.tmp", "000000003.bin"))
	writeFile(t, fsys, "000000007.bin", []byte("external 7"))
	writeFile(t, fsys, "000000009.bin.tmp", []byte("still being written"))
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ds := drain(t, e, c, 10)
	var got []string
	for _, d := range ds {
		got = append(got, string(d.Payload))
		if d.MessageID != "" || d.Metadata == nil || len(d.Metadata) != 0 {
			t.Errorf("%s without sidecar: id %q metadata %#v, want \"\" and an empty map", d.Name, d.MessageID, d.Metadata)
		}
	}
	if !slices.Equal(got, []string{"external 3", "external 7"}) {
		t.Errorf("delivered %q, want the two finished payloads in order (not the .tmp)", got)
	}
	if ds[0].Seq != 3 || ds[1].Seq != 7 {
		t.Errorf("sequence numbers %d, %d, want 3, 7", ds[0].Seq, ds[1].Seq)
	}
	if !exists(fsys, "000000009.bin.tmp") {
		t.Errorf("the consumer touched a .tmp file")
	}
}

func checkForeignFiles(t TB, e *env) {
	fsys := e.newFS()
	foreign := []string{"notes.txt", "12.bin", "00000000a.bin", "000000001.txt", "000000001.bin.bak", "zzz/", "zzz/000000002.bin", "000000009.bin/", "000000009.bin/x"}
	for _, n := range foreign {
		if strings.HasSuffix(n, "/") {
			noErr(t, "Mkdir", fsys.Mkdir(strings.TrimSuffix(n, "/")))
		} else {
			writeFile(t, fsys, n, []byte("foreign"))
		}
	}
	writeFile(t, fsys, "000000004.json", []byte(`{"message_id":"orphan","metadata":{}}`))
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	if exists(fsys, "000000004.json") {
		t.Errorf("the producer kept a sidecar without a payload")
	}
	if p.NextSeq() != 5 {
		t.Errorf("NextSeq = %d, want 5 (after the orphan sidecar 4; directories and foreign names do not count)", p.NextSeq())
	}
	msgs := testMessages("f", 0, 3)
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	checkDeliveries(t, drain(t, e, c, 10), msgs, true)
	got := tree(t, fsys)
	for _, n := range foreign {
		if !slices.Contains(got, n) {
			t.Errorf("foreign %q was removed", n)
		}
	}
}

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
	if !exists(fsys, "2/4") {
		t.Errorf("the consumer removed the newest shard directory 2/4")
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
				id, ok := parsePayload(d.Payload)
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
			id, _ := parsePayload(d.Payload)
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
		dirSyncs := 0
		for _, op := range ops {
			if op.Kind == OpSyncDir {
				dirSyncs++
			}
		}
		for _, d := range ds {
			pi := find(ops, 0, isOp(OpRemove, nm.payloadName(d.Seq)))
			si := find(ops, 0, isOp(OpRemove, nm.sidecarName(d.Seq)))
			if pi < 0 || si < 0 {
				t.Fatalf("fsync=%s: Ack of %s did not remove both files (ops %v)", policy, d.Name, ops)
			}
			if si < pi {
				t.Errorf("fsync=%s: Ack removed the sidecar of %s before its payload", policy, d.Name)
			}
			// The payload's removal is durable before the sidecar goes: a
			// power cut must not leave a payload without its sidecar.
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
}

// checkWriteOrder checks, from the operations a Producer.Write makes, the
// write protocol: tmp names, sidecar before payload, syncs per policy.
func checkWriteOrder(t TB, e *env) {
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		for _, atomic := range []bool{true, false} {
			for _, layout := range []string{"", "&metadata_extension=", "&naming_pattern={seq:04}&shard_depth=2&shard_width=1"} {
				q := fmt.Sprintf("fsync=%s&atomic=%v%s", policy, atomic, layout)
				writeOrderCase(t, e, q)
			}
		}
	}
}

func writeOrderCase(t TB, e *env, q string) {
	t.Helper()
	inner := e.newFS()
	fsys, log := recording(inner)
	o := spoolOptions(t, q)
	nm := names{digits: 9, payload: ".bin", meta: o.MetadataExt}
	if o.ShardDepth > 0 {
		nm = names{digits: 4, depth: 2, width: 1, payload: ".bin", meta: o.MetadataExt}
	}
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	_, err = p.Write(e.ctx, testMessages("w", 0, 8)) // seq 0-7
	noErr(t, q+": Write", err)
	log.take()
	const first, count = 8, 5 // seq 8-12: crosses from shard 0/0 to 0/1
	_, err = p.Write(e.ctx, testMessages("w", first, count))
	noErr(t, q+": Write", err)
	ops := log.take()
	syncing := o.Fsync != core.FsyncNone
	_, hasSyncAll := inner.(core.FSSyncer)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format+"\nops: %v", append(append([]any{q}, args...), ops)...)
	}
	if !syncing {
		for _, op := range ops {
			if op.Kind == OpSync || op.Kind == OpSyncDir {
				fail("fsync=none made a %s call", op.Kind)
				return
			}
		}
	}
	// dataSynced: the bytes of name were made durable after its last write
	// and before index at.
	dataSynced := func(name string, at int) bool {
		w := findLast(ops[:at], isOp(OpWrite, name))
		if w < 0 {
			return true // empty payload
		}
		return find(ops[:at], w, func(o Op) bool {
			return o.Kind == OpSync && (o.Name == name || (o.Name == "." && hasSyncAll))
		}) >= 0
	}
	prevDone := -1
	for s := uint64(first); s < first+count; s++ {
		pay, side := nm.payloadName(s), nm.sidecarName(s)
		dir, _ := nm.base(s)
		if d := find(ops, 0, isOp(OpMkdir, dir)); d >= 0 && syncing {
			parent := "."
			if i := strings.LastIndexByte(dir, '/'); i >= 0 {
				parent = dir[:i]
			}
			into := find(ops, d, func(op Op) bool {
				return (op.Kind == OpRename && strings.HasPrefix(op.To, dir+"/")) ||
					(!o.Atomic && op.Kind == OpCreate && strings.HasPrefix(op.Name, dir+"/"))
			})
			if into < 0 {
				fail("nothing was put into the new shard directory %s", dir)
				return
			}
			if ds := find(ops, d, isOp(OpSyncDir, dir)); ds < 0 || ds > into {
				fail("new shard directory %s not synced before use", dir)
			}
			if ps := find(ops, d, isOp(OpSyncDir, parent)); ps < 0 || ps > into {
				fail("parent %s of new shard directory %s not synced before use", parent, dir)
			}
		}
		var commit int // index of the op that makes the chunk visible
		if o.Atomic {
			if find(ops, 0, isOp(OpCreate, pay)) >= 0 || (side != "" && find(ops, 0, isOp(OpCreate, side)) >= 0) {
				fail("atomic=true created a final name directly")
				return
			}
			commit = find(ops, 0, isRename(pay+core.TmpSuffix, pay))
			if commit < 0 {
				fail("payload %s was not renamed into place from %s", pay, pay+core.TmpSuffix)
				return
			}
			if syncing && !dataSynced(pay+core.TmpSuffix, commit) {
				fail("payload bytes of %s not synced before its rename", pay)
			}
			if side != "" {
				sr := find(ops, 0, isRename(side+core.TmpSuffix, side))
				if sr < 0 || sr > commit {
					fail("sidecar %s not renamed into place before its payload", side)
					return
				}
				if syncing && !dataSynced(side+core.TmpSuffix, sr) {
					fail("sidecar bytes of %s not synced before its rename", side)
				}
				if syncing && find(ops[:commit], sr, isOp(OpSyncDir, dir)) < 0 {
					fail("no SyncDir(%s) between the sidecar rename and the payload rename of %d", dir, s)
				}
			}
		} else {
			commit = find(ops, 0, isOp(OpCreate, pay))
			if commit < 0 {
				fail("atomic=false did not create %s", pay)
				return
			}
			if side != "" {
				if sc := find(ops, 0, isOp(OpCreate, side)); sc < 0 || sc > commit {
					fail("atomic=false: sidecar %s not written before its payload", side)
				}
			}
			for _, op := range ops {
				if op.Kind == OpRename || strings.HasSuffix(op.Name, core.TmpSuffix) {
					fail("atomic=false used a .tmp name or a rename: %v", op)
					return
				}
			}
			commit = findLast(ops, isOp(OpWrite, pay)) + 1
			if syncing && !dataSynced(pay, len(ops)) {
				fail("atomic=false: payload %s not synced", pay)
			}
		}
		if syncing {
			done := find(ops, commit, isOp(OpSyncDir, dir))
			if done < 0 {
				fail("no SyncDir(%s) after %d became visible", dir, s)
				return
			}
			if o.Fsync == core.FsyncChunk && o.Atomic && done < prevDone {
				fail("chunk %d committed before chunk %d", s, s-1)
			}
			if o.Fsync == core.FsyncChunk && o.Atomic && s+1 < first+count {
				// The next chunk starts only after this one is durable.
				nextPay := nm.payloadName(s + 1)
				if n := find(ops, 0, func(o Op) bool {
					return o.Kind == OpCreate && strings.HasPrefix(o.Name, strings.TrimSuffix(nextPay, ".bin"))
				}); n >= 0 && n < done {
					fail("fsync=chunk: chunk %d started before chunk %d was durable", s+1, s)
				}
			}
			prevDone = done
		}
	}
	if o.Fsync == core.FsyncBatch && o.Atomic && o.ShardDepth == 0 {
		n := 0
		for _, op := range ops {
			if op.Kind == OpSyncDir {
				n++
			}
		}
		want := 1
		if o.MetadataExt != "" {
			want = 2
		}
		if n != want {
			fail("fsync=batch: a batch made %d SyncDir calls, want %d (one after the sidecar renames, one after the payload renames)", n, want)
		}
	}
	for _, name := range tree(t, inner) {
		if strings.HasSuffix(name, core.TmpSuffix) {
			fail("%s left behind after Write returned", name)
		}
	}
}

func checkNonDestructive(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "naming_pattern={seq:03}&shard_depth=1&shard_width=1")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	msgs := testMessages("r", 0, 15)
	_, err = p.Write(e.ctx, msgs[:12])
	noErr(t, "Write", err)
	before := tree(t, fsys)
	ro := o
	ro.DrainOnRead = false
	ro.ExitWhenEmpty = true
	r, err := core.OpenConsumer(fsys, ro)
	noErr(t, "OpenConsumer(drain_on_read=false)", err)
	defer r.Close()
	// It takes no claim: a draining consumer can still open.
	dc, err := core.OpenConsumer(fsys, o)
	noErr(t, "a draining consumer next to a non-destructive one", err)
	noErr(t, "Close", dc.Close())
	ds := readBatch(t, e, r, 5, 10*time.Second)
	noErr(t, "Nack", r.Nack(ds[3:]...))
	noErr(t, "Ack", r.Ack(ds[:3]...))
	rest := drain(t, e, r, 4)
	checkDeliveries(t, append(ds[:3], rest...), msgs[:12], true)
	after := tree(t, fsys)
	before = slices.DeleteFunc(before, func(n string) bool { return n == core.ConsumerFile })
	after = slices.DeleteFunc(after, func(n string) bool { return n == core.ConsumerFile })
	if !slices.Equal(before, after) {
		t.Errorf("drain_on_read=false changed the spool:\nbefore %q\nafter  %q", before, after)
	}
	// Its cursor goes on with new chunks only.
	_, err = p.Write(e.ctx, msgs[12:])
	noErr(t, "Write", err)
	checkDeliveries(t, drain(t, e, r, 10), msgs[12:], true)
}

func checkDone(t TB, e *env) {
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		inner := e.newFS()
		fsys, log := recording(inner)
		o := spoolOptions(t, "emit_done=success&fsync="+string(policy))
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		_, err = p.Write(e.ctx, testMessages("d", 0, 3))
		noErr(t, "Write", err)
		if exists(fsys, core.DoneFile) {
			t.Fatalf("DONE exists before Close")
		}
		log.take()
		noErr(t, "Close", p.Close())
		ops := log.take()
		ri := find(ops, 0, isRename(core.DoneFile+core.TmpSuffix, core.DoneFile))
		if ri < 0 {
			t.Fatalf("fsync=%s: DONE was not renamed into place from DONE.tmp: %v", policy, ops)
		}
		if policy != core.FsyncNone {
			if find(ops[:ri], 0, isOp(OpSync, core.DoneFile+core.TmpSuffix)) < 0 {
				t.Errorf("fsync=%s: DONE.tmp not synced before its rename: %v", policy, ops)
			}
			if find(ops, ri, isOp(OpSyncDir, ".")) < 0 {
				t.Errorf("fsync=%s: no SyncDir(.) after DONE appeared: %v", policy, ops)
			}
		}
		rec, err := core.ReadDone(inner)
		noErr(t, "ReadDone", err)
		if rec.Status != "success" || rec.Count != 3 || rec.LastSeq == nil || *rec.LastSeq != 2 {
			t.Errorf("DONE = %+v, want success, count 3, last_seq 2", rec)
		}
		var raw map[string]any
		if err := json.Unmarshal(mustRead(t, inner, core.DoneFile), &raw); err != nil || raw["status"] != "success" {
			t.Errorf("DONE is not the JSON record: %v %v", raw, err)
		}
	}
	// emit_done decides when DONE is written.
	for _, tc := range []struct {
		emit   core.EmitDone
		cause  error
		status string // "" = no DONE
	}{
		{core.EmitNever, nil, ""},
		{core.EmitNever, errors.New("boom"), ""},
		{core.EmitSuccess, errors.New("boom"), ""},
		{core.EmitAlways, nil, "success"},
		{core.EmitAlways, errors.New("boom"), "failure"},
	} {
		fsys := e.newFS()
		p, err := core.OpenProducer(fsys, spoolOptions(t, "emit_done="+string(tc.emit)))
		noErr(t, "OpenProducer", err)
		_ = p.CloseWithError(tc.cause)
		rec, err := core.ReadDone(fsys)
		switch {
		case tc.status == "" && err == nil:
			t.Errorf("emit_done=%s, cause %v: DONE written", tc.emit, tc.cause)
		case tc.status == "" && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("emit_done=%s: ReadDone: %v", tc.emit, err)
		case tc.status != "" && err != nil:
			t.Errorf("emit_done=%s, cause %v: no DONE: %v", tc.emit, tc.cause, err)
		case tc.status != "" && rec.Status != tc.status:
			t.Errorf("emit_done=%s, cause %v: DONE status %q, want %q", tc.emit, tc.cause, rec.Status, tc.status)
		case tc.status == "failure" && !strings.Contains(rec.Error, "boom"):
			t.Errorf("DONE of a failed run does not say why: %+v", rec)
		}
	}
}

func checkStopOnDone(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "emit_done=success&stop_on_done=true")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("x", 0, 1))
	noErr(t, "Write", err)
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	noErr(t, "Ack", c.Ack(readBatch(t, e, c, 10, 10*time.Second)...))
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	_, err = c.Read(ctx, 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with an empty spool and no DONE = %v, want it to wait", err)
	}
	_, err = p.Write(e.ctx, testMessages("x", 1, 1))
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	ds := readBatch(t, e, c, 10, 10*time.Second)
	// DONE and nothing left on disk, but a delivery in flight: not the end.
	ended := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		ds, err := c.Read(ctx, 10)
		if err == nil {
			err = fmt.Errorf("Read returned %d deliveries", len(ds))
			if len(ds) == 1 && ds[0].Redelivered {
				err = c.Ack(ds...)
			}
		}
		ended <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-ended:
		t.Fatalf("Read returned (%v) while a delivery was in flight", err)
	default:
	}
	noErr(t, "Nack", c.Nack(ds...))
	noErr(t, "redelivery after DONE", <-ended)
	_, err = c.Read(e.ctx, 1)
	wantErr(t, "Read with DONE, nothing left and nothing in flight", err, core.ErrEnd)

	// The producer and the consumer racing: the consumer must not end
	// before it has everything the producer wrote before DONE.
	for round := range 5 {
		fsys := e.newFS()
		const total = 120
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		go func() {
			for i := 0; i < total; i += 8 {
				if _, err := p.Write(e.ctx, testMessages("y", i, min(8, total-i))); err != nil {
					break
				}
			}
			p.Close()
		}()
		ds := drain(t, e, c, 7)
		noErr(t, "Close", c.Close())
		if len(ds) != total {
			t.Fatalf("round %d: stop_on_done ended after %d of %d messages", round, len(ds), total)
		}
	}
}

func checkStaleDone(t TB, e *env) {
	inner := e.newFS()
	crash := crashModelOf(inner)
	fsys, log := recording(inner)
	writeFile(t, fsys, core.DoneFile, []byte(`{"status":"success","count":1}`))
	noErr(t, "SyncDir", fsys.SyncDir("."))
	if crash != nil && !exists(crash(e.cfg.Seed, 0), core.DoneFile) {
		t.Errorf("DONE is not there after a power cut, though SyncDir(.) returned after its creation")
	}
	o := spoolOptions(t, "stop_on_done=true")
	log.take()
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	ops := log.take()
	if exists(fsys, core.DoneFile) {
		t.Fatalf("a producer opened without removing the stale DONE")
	}
	ri := find(ops, 0, isOp(OpRemove, core.DoneFile))
	if ri < 0 || find(ops, ri, isOp(OpSyncDir, ".")) < 0 {
		t.Errorf("the stale DONE was not removed durably (Remove then SyncDir(.)) at open: %v", ops)
	}
	if crash != nil {
		if exists(crash(e.cfg.Seed, 0), core.DoneFile) {
			t.Errorf("after a power cut right after OpenProducer, the stale DONE is back")
		}
	}
	// A stop_on_done consumer now waits for the new producer.
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a stop_on_done consumer with a new producer running: Read = %v, want to wait", err)
	}
}

func checkSeqNeverReused(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	do := o
	do.ExitWhenEmpty = true
	ro := do
	ro.DrainOnRead = false
	write := func(prefix string, n int) (first uint64) {
		t.Helper()
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		first = p.NextSeq()
		_, err = p.Write(e.ctx, testMessages(prefix, 0, n))
		noErr(t, "Write", err)
		noErr(t, "Close", p.Close())
		return first
	}
	if s := write("a", 3); s != 0 {
		t.Errorf("a fresh spool starts at %d", s)
	}
	r, err := core.OpenConsumer(fsys, ro)
	noErr(t, "OpenConsumer(drain_on_read=false)", err)
	defer r.Close()
	if ds := drain(t, e, r, 10); len(ds) != 3 {
		t.Fatalf("reader got %d", len(ds))
	}
	c, err := core.OpenConsumer(fsys, do)
	noErr(t, "OpenConsumer", err)
	if ds := drain(t, e, c, 10); len(ds) != 3 {
		t.Fatalf("consumer got %d", len(ds))
	}
	noErr(t, "Close", c.Close())
	if left := chunkFiles(tree(t, fsys)); len(left) != 0 {
		t.Fatalf("not drained: %q", left)
	}
	// Fully drained: the producer must still continue after 2.
	if s := write("b", 2); s != 3 {
		t.Errorf("after a full drain a new producer starts at %d, want 3", s)
	}
	ds := drain(t, e, r, 10)
	if len(ds) != 2 || ds[0].Seq != 3 {
		t.Errorf("the non-destructive reader's cursor missed the new chunks: got %d deliveries", len(ds))
	}
	// A failed batch burns its numbers.
	ff := NewFaultFS(fsys)
	ob := o
	ob.Fsync = core.FsyncBatch
	p, err := core.OpenProducer(ff.FS(), ob)
	noErr(t, "OpenProducer", err)
	ff.Fail(OpRename, 0, syscall.EIO)
	if _, err := p.Write(e.ctx, testMessages("c", 0, 3)); !errors.Is(err, ErrInjected) {
		t.Fatalf("Write with a failing rename = %v, want the injected error", err)
	}
	_, err = p.Write(e.ctx, testMessages("d", 0, 1))
	if err == nil {
		if p.NextSeq() != 9 || !exists(fsys, "000000008.bin") {
			t.Errorf("after a failed batch of 3 at 5, the next message got %d, want 8", p.NextSeq()-1)
		}
	} else if !errors.Is(err, core.ErrProducerFailed) {
		t.Errorf("Write after a failed batch: %v", err)
	}
	noErr(t, "Close", p.Close())
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	if p.NextSeq() < 9 {
		t.Errorf("a producer reopened after a failed batch of 5-7 and a chunk at 8 starts at %d: numbers reused", p.NextSeq())
	}
	noErr(t, "Close", p.Close())
}

func checkRecovery(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "shard_depth=1&shard_width=3")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	msgs := testMessages("v", 0, 2)
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	// What a producer killed mid-batch leaves, plus foreign files.
	noErr(t, "Mkdir", fsys.Mkdir("000/sub"))
	leftovers := map[string]string{
		"000/000002.json":     `{"message_id":"x","metadata":{}}`,
		"000/000003.json.tmp": `{"mess`,
		"000/000003.bin.tmp":  "par",
		"000/000017.bin.tmp":  "",
		"DONE.tmp":            "{",
	}
	for n, data := range leftovers {
		writeFile(t, fsys, n, []byte(data))
	}
	writeFile(t, fsys, "000/keep.txt", []byte("foreign"))
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	for n := range leftovers {
		if n != "DONE.tmp" && exists(fsys, n) {
			t.Errorf("%s survived recovery", n)
		}
	}
	if !exists(fsys, "000/keep.txt") || !exists(fsys, "000/sub") {
		t.Errorf("recovery removed foreign entries")
	}
	if p.NextSeq() < 18 {
		t.Errorf("NextSeq = %d: the number of a leftover (17) could be reused", p.NextSeq())
	}
	more := testMessages("v", 2, 2)
	_, err = p.Write(e.ctx, more)
	noErr(t, "Write after recovery", err)
	noErr(t, "Close", p.Close())
	do := o
	do.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, do)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	checkDeliveries(t, drain(t, e, c, 10), append(msgs, more...), true)
}

func checkClaimsEnforced(t TB, e *env) {
	e.skipIfSharedLocks(t)
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = core.OpenProducer(fsys, o)
	var ce *core.ClaimError
	if !errors.Is(err, core.ErrClaimed) || !errors.As(err, &ce) {
		t.Fatalf("second producer: %v, want a *core.ClaimError", err)
	}
	host, _ := os.Hostname()
	if ce.Holder == nil || ce.Holder.PID != os.Getpid() || ce.Holder.Role != "producer" {
		t.Errorf("ClaimError.Holder = %+v, want this process", ce.Holder)
	} else if host != "" && ce.Holder.Host != host {
		t.Errorf("ClaimError.Holder.Host = %q, want %q", ce.Holder.Host, host)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), core.ProducerFile) {
		t.Errorf("the error does not name the holder and the claim: %v", err)
	}
	h, held, err := core.ReadHolder(fsys, core.ProducerFile)
	if err != nil || !held || h == nil || h.PID != os.Getpid() {
		t.Errorf("ReadHolder(PRODUCER) = %+v, held %v, %v", h, held, err)
	}
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "a consumer next to the producer", err)
	_, err = core.OpenConsumer(fsys, o)
	if !errors.Is(err, core.ErrClaimed) || !strings.Contains(err.Error(), core.ConsumerFile) {
		t.Errorf("second draining consumer: %v, want ErrClaimed naming CONSUMER", err)
	}
	noErr(t, "Producer.Close", p.Close())
	noErr(t, "Consumer.Close", c.Close())
	if _, held, _ := core.ReadHolder(fsys, core.ProducerFile); held {
		t.Errorf("PRODUCER still held after Close")
	}
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer after Close", err)
	noErr(t, "Close", p.Close())
	c, err = core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer after Close", err)
	noErr(t, "Close", c.Close())
	if !exists(fsys, core.ProducerFile) || !exists(fsys, core.ConsumerFile) {
		t.Errorf("claim files must stay in place after Close")
	}
	// claims=false takes none.
	nc := o
	nc.Claims = false
	p1, err := core.OpenProducer(fsys, nc)
	noErr(t, "OpenProducer(claims=false)", err)
	noErr(t, "Close", p1.Close())
}

func checkSeqExhausted(t TB, e *env) {
	for _, q := range []string{"naming_pattern={seq:02}", "naming_pattern={seq:02}&shard_depth=1&shard_width=1&fsync=batch"} {
		fsys := e.newFS()
		o := spoolOptions(t, q)
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		for i := 0; i < 90; i += 30 {
			_, err := p.Write(e.ctx, testMessages("e", i, 30))
			noErr(t, q+": Write", err)
		}
		n, err := p.Write(e.ctx, testMessages("e", 90, 11))
		if n != 0 || !errors.Is(err, core.ErrSequenceExhausted) {
			t.Errorf("%s: a batch of 11 from 90 = %d, %v, want 0 and ErrSequenceExhausted", q, n, err)
		} else if !strings.Contains(err.Error(), "99") {
			t.Errorf("%s: the error does not say the limit: %v", q, err)
		}
		n, err = p.Write(e.ctx, testMessages("e", 90, 10))
		if n != 10 || err != nil {
			t.Errorf("%s: the last 10 numbers: %d, %v", q, n, err)
		}
		_, err = p.Write(e.ctx, testMessages("e", 100, 1))
		wantErr(t, q+": Write past 99", err, core.ErrSequenceExhausted)
		noErr(t, "Close", p.Close())
		p, err = core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		_, err = p.Write(e.ctx, testMessages("e", 100, 1))
		wantErr(t, q+": Write past 99 after reopening", err, core.ErrSequenceExhausted)
		noErr(t, "Close", p.Close())
		for _, n := range tree(t, fsys) {
			if strings.Contains(n, "100") || strings.HasPrefix(n, "1/00") || strings.HasSuffix(n, ".tmp") {
				t.Errorf("%s: %s exists: the producer wrapped or widened", q, n)
			}
		}
		do := o
		do.ExitWhenEmpty = true
		c, err := core.OpenConsumer(fsys, do)
		noErr(t, "OpenConsumer", err)
		checkDeliveries(t, drain(t, e, c, 50), testMessages("e", 0, 100), true)
		noErr(t, "Close", c.Close())
	}
}

func checkCorruptSidecar(t TB, e *env) {
	bad := []string{"{not json", `{"message_id": 5, "metadata": {}}`, `{"message_id": "x", "metadata": {"k": 1}}`,
		`{"message_id": "x", "metadata": {}} trailing`, "", "[]", `{"message_id": "x", "metadata": "no"}`}
	for _, content := range bad {
		fsys := e.newFS()
		o := spoolOptions(t, "shard_depth=1&shard_width=2")
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		msgs := testMessages("b", 0, 3)
		_, err = p.Write(e.ctx, msgs)
		noErr(t, "Write", err)
		noErr(t, "Close", p.Close())
		side := "00/0000001.json"
		noErr(t, "Remove", fsys.Remove(side))
		writeFile(t, fsys, side, []byte(content))
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		var got []*core.Delivery
		for range 3 {
			ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
			ds, rerr := c.Read(ctx, 10)
			cancel()
			if rerr != nil {
				err = rerr
				break
			}
			got = append(got, ds...)
			noErr(t, "Ack", c.Ack(ds...))
		}
		var se *core.SidecarError
		if !errors.Is(err, core.ErrBadSidecar) || !errors.As(err, &se) {
			t.Errorf("sidecar %q: Read = %v, want a *core.SidecarError", content, err)
		} else if se.Path != side || !strings.Contains(err.Error(), side) {
			t.Errorf("sidecar %q: the error does not name %s: %v", content, side, err)
		}
		if len(got) != 1 || string(got[0].Payload) != string(msgs[0].Payload) {
			t.Errorf("sidecar %q: delivered %d before stopping, want only the chunk before it", content, len(got))
		}
		for _, n := range []string{side, "00/0000001.bin", "00/0000002.bin", "00/0000002.json"} {
			if !exists(fsys, n) {
				t.Errorf("sidecar %q: %s was deleted", content, n)
			}
		}
		noErr(t, "Close", c.Close())
		o.BadSidecar = core.BadSidecarDeliver
		o.ExitWhenEmpty = true
		c, err = core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer(bad_sidecar=deliver)", err)
		ds := drain(t, e, c, 10)
		noErr(t, "Close", c.Close())
		if len(ds) != 2 || string(ds[0].Payload) != string(msgs[1].Payload) || len(ds[0].Metadata) != 0 || ds[1].MessageID != msgs[2].ID {
			t.Errorf("sidecar %q with bad_sidecar=deliver: got %d deliveries, first metadata %v", content, len(ds), ds)
		}
	}
	// Unknown keys are fine.
	fsys := e.newFS()
	writeFile(t, fsys, "000000000.json", []byte(`{"message_id":"k","metadata":{"a":"b"},"extra":[1,2]}`))
	writeFile(t, fsys, "000000000.bin", []byte("p"))
	o := spoolOptions(t, "")
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ds := drain(t, e, c, 10)
	if len(ds) != 1 || ds[0].MessageID != "k" || ds[0].Metadata["a"] != "b" {
		t.Errorf("a sidecar with an extra key: %+v", ds)
	}
}
