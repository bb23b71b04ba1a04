package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Layer 2: the spool protocol on the FS under test. This file has the list
// and the checks of what a message becomes on disk (round trip, sidecars,
// foreign files, non-destructive reads); ordercheck.go, writeordercheck.go,
// donecheck.go and claimcheck.go have the others, by topic.

func spoolChecks() []check {
	return []check{
		{"SpoolRoundTrip", checkRoundTrip},
		{"SidecarShape", checkSidecarShape},
		{"FilesOfChangingSize", checkChangingSizes},
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
		{"SpoolBounds", checkBounds},
		{"SpoolWalksStopOnCancel", checkWalksStopOnCancel},
		{"SpoolMessageIDs", checkMessageIDs},
	}
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
	// Not "12.bin": digits and the payload extension with another digit
	// count are chunks of another layout, which a consumer refuses
	// (protocol section 2.5).
	foreign := []string{"notes.txt", "00000000a.bin", "000000001.txt", "000000001.bin.bak", "zzz/", "zzz/000000002.bin", "000000009.bin/", "000000009.bin/x"}
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

// checkChangingSizes writes payloads and sidecars whose sizes jump up and
// down across the sizes a consumer may guess from the last file it read
// (empty, a few bytes, the 8 and 16 KiB of core's probe, 1 MiB), and reads
// them back one at a time and in batches: every payload, id and metadata
// map comes back whole, whatever the guess was.
func checkChangingSizes(t TB, e *env) {
	// A large file follows a small one of its kind, so that the guess is
	// wrong; payloads and sidecars take turns at that.
	sizes := []int{3, 20000, 5, 0, 8 << 10, 7, 16<<10 - 40, 1, 16 << 10, 9, 1 << 20, 7}
	sides := []int{0, 10, 3000, 600, 0, 40, 2, 5000, 5, 1100, 2, 9}
	for _, limit := range []int{1, 3} {
		fsys := e.newFS()
		o := spoolOptions(t, "")
		o.ExitWhenEmpty = true
		var msgs []core.Message
		for i, n := range sizes {
			id := fmt.Sprint("m", i)
			md := map[string]string{"pad": strings.Repeat("x", sides[i])}
			msgs = append(msgs, core.Message{ID: id, Metadata: md, Payload: MakePayload(id, n)})
		}
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		if _, err := p.Write(e.ctx, msgs); err != nil {
			t.Fatalf("Write: %v", err)
		}
		noErr(t, "Producer.Close", p.Close())
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		checkDeliveries(t, drain(t, e, c, limit), msgs, true)
		noErr(t, "Consumer.Close", c.Close())
	}
}

// checkMessageIDs: core.RecentMessageIDs gives, oldest first, the id in
// the sidecar of each of the n newest committed chunks, flat and across
// shard directories, and none of a chunk whose sidecar is gone; asked for
// more than the spool holds, it gives every id.
func checkMessageIDs(t TB, e *env) {
	for _, layout := range []string{"", "shard_depth=2&shard_width=1"} {
		fsys := e.newFS()
		o := spoolOptions(t, layout)
		msgs := make([]core.Message, 25) // sharded: three leaf directories
		for i := range msgs {
			msgs[i] = core.Message{ID: fmt.Sprintf("id-%d", i), Payload: []byte("x")}
		}
		writeAll(t, e, fsys, o, msgs)
		l, err := o.Layout()
		noErr(t, "Layout", err)
		noErr(t, "Remove", fsys.Remove(l.Sidecar(7)))
		idsFrom := func(from int) []string {
			var ids []string
			for i := from; i < len(msgs); i++ {
				if i != 7 {
					ids = append(ids, msgs[i].ID)
				}
			}
			return ids
		}
		for _, tc := range []struct{ n, from int }{{100, 0}, {25, 0}, {18, 7}, {12, 13}, {1, 24}} {
			got, err := core.RecentMessageIDs(e.ctx, fsys, o, tc.n)
			noErr(t, "RecentMessageIDs", err)
			if want := idsFrom(tc.from); !slices.Equal(got, want) {
				t.Errorf("layout %q: RecentMessageIDs(%d) = %v; want %v", layout, tc.n, got, want)
			}
		}
	}
}
