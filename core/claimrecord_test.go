package core

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// bufClaim is a Claim over a byte slice: WriteAt in place, no truncation.
type bufClaim struct{ b []byte }

func (c *bufClaim) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(c.b) {
		c.b = append(c.b, make([]byte, end-len(c.b))...)
	}
	return copy(c.b[off:], p), nil
}
func (c *bufClaim) Sync() error    { return nil }
func (c *bufClaim) Release() error { return nil }

func testHolder(pid int, next uint64) Holder {
	return Holder{Role: "producer", PID: pid, Host: "ingest-1", Since: time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC), NextSeq: &next}
}

func TestClaimSlotFormat(t *testing.T) {
	slot, err := encodeClaimSlot(testHolder(4242, 1026), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role":"producer","pid":4242,"host":"ingest-1","since":"2025-03-01T09:30:00Z","next_seq":1026,"gen":7,"crc":"`
	if len(slot) != ClaimSlotSize || !bytes.HasPrefix(slot, []byte(want)) || bytes.IndexByte(slot, '\n') != ClaimSlotSize-1 {
		t.Fatalf("slot %q: want %d bytes, one line starting %s", slot, ClaimSlotSize, want)
	}
	// Any JSON parser reads the line: it is one object.
	var m map[string]any
	if err := json.Unmarshal(slot, &m); err != nil || m["next_seq"] != float64(1026) || m["gen"] != float64(7) {
		t.Fatalf("slot does not parse as plain JSON: %v %v", m, err)
	}
	h, gen, ok := decodeClaimSlot(slot)
	if !ok || gen != 7 || h.PID != 4242 || *h.NextSeq != 1026 || !h.Since.Equal(testHolder(0, 0).Since) {
		t.Fatalf("decode: %+v gen %d ok %v", h, gen, ok)
	}
	// Every change of a byte before the padding is caught.
	end := len(bytes.TrimRight(slot, " \n"))
	for i := range end {
		bad := bytes.Clone(slot)
		bad[i] ^= 0x01
		if _, _, ok := decodeClaimSlot(bad); ok {
			t.Errorf("flipping a bit of byte %d (%q) left the slot valid", i, slot[i])
		}
	}
	long := testHolder(1, 1)
	long.Host = strings.Repeat("h", 1000)
	if slot, err := encodeClaimSlot(long, 1<<63); err != nil || len(slot) != ClaimSlotSize {
		t.Errorf("a long host name: %d bytes, %v", len(slot), err)
	}
}

func TestParseClaimFile(t *testing.T) {
	slot := func(pid int, next, gen uint64) []byte {
		b, err := encodeClaimSlot(testHolder(pid, next), gen)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	blank := bytes.Repeat([]byte{' '}, ClaimSlotSize)
	legacy := []byte(`{"role":"producer","pid":4242,"host":"ingest-1","since":"2025-03-01T09:30:00Z","next_seq":1026}` + "\n")
	legacyPadded := append(append(bytes.Clone(legacy), make([]byte, ClaimSlotSize-len(legacy))...), slot(9, 2000, 1)...)
	torn := slot(9, 2000, 1)
	copy(torn[80:], "XXXX")
	for _, tc := range []struct {
		name     string
		file     []byte
		wantPID  int
		wantNext uint64
		wantSlot int // the slot the next record goes to
		wantGen  uint64
	}{
		{"empty", nil, 0, 0, 1, 1},
		{"not JSON", []byte("hello\n"), 0, 0, 1, 1},
		{"an empty object", []byte("{}\n"), 0, 0, 1, 1},
		{"no pid", []byte(`{"role":"producer","next_seq":5}`), 0, 0, 1, 1},
		{"legacy record", legacy, 4242, 1026, 1, 1},
		{"legacy record without newline", bytes.TrimSpace(legacy), 4242, 1026, 1, 1},
		{"legacy record and a slot 1 written by an upgrade", legacyPadded, 9, 2000, 0, 2},
		{"legacy record and a torn slot 1", append(append(bytes.Clone(legacy), make([]byte, ClaimSlotSize-len(legacy))...), torn...), 4242, 1026, 1, 1},
		{"slot 0 only", slot(1, 10, 1), 1, 10, 1, 2},
		{"slot 0 and a short slot 1", append(slot(1, 10, 1), slot(2, 20, 2)[:100]...), 1, 10, 1, 2},
		{"slot 1 newer", append(slot(1, 10, 3), slot(2, 20, 4)...), 2, 20, 0, 5},
		{"slot 0 newer", append(slot(1, 10, 6), slot(2, 20, 5)...), 1, 10, 1, 7},
		{"slot 1 torn", append(slot(1, 10, 3), torn...), 1, 10, 1, 4},
		{"slot 0 torn", append(torn, slot(2, 20, 4)...), 2, 20, 0, 5},
		{"slot 0 blank", append(blank, slot(2, 20, 1)...), 2, 20, 0, 2},
		{"both torn", append(bytes.Clone(torn), torn...), 0, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, at := parseClaimFile(tc.file)
			switch {
			case tc.wantPID == 0 && h != nil:
				t.Errorf("got record %+v, want none", h)
			case tc.wantPID != 0 && (h == nil || h.PID != tc.wantPID || h.NextSeq == nil || *h.NextSeq != tc.wantNext):
				t.Errorf("got record %+v, want pid %d next_seq %d", h, tc.wantPID, tc.wantNext)
			}
			if at.next != tc.wantSlot || at.gen != tc.wantGen {
				t.Errorf("next record goes to slot %d with gen %d, want slot %d gen %d", at.next, at.gen, tc.wantSlot, tc.wantGen)
			}
		})
	}
}

// An update cut at any byte, with the new bytes before or after the cut (a
// write torn either way), leaves the previous record or the new one. So does
// a cut of the first update after an upgrade from the one-line record.
func TestClaimUpdateTornAnywhere(t *testing.T) {
	for _, start := range []struct {
		name string
		file []byte
	}{
		{"fresh", nil},
		{"legacy", []byte(`{"role":"producer","pid":4242,"host":"ingest-1","since":"2025-03-01T09:30:00Z","next_seq":5}` + "\n")},
	} {
		c := &bufClaim{b: bytes.Clone(start.file)}
		prev, at := parseClaimFile(c.b)
		for k := uint64(1); k <= 4; k++ {
			h := testHolder(100+int(k), 10*k)
			before := bytes.Clone(c.b)
			probe := &bufClaim{b: bytes.Clone(before)}
			probeAt := at
			if err := writeClaimSlot(probe, &probeAt, h, true); err != nil {
				t.Fatal(err)
			}
			after := probe.b
			for cut := 0; cut <= len(after); cut++ {
				for _, newFirst := range []bool{true, false} {
					torn := append(bytes.Clone(before), make([]byte, max(0, len(after)-len(before)))...)
					if newFirst {
						copy(torn[:cut], after[:cut])
					} else {
						copy(torn[cut:], after[cut:])
					}
					got, _ := parseClaimFile(torn)
					okOld := prev == nil || (got != nil && got.PID == prev.PID && *got.NextSeq == *prev.NextSeq)
					okNew := got != nil && got.PID == h.PID && *got.NextSeq == *h.NextSeq
					if !okOld && !okNew {
						t.Fatalf("%s, update %d cut at byte %d (new bytes first %v): read %+v, want the old record %+v or the new one", start.name, k, cut, newFirst, got, prev)
					}
				}
			}
			if err := writeClaimSlot(c, &at, h, true); err != nil {
				t.Fatal(err)
			}
			prev = &h
			if got, _ := parseClaimFile(c.b); got == nil || got.PID != h.PID {
				t.Fatalf("%s, after update %d: read %+v", start.name, k, got)
			}
		}
	}
}
