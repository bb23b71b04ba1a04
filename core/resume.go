package core

import (
	"errors"
	"io/fs"
	"slices"
)

// A draining consumer keeps its resume point, the ack frontier, in its
// CONSUMER record (acked_below, docs/protocol.md section 5.7): every chunk
// numbered below it was acknowledged and deleted. The next consumer opens
// the chunk at that number by name instead of listing the spool first, so
// its first delivery costs the same at any backlog. A first consumer does
// the same from the producer's floor (floor_seq in PRODUCER): no chunk
// numbered below it was on disk when the producer opened.
//
// The frontier is written every hintEvery acks and at Close, without a
// sync: a crash or power cut leaves an older record, a lower frontier, and
// a lower one only costs a few opens of names already gone (past)
// or, past those, one listing. It is never above a chunk still on disk that
// this consumer knows of: chunks in flight, nacked, listed and not yet
// delivered, and acked ones whose delete failed all hold it back.

// hintEvery is how many acks pass between two writes of the frontier.
const hintEvery = 256

// resumeReach is how far past a missing name a resuming consumer looks
// for the next chunk: more than the acks a killed consumer may not have
// recorded (hintEvery), so that a restart after a crash does not list. It
// looks at the names 1, 2, 4 ... resumeReach after the missing one, so a
// spool with nothing there costs it about ten opens.
const resumeReach = 2 * hintEvery

// resumeGallops bounds how often a resuming consumer looks past missing
// names before a listing: holes left by acks out of order above the first
// chunk a killed consumer held.
const resumeGallops = 8

// resumeState is the frontier bookkeeping of a draining consumer.
type resumeState struct {
	written  uint64 // the frontier last written (or read at open)
	acks     int    // acks since the frontier was last computed
	gallops  int    // looks past missing names next may still take before a listing
	below    uint64 // no chunk at or above it when the consumer opened (the producer's mark)
	failed   bool   // an acked chunk's delete failed: failedAt holds the frontier
	failedAt uint64 // the lowest such chunk's number
	atZero   bool   // without a cursor, next starts at number 0 (until a listing)
}

// resumeFrom picks where to start without listing: the previous
// consumer's frontier or the producer's floor, whichever is higher (both
// only ever lag), unless it cannot be right: above the highest number the
// layout allows, above the producer's high-water mark, or with a chunk
// right below it. It returns the number it starts at and whether it found
// one; without one the consumer starts with a listing.
func (c *Consumer) resumeFrom(prev *Holder) (uint64, bool) {
	var f uint64
	found := false
	if prev != nil && prev.AckedBelow != nil {
		f, found = *prev.AckedBelow, true
	}
	p := readHolder(c.fsys, ProducerFile)
	if p != nil && p.FloorSeq != nil && (!found || *p.FloorSeq > f) {
		f, found = *p.FloorSeq, true
	}
	if !found || f > c.layout.MaxSeq() {
		return 0, false
	}
	if p != nil && p.NextSeq != nil && f > *p.NextSeq {
		c.logger().Warn("the recorded position is above the producer's high-water mark; listing the spool instead",
			"spool", c.opts.Path, "position", f, "next_seq", *p.NextSeq)
		return 0, false
	}
	if f > 0 {
		below := c.layout.Payload(f - 1)
		if _, err := c.fsys.Stat(below); !errors.Is(err, fs.ErrNotExist) {
			if err == nil {
				c.logger().Warn("a chunk sits below the recorded position; listing the spool instead",
					"spool", c.opts.Path, "position", f, "file", below)
			}
			return 0, false
		}
		c.cursor = below
	}
	c.resume = resumeState{written: f, gallops: resumeGallops, atZero: f == 0, below: c.layout.MaxSeq() + 1}
	if p != nil && p.NextSeq != nil {
		c.resume.below = *p.NextSeq
	}
	return f, true
}

// ackFrontier is the lowest number that may still be on disk: the one
// after the cursor, or lower for a chunk listed, in flight, nacked or whose
// delete failed.
func (c *Consumer) ackFrontier() uint64 {
	f := c.resume.written
	if seq, _, ok := c.layout.Parse(c.cursor); ok {
		f = seq + 1
	}
	lower := func(name string) {
		if seq, _, ok := c.layout.Parse(name); ok && seq < f {
			f = seq
		}
	}
	if len(c.pending) > 0 {
		lower(c.pending[0])
	}
	for seq := range c.inflight {
		f = min(f, seq)
	}
	if len(c.retry) > 0 {
		lower(c.retry[0].Name)
	}
	if c.resume.failed && c.resume.failedAt < f {
		f = c.resume.failedAt
	}
	return f
}

