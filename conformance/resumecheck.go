package conformance

import (
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// The resume checks: a draining consumer records its ack frontier
// (acked_below) in its CONSUMER record and the next consumer starts there
// without listing (protocol section 5.7). A frontier that is stale, wrong
// or unreadable must never make a consumer skip a chunk.

func resumeChecks() []check {
	return []check{
		{"ResumeAfterClose", checkResumeAfterClose},
		{"ResumeFrontierAhead", checkResumeAhead},
		{"ResumeCorruptRecord", checkResumeCorrupt},
		{"ResumeFromProducerFloor", checkResumeFloor},
	}
}

// ackedBelow returns the frontier in the CONSUMER record; -1 when none.
func ackedBelow(t TB, fsys core.FS) int {
	t.Helper()
	h, _, err := core.ReadHolder(fsys, core.ConsumerFile)
	noErr(t, "ReadHolder(CONSUMER)", err)
	if h == nil || h.AckedBelow == nil {
		return -1
	}
	return int(*h.AckedBelow)
}

// drainPayloads drains fsys with options query and returns the payloads in
// delivery order.
func drainPayloads(t TB, e *env, fsys core.FS, query string) []string {
	t.Helper()
	o := spoolOptions(t, query)
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	var got []string
	for _, d := range drain(t, e, c, 16) {
		got = append(got, string(d.Payload))
	}
	return got
}

func numbered(from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, strconv.Itoa(i))
	}
	return s
}

// A consumer closed with deliveries in flight and nacked records the
// frontier below them; the next one delivers them first, then the rest,
// in order, and skips nothing.
func checkResumeAfterClose(t TB, e *env) {
	for _, query := range []string{"fsync=none", "fsync=none&shard_depth=2&shard_width=1&naming_pattern={seq:04}"} {
		fsys := e.newFS()
		produceAll(t, e, fsys, query, numbered(0, 700)...)
		c, err := core.OpenConsumer(fsys, spoolOptions(t, query))
		noErr(t, "OpenConsumer", err)
		for acked := 0; acked < 600; {
			ds := readBatch(t, e, c, 50, 10*time.Second)
			noErr(t, "Ack", c.Ack(ds...))
			acked += len(ds)
		}
		held := readBatch(t, e, c, 10, 10*time.Second) // 600..609
		noErr(t, "Nack", c.Nack(held[:4]...))
		noErr(t, "Ack", c.Ack(held[4:6]...)) // 604, 605: acked above the held ones
		noErr(t, "Close", c.Close())
		if f := ackedBelow(t, fsys); f != 600 {
			t.Errorf("%q: acked_below after Close = %d, want 600 (600..603 nacked, 606..609 in flight)", query, f)
		}
		got := drainPayloads(t, e, fsys, query)
		want := append(numbered(600, 604), numbered(606, 700)...)
		if !slices.Equal(got, want) {
			t.Errorf("%q: the next consumer delivered %v,\nwant %v", query, got, want)
		}
		if f := ackedBelow(t, fsys); f != 700 {
			t.Errorf("%q: acked_below after draining = %d, want 700", query, f)
		}
	}
}

// claimSlot returns a 512-byte claim record slot of role holding fields
// (JSON members without braces) and generation gen, as protocol section
// 7.2 writes it.
func claimSlot(role, fields string, gen int) []byte {
	line := fmt.Sprintf(`{"role":%q,"pid":4242,"host":"elsewhere","since":"2025-03-01T09:30:00Z",%s,"gen":%d`, role, fields, gen)
	line += fmt.Sprintf(`,"crc":"%08x"}`, crc32.Checksum([]byte(line), crc32.MakeTable(crc32.Castagnoli)))
	return []byte(line + strings.Repeat(" ", core.ClaimSlotSize-1-len(line)) + "\n")
}

