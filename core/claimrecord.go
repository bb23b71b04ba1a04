package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// The holder record of a claim file (docs/protocol.md, section 7.2) is kept
// in two fixed-size slots, overwritten in place in turn, so that an update
// cut short at any instant leaves the other slot, the previous record,
// whole. Each slot is one JSON line, padded with spaces, ending with a
// generation number and a checksum; a reader takes the valid slot with the
// highest generation.

// ClaimSlotSize is the size in bytes of each of the two record slots of a
// claim file: slot 0 at offset 0, slot 1 at offset ClaimSlotSize.
const ClaimSlotSize = 512

// maxRecordHost bounds the host name kept in a record, so that a record
// always fits its slot.
const maxRecordHost = 255

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcField starts the checksum field that ends every slot record.
var crcField = []byte(`,"crc":"`)

// claimSlots is where the next record of a held claim goes.
type claimSlots struct {
	next int    // the slot to overwrite: never the one holding the newest valid record
	gen  uint64 // the generation to give it
}

// encodeClaimSlot returns the ClaimSlotSize bytes of a slot holding h with
// generation gen: the JSON of h, then "gen", then "crc", the CRC-32C
// (Castagnoli) of every byte before the crc field, as 8 lowercase hex
// digits; spaces up to the slot's last byte, which is a newline.
func encodeClaimSlot(h Holder, gen uint64) ([]byte, error) {
	if len(h.Host) > maxRecordHost {
		h.Host = h.Host[:maxRecordHost]
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"gen":`...) // drop the closing brace
	b = strconv.AppendUint(b, gen, 10)
	sum := crc32.Checksum(b, castagnoli)
	b = fmt.Appendf(b, `,"crc":"%08x"}`, sum)
	if len(b) >= ClaimSlotSize {
		return nil, fmt.Errorf("claim record of %d bytes does not fit a %d-byte slot", len(b), ClaimSlotSize)
	}
	slot := bytes.Repeat([]byte{' '}, ClaimSlotSize)
	copy(slot, b)
	slot[ClaimSlotSize-1] = '\n'
	return slot, nil
}

// decodeClaimSlot returns the record in one slot and its generation, or ok
// false when the slot does not hold a whole record with a valid checksum
// (never written, or torn by a crash during its update).
func decodeClaimSlot(slot []byte) (h Holder, gen uint64, ok bool) {
	line := bytes.TrimRight(slot, " \n\x00")
	i := bytes.LastIndex(line, crcField)
	if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) || len(line)-i != len(crcField)+10 {
		return h, 0, false
	}
	want, err := strconv.ParseUint(string(line[i+len(crcField):len(line)-2]), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(line[:i], castagnoli) {
		return h, 0, false
	}
	var rec struct {
		Holder
		Gen *uint64 `json:"gen"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Gen == nil {
		return h, 0, false
	}
	return rec.Holder, *rec.Gen, true
}

// parseClaimFile returns the newest record in the content of a claim file
// (nil if none) and where the holder's next record must go. It reads the
// slot format and, when neither slot is valid, the one-line record of
// earlier versions (and of other implementations that write it), which the
// first slot write then leaves in place: that write goes to slot 1.
func parseClaimFile(b []byte) (*Holder, claimSlots) {
	var best *Holder
	at := claimSlots{next: 1, gen: 1}
	for i := range 2 {
		if len(b) < (i+1)*ClaimSlotSize {
			break
		}
		h, gen, ok := decodeClaimSlot(b[i*ClaimSlotSize : (i+1)*ClaimSlotSize])
		if ok && (best == nil || gen >= at.gen) { // at.gen is the best generation + 1
			best, at = &h, claimSlots{next: 1 - i, gen: gen + 1}
		}
	}
	if best == nil {
		best = parseLegacyRecord(b)
	}
	if best != nil && best.PID == 0 {
		best = nil // not a holder record
	}
	return best, at
}

// parseLegacyRecord reads a claim file holding one JSON object (the record
// format before slots): its first line, which must not look like a slot.
func parseLegacyRecord(b []byte) *Holder {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	var rec struct {
		Holder
		Gen json.RawMessage `json:"gen"`
		CRC json.RawMessage `json:"crc"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &rec) != nil || rec.Gen != nil || rec.CRC != nil {
		return nil
	}
	return &rec.Holder
}

// writeClaimSlot writes h into the slot at says and, when sync is set,
// syncs it. Only after both succeed does the next record go to the other
// slot: after a failure the same slot (the one not holding the newest valid
// record) is written again. A record written without sync is one that may
// be lost to a power cut: the slot then holds an older record or a torn
// one, and a reader takes the other slot.
func writeClaimSlot(lk Claim, at *claimSlots, h Holder, sync bool) error {
	slot, err := encodeClaimSlot(h, at.gen)
	if err != nil {
		return err
	}
	n, err := lk.WriteAt(slot, int64(at.next)*ClaimSlotSize)
	if err == nil && n < len(slot) {
		err = io.ErrShortWrite
	}
	if err == nil && sync {
		err = lk.Sync()
	}
	if err != nil {
		return err
	}
	at.next, at.gen = 1-at.next, at.gen+1
	return nil
}