// noteAcks counts acks and writes the frontier every hintEvery of them.
func (c *Consumer) noteAcks(n int) {
	if c.claim == nil {
		return
	}
	c.resume.acks += n
	if c.resume.acks >= hintEvery {
		c.resume.acks = 0
		_ = c.writeFrontier(false) // a hint: a failed write leaves an older, lower one
	}
}

// noteDeleteFailed holds the frontier at or below an acked chunk that is
// still on disk.
func (c *Consumer) noteDeleteFailed(seq uint64) {
	if !c.resume.failed || seq < c.resume.failedAt {
		c.resume.failed, c.resume.failedAt = true, seq
	}
}

// writeFrontier records the frontier in the CONSUMER claim file when it
// moved.
func (c *Consumer) writeFrontier(sync bool) error {
	f := c.ackFrontier()
	if f == c.resume.written {
		return nil
	}
	c.claim.holder.AckedBelow = &f
	if err := c.claim.update(sync); err != nil {
		return err
	}
	c.resume.written = f
	return nil
}

// next opens the payload right after the cursor by name, without listing:
// names are fixed-width, so the next one is known. A consumer that keeps up
// with the producer, or drains a backlog, then lists only on a miss, and a
// large flat backlog is listed once instead of once per page. A consumer
// resuming from a recorded position looks past missing names too (past).
// It returns nil when no payload was found (yet) or there is no cursor.
func (c *Consumer) next() *Delivery {
	start, ok := c.nextSeq()
	if !ok {
		return nil
	}
	_, name, _, sidecar, _ := c.layout.chunkNames(start, false) // one allocation for both
	if c.skip(start) {
		return nil
	}
	d, err := c.loadChunk(chunkRead{seq: start, name: name, sidecar: sidecar})
	if errors.Is(err, fs.ErrNotExist) && c.resume.gallops > 0 {
		d, err = c.past(start)
	}
	if err != nil || d == nil {
		// Missing, or not a chunk to open by name (a symbolic link, a bad
		// sidecar): the listing decides, and reports what must stop us.
		return nil
	}
	c.moveCursor(d)
	c.noteDelivered(d.Seq)
	return d
}

// aheadMax bounds the chunks one readAhead reads before decoding: the
// buffers it keeps for their sidecars.
const aheadMax = 256

// readAhead appends to out the chunks that follow the cursor by name, as
// further calls of next would, up to limit deliveries in all. It reads the
// files of all of them first and decodes their sidecars after: between two
// system calls little code runs, and the decoding runs as one loop, which
// costs less than taking turns where each system call leaves the CPU's
// caches and TLB cold (see docs/guide/benchmarks.md). It stops at the first
// name that is missing, taken, unreadable or badly decoded, and leaves that
// one to next, which decides about it as it always does. A consumer that
// expects a payload to stay on disk (expectLarge) reads chunk by chunk,
// measuring each payload with a Stat.
func (c *Consumer) readAhead(out []*Delivery, limit int) []*Delivery {
	n := min(limit-len(out), aheadMax)
	if n <= 0 {
		return out
	}
	start, ok := c.nextSeq()
	if !ok {
		return out
	}
	if len(c.aheadSides) < n {
		c.aheadSides = append(c.aheadSides, make([][]byte, n-len(c.aheadSides))...)
	}
	var reads []chunkRead
	if wr, ok := c.fsys.(WholeFileReader); ok && !c.expectLarge() {
		reads = c.readFilesAhead(wr, start, n)
	} else {
		reads = c.readChunksAhead(start, n)
	}
	out = slices.Grow(out, len(reads)) // once, not once per doubling
	for i, r := range reads {
		d, err := c.deliveryOf(r)
		if err != nil {
			for _, later := range reads[i+1:] {
				later.kept.close()
			}
			break // read again by next, which reports it
		}
		c.moveCursor(d)
		c.noteDelivered(d.Seq)
		c.inflight[d.Seq] = d
		out = append(out, d)
	}
	clear(reads) // hold no payload past its delivery
	c.ahead = reads[:0]
	return out
}

// aheadNames returns the names of up to n chunks from start on, stopping
// at the first that is taken (in flight or nacked) or beyond the layout.
func (c *Consumer) aheadNames(start uint64, n int) []chunkRead {
	reads := c.ahead[:0]
	for i := range n {
		s := start + uint64(i)
		if s > c.layout.MaxSeq() || c.skip(s) {
			break
		}
		_, name, _, sidecar, _ := c.layout.chunkNames(s, false)
		reads = append(reads, chunkRead{seq: s, name: name, sidecar: sidecar})
	}
	return reads
}

