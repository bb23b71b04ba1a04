package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

// Producer appends messages to a spool. It holds the PRODUCER claim (unless
// claims are disabled) from OpenProducer until Close. A Producer is safe for
// concurrent use; writes are serialized.
type Producer struct {
	mu     sync.Mutex
	fsys   FS
	opts   Options
	layout *Layout
	claim  *roleClaim

	next     uint64 // next sequence to assign
	reserved uint64 // high-water mark recorded in PRODUCER; next never passes it unrecorded
	block    uint64 // how far ahead each reservation reaches
	count    uint64 // messages this producer made durable
	lastSeq  *uint64
	failed   error // sticky: set after a failed sync or undo
	closed   bool
	madeDirs map[string]bool // shard directories known to exist
	sideBuf  []byte          // the last sidecar written, reused for the next
	chunkBuf []chunkFiles    // the last batch's names (nameChunks)
	dirBuf   []string        // and its directories

	use       *usage        // what the spool holds; nil when Options.Bounds has no limit
	dropped   atomic.Uint64 // messages dropped by when_full=drop_newest
	onDrop    func(Message)
	fullWaits atomic.Uint64 // writes that waited for room
}

// DoneRecord is the content of the DONE sentinel.
type DoneRecord struct {
	Status  string    `json:"status,omitempty"` // success or failure (always set by mqb)
	Error   string    `json:"error,omitempty"`
	Count   uint64    `json:"count"`              // messages written by the producer that wrote DONE
	LastSeq *uint64   `json:"last_seq,omitempty"` // its last sequence number
	Time    time.Time `json:"time,omitzero"`      // always set by mqb
}

// OpenProducer takes the PRODUCER claim and recovers the spool: it removes
// .tmp leftovers and sidecars without a payload, removes a stale DONE
// sentinel durably, and resumes after the highest sequence number ever used.
func OpenProducer(fsys FS, o Options) (*Producer, error) {
	return OpenProducerContext(context.Background(), fsys, o)
}

// OpenProducerContext is OpenProducer that stops walking the spool, and
// returns ctx's error, once ctx is done: recovering a spool of many chunks
// takes a while.
func OpenProducerContext(ctx context.Context, fsys FS, o Options) (*Producer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	l, _ := o.Layout()
	p := &Producer{fsys: fsys, opts: o, layout: l, madeDirs: map[string]bool{".": true}}
	p.block = min(1024, max(1, (l.MaxSeq()+1)/1000))
	var prev *Holder
	if o.Claims {
		c, h, err := acquireClaim(fsys, o.Path, ProducerFile, "producer")
		if err != nil {
			return nil, err
		}
		p.claim, prev = c, h
		if o.Bounds.Set() {
			b := o.Bounds
			p.claim.holder.Bounds = &b
		}
	}
	if err := p.recover(ctx, prev); err != nil {
		p.releaseClaim()
		return nil, err
	}
	if err := p.openUsage(ctx); err != nil {
		p.releaseClaim()
		return nil, err
	}
	return p, nil
}

// openUsage counts what the spool holds when the options bound it.
func (p *Producer) openUsage(ctx context.Context) error {
	b := p.opts.Bounds
	if !b.Set() {
		return nil
	}
	if _, ok := p.fsys.(SpaceReporter); b.MinFreeBytes > 0 && !ok {
		return &option.Error{Field: "min_free_bytes", Value: fmt.Sprint(b.MinFreeBytes),
			Msg: "needs a backend that reports free space, such as os"}
	}
	u, err := newUsage(ctx, p.fsys, p.layout)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return p.errorf("count the spool's chunks for its bounds: %w", err)
	}
	p.use = u
	return nil
}

func (p *Producer) releaseClaim() {
	if p.claim != nil {
		_ = p.claim.release()
		p.claim = nil
	}
}

func (p *Producer) errorf(format string, args ...any) error {
	return fmt.Errorf("spool %s: "+format, append([]any{p.opts.Path}, args...)...)
}

func (p *Producer) syncing() bool { return p.opts.Fsync != FsyncNone }

// recovery is what recover learns while walking the spool.
type recovery struct {
	next    uint64          // one past the highest sequence number seen
	floor   uint64          // the lowest payload number seen
	payload bool            // a payload was seen
	seen    bool            // a chunk file was seen
	touched map[string]bool // directories it removed files from
}