// A frontier above chunks still on disk (written by hand, or by a buggy
// implementation) is not trusted when a chunk sits right below it or it is
// above the producer's high-water mark; when it cannot be told wrong, the
// chunks below it are still delivered, later.
func checkResumeAhead(t TB, e *env) {
	for _, tc := range []struct {
		name     string
		frontier int
		remove   []int // chunks removed by hand before the consumer starts
		want     []string
	}{
		{"chunk right below", 50, nil, numbered(0, 100)},
		{"above the producer's mark", 150, nil, numbered(0, 100)},
		{"above the largest number", 1 << 40, nil, numbered(0, 100)},
		{"gap right below", 50, []int{45, 46, 47, 48, 49}, append(numbered(50, 100), numbered(0, 45)...)},
	} {
		fsys := e.newFS()
		produceAll(t, e, fsys, "fsync=none", numbered(0, 100)...)
		l, _ := spoolOptions(t, "").Layout()
		for _, seq := range tc.remove {
			noErr(t, "Remove", fsys.Remove(l.Payload(uint64(seq))))
			noErr(t, "Remove", fsys.Remove(l.Sidecar(uint64(seq))))
		}
		writeFile(t, fsys, core.ConsumerFile, claimSlot("consumer", fmt.Sprintf(`"acked_below":%d`, tc.frontier), 1))
		if got := drainPayloads(t, e, fsys, "fsync=none"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: delivered %v,\nwant %v", tc.name, got, tc.want)
		}
	}
}

// A slot whose checksum does not match is not read: its frontier is not
// used, the other slot's is.
func checkResumeCorrupt(t TB, e *env) {
	fsys := e.newFS()
	produceAll(t, e, fsys, "fsync=none", numbered(0, 100)...)
	good := claimSlot("consumer", `"acked_below":0`, 1)
	bad := claimSlot("consumer", `"acked_below":60`, 2)
	bad[strings.Index(string(bad), `:60,`)+1] = '7' // 70, with the checksum of 60
	writeFile(t, fsys, core.ConsumerFile, append(good, bad...))
	if got := drainPayloads(t, e, fsys, "fsync=none"); !slices.Equal(got, numbered(0, 100)) {
		t.Errorf("with a corrupt slot holding acked_below 70: delivered %v, want 0..99 in order", got)
	}
}

// A producer records the lowest chunk number on disk when it opens
// (floor_seq); a consumer with no record of its own starts there, in
// order. A floor written by hand above a chunk is not trusted, and one
// that cannot be told wrong lets the chunks below it through, later.
func checkResumeFloor(t TB, e *env) {
	fsys := e.newFS()
	produceAll(t, e, fsys, "fsync=none", numbered(0, 100)...)
	c, err := core.OpenConsumer(fsys, spoolOptions(t, "fsync=none"))
	noErr(t, "OpenConsumer", err)
	for acked := 0; acked < 50; {
		ds := readBatch(t, e, c, 50-acked, 10*time.Second)
		noErr(t, "Ack", c.Ack(ds...))
		acked += len(ds)
	}
	noErr(t, "Close", c.Close())
	produceAll(t, e, fsys, "fsync=none", numbered(100, 110)...)
	h, _, err := core.ReadHolder(fsys, core.ProducerFile)
	noErr(t, "ReadHolder(PRODUCER)", err)
	if h == nil || h.FloorSeq == nil || *h.FloorSeq != 50 {
		t.Fatalf("PRODUCER record %+v: want floor_seq 50, the lowest chunk when the producer opened", h)
	}
	noErr(t, "Remove(CONSUMER)", fsys.Remove(core.ConsumerFile)) // a consumer with no record of its own
	if got := drainPayloads(t, e, fsys, "fsync=none"); !slices.Equal(got, numbered(50, 110)) {
		t.Errorf("from the producer's floor: delivered %v, want 50..109 in order", got)
	}

	l, _ := spoolOptions(t, "").Layout()
	for _, tc := range []struct {
		name   string
		remove []int
		want   []string
	}{
		{"chunk right below", nil, numbered(0, 100)},
		{"gap right below", []int{55, 56, 57, 58, 59}, append(numbered(60, 100), numbered(0, 55)...)},
	} {
		fsys := e.newFS()
		produceAll(t, e, fsys, "fsync=none", numbered(0, 100)...)
		for _, seq := range tc.remove {
			noErr(t, "Remove", fsys.Remove(l.Payload(uint64(seq))))
			noErr(t, "Remove", fsys.Remove(l.Sidecar(uint64(seq))))
		}
		noErr(t, "Remove(PRODUCER)", fsys.Remove(core.ProducerFile))
		writeFile(t, fsys, core.ProducerFile, claimSlot("producer", `"next_seq":100,"floor_seq":60`, 1))
		if got := drainPayloads(t, e, fsys, "fsync=none"); !slices.Equal(got, tc.want) {
			t.Errorf("floor_seq 60 by hand, %s: delivered %v,\nwant %v", tc.name, got, tc.want)
		}
	}
}