// readChunksAhead reads the chunks of aheadNames one by one, up to the
// first whose payload is missing or unreadable.
func (c *Consumer) readChunksAhead(start uint64, n int) []chunkRead {
	reads := c.aheadNames(start, n)
	for i, r := range reads {
		r, err := c.readChunk(r, c.aheadSides[i])
		if err != nil {
			return reads[:i]
		}
		c.keepAheadSide(i, r)
		reads[i] = r
	}
	return reads
}

// readFilesAhead is readChunksAhead with one ReadWholeFiles call for every
// file, which keeps the code run between the system calls short.
func (c *Consumer) readFilesAhead(wr WholeFileReader, start uint64, n int) []chunkRead {
	reads := c.aheadNames(start, n)
	per := 1
	if c.layout.Sidecars() {
		per = 2
	}
	files := c.aheadFiles[:0]
	for i, r := range reads {
		files = append(files, c.payloadRead(r.name))
		if per == 2 {
			files = append(files, c.sidecarRead(r.sidecar, c.aheadSides[i]))
		}
	}
	tried := wr.ReadWholeFiles(files)
	for i := range reads {
		if per*i >= tried || files[per*i].Err != nil {
			reads = reads[:i] // the payload is missing or unreadable: next decides
			break
		}
		r, f := &reads[i], &files[per*i]
		if f.Left > 0 {
			r.size, r.onDisk = f.Left, true
		} else {
			r.payload, r.size = f.Data, int64(len(f.Data))
		}
		c.payHint = int(r.size)
		if per == 2 {
			r.side, r.sideErr = files[per*i+1].Data, files[per*i+1].Err
			if r.sideErr == nil {
				c.sideHint = len(r.side)
			}
			c.keepAheadSide(i, *r)
		}
	}
	clear(files) // hold no payload past its delivery
	c.aheadFiles = files[:0]
	return reads
}

// keepAheadSide keeps chunk i's sidecar buffer for the next readAhead.
func (c *Consumer) keepAheadSide(i int, r chunkRead) {
	if r.sideErr == nil && cap(r.side) <= maxReadHint {
		c.aheadSides[i] = r.side // decoding copies what it keeps
	}
}

// past looks for a chunk at start+1, +2, +4 ... +resumeReach (below the
// producer's mark when the consumer opened), start itself being missing.
// On finding one it looks at start and the names between once more and
// returns the first there: a producer may have committed them meanwhile.
func (c *Consumer) past(start uint64) (*Delivery, error) {
	c.resume.gallops--
	for step := uint64(1); step <= resumeReach; step *= 2 {
		s := start + step
		if s > c.layout.MaxSeq() || s >= c.resume.below || s < start || c.skip(s) {
			break
		}
		d, err := c.load(c.layout.Payload(s))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		first, err := c.firstOf(start, s-1)
		if first != nil || err != nil {
			return first, err
		}
		return d, nil
	}
	c.resume.gallops = 0 // nothing near: the listing takes over
	return nil, nil
}

// nextSeq returns the number after the cursor's, or 0 for a consumer that
// resumes at 0; false when there is none to try.
func (c *Consumer) nextSeq() (uint64, bool) {
	if c.cursor == "" {
		return 0, c.resume.atZero
	}
	if c.cursorAt.name != c.cursor { // set from a listing: parse it once
		seq, kind, ok := c.layout.Parse(c.cursor)
		c.cursorAt = parsedName{name: c.cursor, seq: seq, payload: ok && kind == KindPayload}
	}
	if !c.cursorAt.payload || c.cursorAt.seq >= c.layout.MaxSeq() {
		return 0, false
	}
	return c.cursorAt.seq + 1, true
}

// parsedName is a name with what Layout.Parse makes of it: its number, and
// whether it is a payload's.
type parsedName struct {
	name    string
	seq     uint64
	payload bool
}

// moveCursor makes the delivery d, just read, the cursor.
func (c *Consumer) moveCursor(d *Delivery) {
	c.cursor, c.cursorAt = d.Name, parsedName{name: d.Name, seq: d.Seq, payload: true}
}

// firstOf returns the first payload numbered from lo to hi that can be
// read now (nil if none), or the error of one that exists but cannot be
// read: the listing must decide about that one first.
func (c *Consumer) firstOf(lo, hi uint64) (*Delivery, error) {
	for s := lo; s <= hi; s++ {
		d, err := c.load(c.layout.Payload(s))
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, nil
}