func (p *Producer) recover(ctx context.Context, prev *Holder) error {
	r := &recovery{touched: map[string]bool{}}
	err := walkLeafDirs(ctx, p.fsys, p.layout, func(dir string) error {
		return p.recoverLeaf(ctx, r, dir)
	})
	if err != nil {
		return err
	}
	if err := p.syncRecovered(r.touched); err != nil {
		return err
	}
	next := r.next
	if prev != nil && prev.NextSeq != nil && *prev.NextSeq > next {
		next = *prev.NextSeq
	}
	p.next = next
	if p.claim != nil {
		floor := next
		if r.payload {
			floor = r.floor
		}
		p.claim.holder.FloorSeq = &floor // written with the first mark, below
	}
	if err := p.removeStaleDone(); err != nil {
		return err
	}
	return p.reserve(p.next)
}

// recoverLeaf removes the .tmp leftovers and orphan sidecars of one leaf
// directory and notes its highest sequence number. It streams the listing
// and keeps the chunks it sees as bit sets, so that opening a flat spool
// of millions of chunks costs little memory; orphan sidecars, rare, are
// named by a second listing.
func (p *Producer) recoverLeaf(ctx context.Context, r *recovery, dir string) error {
	var payloads, sidecars SeqSet
	var leftovers []string
	err := p.listChunks(ctx, dir, func(name string, seq uint64, kind ChunkKind) {
		if !r.seen || seq >= r.next {
			r.next, r.seen = seq+1, true
		}
		switch kind {
		case KindPayload:
			payloads.Add(seq)
			if !r.payload || seq < r.floor {
				r.floor, r.payload = seq, true
			}
		case KindSidecar:
			sidecars.Add(seq)
		case KindPayloadTmp, KindSidecarTmp:
			leftovers = append(leftovers, joinPath(dir, name))
		}
	})
	if err == nil {
		err = p.removeAll(r, dir, leftovers, "leftover")
	}
	if err != nil || sidecars.Without(payloads) == 0 {
		return err
	}
	return p.removeOrphans(ctx, r, dir, payloads)
}

// removeOrphans removes the sidecars of dir whose payload is not in
// payloads.
func (p *Producer) removeOrphans(ctx context.Context, r *recovery, dir string, payloads SeqSet) error {
	var orphans []string
	err := p.listChunks(ctx, dir, func(name string, seq uint64, kind ChunkKind) {
		if kind == KindSidecar && !payloads.Has(seq) {
			orphans = append(orphans, joinPath(dir, name))
		}
	})
	if err != nil {
		return err
	}
	return p.removeAll(r, dir, orphans, "orphan sidecar")
}

// removeAll removes the files names of the leaf directory dir, what they
// are saying what for an error.
func (p *Producer) removeAll(r *recovery, dir string, names []string, what string) error {
	for _, full := range names {
		if err := removeIfExists(p.fsys, full); err != nil {
			return p.errorf("remove %s %s: %w", what, full, err)
		}
		r.touched[dir] = true
	}
	return nil
}

// listChunks streams the listing of the leaf directory dir, calling fn for
// each regular file named as a chunk (payload, sidecar or their .tmp).
func (p *Producer) listChunks(ctx context.Context, dir string, fn func(name string, seq uint64, kind ChunkKind)) error {
	return listInfo(ctx, p.fsys, dir, false, func(name string, typ fs.FileMode, _ func() int64) {
		if !typ.IsRegular() {
			return
		}
		if seq, kind, ok := p.layout.ParseLeaf(dir, name); ok {
			fn(name, seq, kind)
		}
	})
}

// syncRecovered makes the removals of recover durable.
func (p *Producer) syncRecovered(touched map[string]bool) error {
	if !p.syncing() {
		return nil
	}
	for dir := range touched {
		if err := p.fsys.SyncDir(dir); err != nil {
			if dir != "." && errors.Is(err, fs.ErrNotExist) {
				continue // emptied by the cleanup and removed by a consumer
			}
			return p.errorf("sync %s after recovery: %w", dir, err)
		}
	}
	return nil
}

// removeStaleDone removes, durably, a DONE sentinel a previous producer
// left: this producer is not done.
func (p *Producer) removeStaleDone() error {
	if _, err := p.fsys.Stat(DoneFile); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return p.errorf("stat DONE: %w", err)
	}
	if err := removeIfExists(p.fsys, DoneFile); err != nil {
		return p.errorf("remove stale DONE: %w", err)
	}
	if err := p.fsys.SyncDir("."); err != nil {
		return p.errorf("sync after removing stale DONE: %w", err)
	}
	return nil
}

// reserve records a high-water mark covering at least upto, so that a
// producer that crashes never lets a successor reuse a number.
func (p *Producer) reserve(upto uint64) error {
	if p.claim == nil {
		p.reserved = ^uint64(0)
		return nil
	}
	mark := min(upto+p.block, p.layout.MaxSeq()+1)
	if mark < upto {
		mark = upto
	}
	if err := p.claim.record(&mark); err != nil {
		return p.errorf("record sequence high-water mark in %s: %w", ProducerFile, err)
	}
	p.reserved = mark
	return nil
}

// NextSeq returns the sequence number the next message will get.
func (p *Producer) NextSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Count returns how many messages this producer has made durable.
func (p *Producer) Count() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

// Write stores msgs as one chunk each, in order. When it returns, the first n
// chunks are visible to consumers and, unless fsync=none, durable; on error
// the rest are not visible and no partial chunk is. With fsync=chunk n counts
// every chunk committed before the failure; with batch and none, a failed
// batch is undone, so n is 0 or len(msgs).
//
// With Options.Bounds set, a batch that does not fit is written in parts as
// room appears (when_full=block), refused with ErrSpoolFull (fail), or the
// messages that do not fit are dropped and counted in n (drop_newest).
//
// Messages without an ID get a fresh one (the Message values are updated).
// The sequence numbers of a failed batch are never used again.
func (p *Producer) Write(ctx context.Context, msgs []Message) (n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if p.failed != nil {
		return 0, p.failed
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if last := p.next + uint64(len(msgs)) - 1; last > p.layout.MaxSeq() || last < p.next {
		return 0, p.errorf("%w: writing %d more message(s) from sequence %d would pass %d, the largest number naming_pattern %q can hold; drain the spool and move to a new one or a wider pattern",
			ErrSequenceExhausted, len(msgs), p.next, p.layout.MaxSeq(), p.opts.NamingPattern)
	}
	if err := checkBodies(msgs); err != nil {
		return 0, p.errorf("%w", err)
	}
	for i := range msgs {
		if msgs[i].ID == "" {
			msgs[i].ID = NewMessageID()
		}
	}
	if p.use == nil {
		return p.write(ctx, msgs)
	}
	for len(msgs) > 0 {
		fit, err := p.admit(ctx, msgs)
		if err != nil {
			return n, err
		}
		if fit == 0 { // when_full=drop_newest
			p.dropped.Add(1)
			if p.onDrop != nil {
				p.onDrop(msgs[0])
			}
			n, msgs = n+1, msgs[1:]
			continue
		}
		k, err := p.write(ctx, msgs[:fit])
		n += k
		if err != nil {
			return n, err
		}
		msgs = msgs[fit:]
	}
	return n, nil
}

// write stores msgs: one chunk at a time with fsync=chunk, else as one batch.
func (p *Producer) write(ctx context.Context, msgs []Message) (n int, err error) {
	if p.opts.Fsync == FsyncChunk {
		for i := range msgs {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if err := p.writeBatch(msgs[i : i+1]); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := p.writeBatch(msgs); err != nil {
		return 0, err
	}
	return len(msgs), nil
}

// chunkFiles are the names of one chunk being written.
type chunkFiles struct {
	seq               uint64
	dir               string
	payload, sidecar  string // final names; sidecar "" without sidecars
	payTmp, sideTmp   string // names written first (== final names when atomic=false)
	payDone, sideDone bool   // the final name exists and is ours
	payTmpMade        bool
	size              int64 // bytes of payload and sidecar
	sideTmpMade       bool
}

// fail makes err sticky and returns it.
func (p *Producer) fail(err error) error {
	p.failed = fmt.Errorf("%w: %w", ErrProducerFailed, err)
	return p.failed
}

func (p *Producer) writeBatch(msgs []Message) (err error) {
	first := p.next
	p.next += uint64(len(msgs)) // numbers are burned even if the batch fails
	if p.next > p.reserved {
		if err := p.reserve(p.next); err != nil {
			return p.fail(err)
		}
	}
	chunks, dirs := p.nameChunks(first, len(msgs))
	defer func() {
		if err != nil {
			if uerr := p.undo(chunks); uerr != nil && p.failed == nil {
				p.fail(fmt.Errorf("%v; then undoing the batch failed: %w", err, uerr))
			}
		}
	}()

	// 1-2. Sidecar then payload of every chunk, under their write names.
	syncEach := p.syncing() && p.syncsEachFile(chunks)
	if err := p.writeTmps(chunks, msgs, syncEach); err != nil {
		return err
	}
	if p.syncing() && !syncEach {
		if err := p.fsys.(FSSyncer).SyncAll(); err != nil {
			return p.fail(p.errorf("sync written files: %w", err))
		}
	}
	if !p.opts.Atomic {
		for i := range chunks {
			chunks[i].payDone, chunks[i].sideDone = true, chunks[i].sidecar != ""
		}
		return p.syncDirs(dirs)
	}
	// 3-4. Sidecars into place, then make them durable before any payload
	// can be seen, so a visible payload always has its sidecar.
	if p.layout.Sidecars() {
		for i := range chunks {
			c := &chunks[i]
			if err := p.fsys.Rename(c.sideTmp, c.sidecar); err != nil {
				return p.renameErr(c.sideTmp, c.sidecar, err)
			}
			c.sideTmpMade, c.sideDone = false, true
		}
		if err := p.syncDirs(dirs); err != nil {
			return err
		}
	}
	// 5. Payloads into place: the commit point of each chunk.
	for i := range chunks {
		c := &chunks[i]
		if err := p.fsys.Rename(c.payTmp, c.payload); err != nil {
			return p.renameErr(c.payTmp, c.payload, err)
		}
		c.payTmpMade, c.payDone = false, true
	}
	if err := p.syncDirs(dirs); err != nil {
		return err
	}
	p.committed(chunks)
	return nil
}

// committed counts a batch whose chunks are all in place.
func (p *Producer) committed(chunks []chunkFiles) {
	p.count += uint64(len(chunks))
	if p.use != nil {
		for i := range chunks {
			p.use.add(chunks[i].seq, chunks[i].size)
		}
	}
	last := chunks[len(chunks)-1].seq
	p.lastSeq = &last
}

// renameErr explains a failed rename of a chunk file into place.
func (p *Producer) renameErr(from, to string, err error) error {
	if lerr := explainLink(p.fsys, p.opts.Path, "rename "+from+" into place", to, err); lerr != nil {
		return lerr
	}
	if errors.Is(err, fs.ErrExist) {
		return p.errorf("rename %s into place: %w (another producer is writing this spool, or claims are disabled)", from, err)
	}
	return p.errorf("rename %s into place: %w", from, err)
}

// nameChunks returns the names of n chunks from sequence first, and the
// directories they go to, in order.
func (p *Producer) nameChunks(first uint64, n int) ([]chunkFiles, []string) {
	// The slices of the last batch are reused: a batch is done with them
	// before the next one starts (writes are serialized).
	chunks := slices.Grow(p.chunkBuf[:0], n)[:n]
	dirs := p.dirBuf[:0]
	for i := range chunks {
		c := &chunks[i]
		*c = chunkFiles{seq: first + uint64(i)}
		c.dir, c.payload, c.payTmp, c.sidecar, c.sideTmp = p.layout.chunkNames(c.seq, p.opts.Atomic)
		if len(dirs) == 0 || dirs[len(dirs)-1] != c.dir {
			dirs = append(dirs, c.dir)
		}
	}
	if n <= 4096 { // a rare huge batch is not kept
		p.chunkBuf, p.dirBuf = chunks, dirs
	}
	return chunks, dirs
}

// writeTmps writes the sidecar, then the payload, of every chunk under its
// write name (steps 1 and 2), noting what it made for undo.
func (p *Producer) writeTmps(chunks []chunkFiles, msgs []Message, sync bool) error {
	for i := range chunks {
		c := &chunks[i]
		c.size = payloadSize(&msgs[i])
		if c.sidecar != "" {
			side := appendSidecar(p.sideBuf[:0], msgs[i].ID, msgs[i].Metadata)
			p.sideBuf = side // written, then no longer needed
			c.size += int64(len(side))
			made, err := p.writeFile(c.dir, c.sideTmp, &Message{Payload: side}, sync)
			c.sideTmpMade = made // a file that failed half-written is ours to undo too
			if err != nil {
				return err
			}
		}
		made, err := p.writeFile(c.dir, c.payTmp, &msgs[i], sync)
		c.payTmpMade = made
		if err != nil {
			return err
		}
	}
	return nil
}

// syncsEachFile reports whether a syncing batch of chunks makes each file
// it writes durable with a sync of its own rather than with one
// FSSyncer.SyncAll after writing them all. SyncAll is for fsync=batch, on
// an FS that has it, and a batch of two files or more: syncfs writes back
// every dirty file of the filesystem and flushes the disk once, where a
// sync per file flushes it per file. A batch of one file (one message
// without a sidecar) gets the sync of that file, which has no other files
// to look for: on the development machine's disk such batches ran at 0.90
// to 0.96 of a raw fsync loop's rate with syncfs and at 0.98 to 1.00 with
// the fsync (docs/guide/benchmarks.md).
func (p *Producer) syncsEachFile(chunks []chunkFiles) bool {
	if p.opts.Fsync != FsyncBatch {
		return true
	}
	if _, ok := p.fsys.(FSSyncer); !ok {
		return true
	}
	return len(chunks) == 1 && chunks[0].sidecar == ""
}

func (p *Producer) syncDirs(dirs []string) error {
	if !p.syncing() {
		return nil
	}
	for _, d := range dirs {
		if err := p.fsys.SyncDir(d); err != nil {
			if d != "." && errors.Is(err, fs.ErrNotExist) {
				// A consumer removes a shard directory only once it is
				// empty: every chunk renamed into it was consumed
				// already, and there is nothing left to make durable.
				delete(p.madeDirs, d)
				continue
			}
			return p.fail(p.errorf("sync directory %s: %w", d, err))
		}
	}
	return nil
}

// writeFile creates name exclusively, writes the payload of m (a sidecar
// comes as a Message of its bytes) and syncs it when sync is set. It makes missing shard directories. made reports whether
// it created the file, even when a later step failed. Bytes go through
// WholeFileWriter when the FS has it; a streamed Body through a File.
func (p *Producer) writeFile(dir, name string, m *Message, sync bool) (made bool, err error) {
	if w, ok := p.fsys.(WholeFileWriter); ok && m.Body == nil {
		made, err = p.createIn(dir, name, func() (bool, error) { return w.WriteNewFile(name, m.Payload, sync) })
		if made && err != nil {
			err = p.stepErr(name, err)
		}
		return made, err
	}
	var f File
	made, err = p.createIn(dir, name, func() (bool, error) {
		var err error
		f, err = p.fsys.CreateExcl(name)
		return err == nil, err
	})
	if err != nil {
		return made, err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = p.errorf("close %s: %w", name, cerr)
		}
	}()
	if err := writePayload(f, m, name); err != nil {
		return true, p.errorf("write %s: %w", name, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			return true, p.fail(p.errorf("sync %s: %w", name, err))
		}
	}
	return true, nil
}

// stepErr explains a failure of WriteNewFile after it created name (its
// *fs.PathError already names the step and the file): a failed sync leaves
// the page cache in a state nobody knows, so it stops the producer (as
// File.Sync failing does); a failed write or close fails the batch.
func (p *Producer) stepErr(name string, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return p.errorf("write %s: %w", name, err)
	}
	if pe.Op == "sync" {
		return p.fail(p.errorf("%w", err))
	}
	return p.errorf("%w", err)
}

// createIn runs create, which creates name in dir, making dir (and its
// parents) when missing. A consumer may remove an empty shard directory at
// any moment, so a create that finds its directory gone makes it again.
// create reports whether it created the file; an error after that is
// returned as it is, with made set.
func (p *Producer) createIn(dir, name string, create func() (made bool, err error)) (made bool, err error) {
	for attempt := 0; ; attempt++ {
		if !p.madeDirs[dir] {
			if err := p.makeDirs(dir); err != nil {
				return false, err
			}
		}
		made, err := create()
		if err == nil || made {
			return made, err
		}
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			delete(p.madeDirs, dir)
			continue
		}
		if lerr := explainLink(p.fsys, p.opts.Path, "create "+name, name, err); lerr != nil {
			return false, lerr
		}
		if errors.Is(err, fs.ErrExist) {
			return false, p.errorf("create %s: %w (another producer is writing this spool, or claims are disabled)", name, err)
		}
		return false, p.errorf("create %s: %w", name, err)
	}
}

// makeDirs creates the shard directories down to dir, syncing each new one
// together with its parent before anything is renamed into it.
func (p *Producer) makeDirs(dir string) error {
	parts := strings.Split(dir, "/")
	cur := "."
	for _, part := range parts {
		parent := cur
		cur = joinPath(cur, part)
		err := p.fsys.Mkdir(cur)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			if lerr := explainLink(p.fsys, p.opts.Path, "make shard directory "+cur, cur, err); lerr != nil {
				return lerr
			}
			return p.errorf("make shard directory %s: %w", cur, err)
		}
		if err == nil && p.syncing() {
			if err := p.fsys.SyncDir(cur); err != nil {
				return p.fail(p.errorf("sync new shard directory %s: %w", cur, err))
			}
			if err := p.fsys.SyncDir(parent); err != nil {
				return p.fail(p.errorf("sync directory %s: %w", parent, err))
			}
		}
	}
	// Keep the cache small: a producer moves through directories in order.
	if len(p.madeDirs) > 64 {
		p.madeDirs = map[string]bool{".": true}
	}
	p.madeDirs[dir] = true
	return nil
}

// undo removes everything a failed batch made, payloads first, so that no
// chunk of it stays visible. Files that are already gone are fine.
func (p *Producer) undo(chunks []chunkFiles) error {
	var errs []error
	dirs := map[string]bool{}
	rm := func(name string, dir string) {
		if err := removeIfExists(p.fsys, name); err != nil {
			errs = append(errs, err)
		}
		dirs[dir] = true
	}
	for i := range chunks {
		c := &chunks[i]
		if c.payDone {
			rm(c.payload, c.dir)
		}
		if c.payTmpMade {
			rm(c.payTmp, c.dir)
		}
	}
	for i := range chunks {
		c := &chunks[i]
		if c.sideDone {
			rm(c.sidecar, c.dir)
		}
		if c.sideTmpMade {
			rm(c.sideTmp, c.dir)
		}
	}
	if len(errs) == 0 && p.syncing() && p.failed == nil {
		for d := range dirs {
			if err := p.fsys.SyncDir(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close ends a successful run: it writes the DONE sentinel when emit_done is
// success or always, records the next sequence number and releases the claim.
func (p *Producer) Close() error { return p.CloseWithError(nil) }

// CloseWithError ends a run that failed with cause (nil means success): DONE
// is written, with status failure, only when emit_done is always.
func (p *Producer) CloseWithError(cause error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.closed = true
	defer p.releaseClaim()
	if p.failed != nil && cause == nil {
		cause = p.failed
	}
	var errs []error
	emit := p.opts.EmitDone == EmitAlways || (p.opts.EmitDone == EmitSuccess && cause == nil)
	if emit {
		if err := p.writeDone(cause); err != nil {
			errs = append(errs, err)
		}
	}
	if p.claim != nil && p.failed == nil {
		next := p.next
		if err := p.claim.record(&next); err != nil {
			errs = append(errs, p.errorf("record next sequence: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (p *Producer) writeDone(cause error) error {
	rec := DoneRecord{Status: "success", Count: p.count, LastSeq: p.lastSeq, Time: time.Now().UTC()}
	if cause != nil {
		rec.Status, rec.Error = "failure", cause.Error()
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	tmp := DoneFile + TmpSuffix
	if err := removeIfExists(p.fsys, tmp); err != nil {
		return p.errorf("remove %s: %w", tmp, err)
	}
	f, err := p.fsys.CreateExcl(tmp)
	if err != nil {
		return p.errorf("create %s: %w", tmp, err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil && p.syncing() {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		if werr = removeIfExists(p.fsys, DoneFile); werr == nil {
			werr = p.fsys.Rename(tmp, DoneFile)
		}
	}
	if werr == nil && p.syncing() {
		werr = p.fsys.SyncDir(".")
	}
	if werr != nil {
		_ = removeIfExists(p.fsys, tmp)
		return p.errorf("write DONE: %w", werr)
	}
	return nil
}

// ReadDone returns the DONE record of a spool, or fs.ErrNotExist.
func ReadDone(fsys FS) (*DoneRecord, error) {
	b, err := readAll(fsys, DoneFile)
	if err != nil {
		return nil, err
	}
	var rec DoneRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", DoneFile, err)
	}
	return &rec, nil
}

func removeIfExists(fsys FS, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func joinPath(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	if oneElement(name) && fs.ValidPath(dir) { // both clean: what path.Join gives, in one allocation
		return dir + "/" + name
	}
	return path.Join(dir, name)
}

// oneElement reports whether name is a single path element that cleaning
// leaves alone: not empty, no slash, not "." or "..".
func oneElement(name string) bool {
	return name != "" && name != "." && name != ".." && strings.IndexByte(name, '/') < 0
}
