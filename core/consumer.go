package core

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Delivery is one message read from a spool. It stays in flight until it is
// acknowledged or negatively acknowledged on the Consumer that read it.
type Delivery struct {
	Name      string // payload file, relative to the spool root
	Seq       uint64
	MessageID string            // from the sidecar; "" when there is none
	Metadata  map[string]string // from the sidecar; empty when there is none
	// Payload holds the payload, unless the consumer streams payloads
	// of this Size (see Consumer.SetStreamAbove): then it is nil and Open
	// or ReadInto reads it. Its memory may be lent by the caller until the
	// delivery is acked (see Consumer.LendPayloadBuffers).
	Payload     []byte
	Size        int64 // bytes in the payload
	Redelivered bool  // it was nacked before

	sidecar string
	dir     string
	fsys    FS                          // where Open finds a payload left on disk; nil when it was read
	kept    atomic.Pointer[keptPayload] // the payload left on disk, still open from its measure (stream.go)
}

// Consumer reads chunks in lexical order. In draining mode (drain_on_read,
// the default) it holds the CONSUMER claim and deletes each chunk once its
// message is acknowledged; otherwise it makes a non-destructive pass that
// remembers its position and deletes nothing. A Consumer is safe for
// concurrent use: acks and nacks may come from other goroutines while Read
// waits.
type Consumer struct {
	mu          sync.Mutex
	fsys        FS
	opts        Options
	layout      *Layout
	claim       *roleClaim
	destructive bool

	cursor   string               // the last payload name taken from a listing
	cursorAt parsedName           // cursor's number, once parsed (nextSeq)
	pending  []string             // listed payloads not yet delivered, in order
	retry    []*Delivery          // nacked, delivered again first, in order
	inflight map[uint64]*Delivery // delivered, not yet settled, by sequence number (cheaper to hash than the name)
	settled  chan struct{}        // closed and replaced on an ack or nack once a Read waits on it
	waited   bool                 // a Read took settled to wait on
	watches  map[string]DirWatch
	closed   bool

	payHint, sideHint int              // sizes of the last payload and sidecar read
	streamAbove       int64            // payloads larger stay on disk (SetStreamAbove); 0: none
	keptFiles         atomic.Int32     // payload files left on disk and kept open in deliveries (stream.go)
	lend              func(int) []byte // lends payload buffers (LendPayloadBuffers); nil: none
	sideBuf           []byte           // the last sidecar read: decoded, then reused
	sideScratch       []byte           // the buffer sideInto gives readWhole for the sidecar being read
	sideInto          func(int) []byte // returns sideScratch; made once, so a read allocates no closure
	ahead             []chunkRead      // readAhead's chunks, reused
	aheadFiles        []WholeRead      // readAhead's files, reused
	ackRemoved        []*Delivery      // Ack's payloads deleted whose sidecars wait for a directory sync, reused
	ackSynced         []bool           // Ack's outcome of each directory sync, reused
	aheadSides        [][]byte         // readAhead's sidecar buffers, reused like sideBuf
	probe             []byte           // small payloads are read into it first (wholeread.go)
	one               [1]WholeRead     // readOne's batch of one, reused
	strs              internTable      // metadata strings shared between deliveries

	resume resumeState // the ack frontier kept in the CONSUMER record (resume.go)

	check consumerCheck // layout, foreign files, DONE (consumercheck.go)
}

// OpenConsumer opens a consumer. A draining consumer takes the CONSUMER
// claim (unless claims are disabled); a second one gets a *ClaimError naming
// the holder.
func OpenConsumer(fsys FS, o Options) (*Consumer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	l, _ := o.Layout()
	c := &Consumer{
		fsys: fsys, opts: o, layout: l, destructive: o.DrainOnRead,
		inflight: map[uint64]*Delivery{}, settled: make(chan struct{}), watches: map[string]DirWatch{},
		strs: internTable{},
	}
	c.sideInto = func(int) []byte { return c.sideScratch }
	if c.destructive && o.Claims {
		cl, prev, err := acquireClaim(fsys, o.Path, ConsumerFile, "consumer")
		if err != nil {
			return nil, err
		}
		if f, ok := c.resumeFrom(prev); ok && f > 0 {
			cl.holder.AckedBelow = &f
		}
		if err := cl.record(nil); err != nil {
			_ = cl.release()
			return nil, fmt.Errorf("spool %s: record %s claim: %w", o.Path, ConsumerFile, err)
		}
		c.claim = cl
	}
	return c, nil
}

func (c *Consumer) errorf(format string, args ...any) error {
	return fmt.Errorf("spool %s: "+format, append([]any{c.opts.Path}, args...)...)
}

// InFlight returns how many deliveries wait for an ack or a nack.
func (c *Consumer) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

// Read returns between 1 and limit deliveries in lexical name order, nacked
// ones first. It waits for chunks when there are none, unless the consumer is
// done: then it returns ErrEnd (see Options.ExitWhenEmpty and stop_on_done).
// A sidecar it cannot parse stops it with a *SidecarError and deletes
// nothing, unless bad_sidecar=deliver.
func (c *Consumer) Read(ctx context.Context, limit int) ([]*Delivery, error) {
	if limit < 1 {
		limit = 1
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if err := c.checkDue(ctx); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		out, err := c.fill(limit)
		if len(out) > 0 {
			c.mu.Unlock()
			return out, nil // a read error, if any, comes back on the next call
		}
		if err == nil {
			err = c.startCheck(ctx) // before waiting or ending
		}
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		again, err := c.atEnd(ctx)
		if err != nil || again {
			c.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		newWatch := c.refreshWatches()
		settled := c.settled
		c.waited = true
		chans := make([]<-chan struct{}, 0, len(c.watches))
		for _, w := range c.watches {
			chans = append(chans, w.C())
		}
		c.mu.Unlock()
		if newWatch {
			continue // look once more: a chunk may have landed before the watch
		}
		if err := wait(ctx, c.opts.PollInterval, settled, chans); err != nil {
			return nil, err
		}
	}
}

// fill takes up to limit deliveries from the retry list and the listing.
func (c *Consumer) fill(limit int) ([]*Delivery, error) {
	var out []*Delivery
	for len(out) < limit && len(c.retry) > 0 {
		d := c.retry[0]
		c.retry = c.retry[1:]
		c.inflight[d.Seq] = d
		out = append(out, d)
	}
	for len(out) < limit {
		if len(c.pending) == 0 {
			if d := c.next(); d != nil {
				c.inflight[d.Seq] = d
				out = c.readAhead(append(out, d), limit)
				continue
			}
			found, err := c.refill()
			if err != nil {
				return out, err
			}
			if !found {
				break
			}
		}
		name := c.pending[0]
		d, err := c.load(name)
		if errors.Is(err, fs.ErrNotExist) {
			c.pending = c.pending[1:] // taken by someone else: not ours to deliver
			continue
		}
		if err != nil {
			return out, err
		}
		c.pending = c.pending[1:]
		c.noteDelivered(d.Seq)
		c.inflight[d.Seq] = d
		out = append(out, d)
	}
	return out, nil
}

// atEnd decides what to do when nothing can be delivered now: end (ErrEnd),
// look again (again), or wait (false, nil).
func (c *Consumer) atEnd(ctx context.Context) (again bool, err error) {
	if c.opts.ExitWhenEmpty && len(c.inflight) == 0 {
		return false, c.endCheck(ctx)
	}
	if !c.opts.StopOnDone {
		return false, nil
	}
	if _, err := c.fsys.Stat(DoneFile); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, c.errorf("stat DONE: %w", err)
	}
	// DONE exists: everything the producer wrote is visible now, so one
	// more look decides.
	found, err := c.refill()
	if err != nil || found {
		return found, err
	}
	if len(c.inflight) == 0 {
		return false, c.endCheck(ctx)
	}
	return false, nil
}

// refill lists the next payloads after the cursor; a draining consumer that
// finds none looks from the start too, for chunks that arrived out of order
// or were acked with a failed delete.
func (c *Consumer) refill() (bool, error) {
	c.resume.gallops, c.resume.atZero = 0, false // listing from here on: misses are the listing's to decide
	names, err := c.list(c.cursor)
	if err == nil && len(names) == 0 && c.destructive && c.cursor != "" {
		names, err = c.list("")
	}
	if err != nil {
		return false, c.errorf("list: %w", err)
	}
	c.pending = names
	if n := len(names); n > 0 && names[n-1] > c.cursor {
		c.cursor = names[n-1]
	}
	return len(names) > 0, nil
}

// list returns the payload names after `after` that are safe to deliver
// now, in order. A listing is not a snapshot: while the producer renames 7
// then 8 into place, a listing can see 8 but not 7 (one directory is read in
// several steps, and a sharded spool is read one directory at a time). So
// when the names found do not follow the cursor without a gap, list looks
// again and keeps only the names up to the last one the first look saw:
// everything committed before that one was in place before the second look
// began.
func (c *Consumer) list(after string) ([]string, error) {
	names, err := c.scan(after)
	if err != nil || len(names) == 0 || c.follows(after, names) {
		return names, err
	}
	last := names[len(names)-1]
	again, err := c.scan(after)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(again) && again[n] <= last {
		n++
	}
	return again[:n], nil
}

// follows reports whether names are the sequence numbers right after the
// one of after, without a gap.
func (c *Consumer) follows(after string, names []string) bool {
	prev, _, ok := c.layout.Parse(after)
	if after == "" || !ok {
		return false
	}
	for _, name := range names {
		seq, _, ok := c.layout.Parse(name)
		if !ok || seq != prev+1 {
			return false
		}
		prev = seq
	}
	return true
}

// skip reports whether the payload of seq is already in flight or waiting
// for redelivery.
func (c *Consumer) skip(seq uint64) bool {
	if _, ok := c.inflight[seq]; ok {
		return true
	}
	for _, d := range c.retry {
		if d.Seq == seq {
			return true
		}
	}
	return false
}

// scan returns the payload names after `after` in the first leaf directory
// that has any, in order. A draining consumer removes empty shard
// directories that have a later sibling on the way, never the newest one.
func (c *Consumer) scan(after string) ([]string, error) {
	return c.scanDir(".", 0, false, after)
}

// scanDir is scan's step for the directory dir at shard level `level`;
// hasLater says whether a later shard directory exists beside it or beside
// one of its parents.
func (c *Consumer) scanDir(dir string, level int, hasLater bool, after string) ([]string, error) {
	leaf := level == c.layout.Depth()
	if sc, ok := c.fsys.(DirScanner); ok && leaf {
		return c.scanLeaf(sc, dir, after, hasLater)
	}
	entries, err := c.fsys.ReadDir(dir)
	if err != nil {
		if dir != "." && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if len(entries) == 0 && dir != "." && hasLater && c.destructive {
		_ = c.fsys.Remove(dir) // best effort; a producer may have just used it
		return nil, nil
	}
	if leaf {
		return c.leafNames(dir, entries, after), nil
	}
	shards := c.shardDirs(entries)
	for i, e := range shards {
		p := joinPath(dir, e.Name())
		if after != "" && p < after[:min(len(p), len(after))] {
			continue // every name below p sorts before the cursor
		}
		names, err := c.scanDir(p, level+1, hasLater || i < len(shards)-1, after)
		if err != nil || len(names) > 0 {
			return names, err
		}
	}
	return nil, nil
}

// leafNames picks from a leaf directory's sorted entries the payload names
// after `after` that are not in flight or waiting for redelivery, noting
// any entry that is not a chunk file.
func (c *Consumer) leafNames(dir string, entries []fs.DirEntry, after string) []string {
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		seq, kind, ok := c.layout.ParseLeaf(dir, e.Name())
		if !ok {
			c.noteEntry(dir, e.Name())
		}
		if kind != KindPayload {
			continue
		}
		full := joinPath(dir, e.Name())
		if full <= after || c.skip(seq) {
			continue
		}
		names = append(names, full)
	}
	return names
}

// shardDirs keeps the entries that are shard directories of the layout
// (never a symbolic link), in their sorted order.
func (c *Consumer) shardDirs(entries []fs.DirEntry) []fs.DirEntry {
	shards := entries[:0:0]
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 && c.layout.IsShardDir(e.Name()) {
			shards = append(shards, e)
		}
	}
	return shards
}

// listPage bounds how many names one streamed listing keeps: a consumer of a
// flat backlog of millions holds one page, then opens the names after it
// directly (next).
const listPage = 4096

// scanLeaf is scan's leaf step on an FS that streams listings: it keeps the
// listPage smallest payload names after `after`, never the whole directory.
func (c *Consumer) scanLeaf(sc DirScanner, dir, after string, hasLater bool) ([]string, error) {
	var page nameHeap
	seen := 0
	err := sc.ScanDir(dir, func(name string, typ fs.FileMode) {
		seen++
		if !typ.IsRegular() {
			return
		}
		seq, kind, ok := c.layout.ParseLeaf(dir, name)
		if !ok {
			c.noteEntry(dir, name)
		}
		if kind != KindPayload {
			return
		}
		full := joinPath(dir, name)
		if full <= after || (len(page) == listPage && full >= page[0]) || c.skip(seq) {
			return
		}
		if len(page) == listPage {
			heap.Pop(&page)
		}
		heap.Push(&page, full)
	})
	if err != nil {
		if dir != "." && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if seen == 0 && dir != "." && hasLater && c.destructive {
		_ = c.fsys.Remove(dir) // best effort; a producer may have just used it
	}
	slices.Sort(page)
	return page, nil
}

// nameHeap is a max-heap of names: the root is the largest kept, the one a
// smaller name replaces.
type nameHeap []string

func (h nameHeap) Len() int           { return len(h) }
func (h nameHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h nameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nameHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *nameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// load reads a payload and its sidecar.
func (c *Consumer) load(name string) (*Delivery, error) {
	seq, _, _ := c.layout.Parse(name)
	return c.loadChunk(chunkRead{seq: seq, name: name, sidecar: c.layout.SidecarOf(name)})
}

// loadChunk is load of the chunk whose number and names r holds (sidecar
// "" without sidecars).
func (c *Consumer) loadChunk(r chunkRead) (*Delivery, error) {
	r, err := c.readChunk(r, c.sideBuf)
	if err != nil {
		return nil, err
	}
	if r.sideErr == nil && cap(r.side) <= maxReadHint {
		c.sideBuf = r.side // decoding copies what it keeps
	}
	return c.deliveryOf(r)
}

// chunkRead is a chunk's files as readChunk read them, its sidecar not
// decoded yet.
type chunkRead struct {
	seq           uint64
	name, sidecar string
	payload       []byte
	size          int64
	onDisk        bool         // the payload stays on disk (SetStreamAbove)
	kept          *keptPayload // onDisk, and its file kept open (measureKept)
	side          []byte       // the sidecar's bytes
	sideErr       error        // why there are none: fs.ErrNotExist for a chunk without a sidecar
}

// readChunk reads the payload of the chunk r names and its sidecar's bytes,
// into scratch when it is large enough. An error is the payload's: missing
// (fs.ErrNotExist) or unreadable.
func (c *Consumer) readChunk(r chunkRead, scratch []byte) (chunkRead, error) {
	name, sidecar := r.name, r.sidecar
	var err error
	if err = c.loadPayload(&r); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, err
		}
		return r, c.errorf("read %s: %w", name, err)
	}
	c.payHint = int(r.size)
	if c.layout.Sidecars() {
		if wr, ok := c.fsys.(WholeFileReader); ok {
			side := c.readOne(wr, c.sidecarRead(sidecar, scratch))
			r.side, r.sideErr = side.Data, side.Err
		} else {
			c.sideScratch = scratch
			r.side, r.sideErr = readWhole(c.fsys, sidecar, c.sideHint, c.sideInto, scratch)
			c.sideScratch = nil
		}
		if r.sideErr == nil {
			c.sideHint = len(r.side)
		}
	}
	return r, nil
}

// deliveryOf makes the Delivery of a chunk readChunk read, decoding its
// sidecar. A payload without a sidecar is a valid chunk; a sidecar that
// cannot be read or decoded is an error, unless bad_sidecar=deliver.
func (c *Consumer) deliveryOf(r chunkRead) (*Delivery, error) {
	d := &Delivery{Name: r.name, Seq: r.seq, Payload: r.payload, Size: r.size, dir: parentDir(r.name)}
	if r.onDisk {
		d.fsys = c.fsys
		d.kept.Store(r.kept)
	}
	if !c.layout.Sidecars() || errors.Is(r.sideErr, fs.ErrNotExist) {
		d.sidecar = r.sidecar
		d.Metadata = map[string]string{}
		return d, nil
	}
	d.sidecar = r.sidecar
	err := r.sideErr
	if err == nil {
		var id string
		var md map[string]string
		if id, md, err = decodeSidecar(r.side, c.strs); err == nil {
			d.MessageID, d.Metadata = id, md
			return d, nil
		}
	}
	if c.opts.BadSidecar == BadSidecarDeliver {
		c.salvageSidecar(d, r.side, err)
		return d, nil
	}
	d.closeKept() // not delivered
	return nil, c.errorf("%w", &SidecarError{Path: d.sidecar, Err: err})
}

func parentDir(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return "."
}

// Ack settles deliveries as processed. A draining consumer deletes each
// payload, then its sidecar, and (fsync chunk or batch) syncs the
// directories so that an acknowledged chunk cannot come back after a power
// cut. The payload deletions are made durable before any sidecar is
// deleted: a power cut must never leave a payload without its sidecar, which
// would be delivered again with its message id and metadata lost. A sidecar
// whose deletion is lost comes back as an orphan, which the next producer
// removes. A non-destructive consumer only forgets them.
func (c *Consumer) Ack(ds ...*Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	var errs []error
	removed := c.ackRemoved[:0] // payloads deleted, sidecars still to delete
	dirs := make([]string, 0, 1)
	syncDir := func(dir string) bool {
		if err := c.fsys.SyncDir(dir); err != nil {
			errs = append(errs, c.errorf("sync %s after ack: %w", dir, err))
			return false
		}
		return true
	}
	removeSidecar := func(d *Delivery) {
		if d.sidecar != "" {
			if err := removeIfExists(c.fsys, d.sidecar); err != nil {
				errs = append(errs, c.errorf("delete acked sidecar %s: %w", d.sidecar, err))
			}
		}
	}
	for _, d := range ds {
		if c.inflight[d.Seq] != d {
			errs = append(errs, fmt.Errorf("ack %s: %w", d.Name, ErrUnknownDelivery))
			continue
		}
		delete(c.inflight, d.Seq)
		d.closeKept()
		if !c.destructive {
			continue
		}
		if err := removeIfExists(c.fsys, d.Name); err != nil {
			errs = append(errs, c.errorf("delete acked %s: %w", d.Name, err))
			c.noteDeleteFailed(d.Seq)
			continue
		}
		switch c.opts.Fsync {
		case FsyncChunk:
			if syncDir(d.dir) {
				removeSidecar(d)
			}
		case FsyncBatch:
			if len(dirs) == 0 || dirs[len(dirs)-1] != d.dir {
				dirs = append(dirs, d.dir)
			}
			removed = append(removed, d)
		default:
			removeSidecar(d)
		}
	}
	synced := c.ackSynced[:0]
	for _, dir := range dirs {
		synced = append(synced, syncDir(dir))
	}
	// removed holds one run of deliveries per entry of dirs, in order.
	for i, j := 0, 0; i < len(removed); j++ {
		for ; i < len(removed) && removed[i].dir == dirs[j]; i++ {
			if synced[j] {
				removeSidecar(removed[i])
			}
		}
	}
	c.ackSynced = synced[:0]
	clear(removed)
	c.ackRemoved = removed[:0]
	c.noteAcks(len(ds))
	return errors.Join(errs...)
}

// Nack settles deliveries as not processed: their chunks stay on disk and
// are delivered again, before anything newer.
func (c *Consumer) Nack(ds ...*Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	var errs []error
	for _, d := range ds {
		if c.inflight[d.Seq] != d {
			errs = append(errs, fmt.Errorf("nack %s: %w", d.Name, ErrUnknownDelivery))
			continue
		}
		delete(c.inflight, d.Seq)
		d.closeKept() // delivered again, it opens its payload by name
		d.Redelivered = true
		i, _ := slices.BinarySearchFunc(c.retry, d.Name, func(x *Delivery, n string) int { return strings.Compare(x.Name, n) })
		c.retry = slices.Insert(c.retry, i, d)
	}
	return errors.Join(errs...)
}

func (c *Consumer) signal() {
	if !c.waited {
		return // nobody holds the channel: no need for a new one per ack
	}
	close(c.settled)
	c.settled, c.waited = make(chan struct{}), false
}

// Close releases the claim. Deliveries still in flight stay on disk and are
// delivered again by the next consumer.
func (c *Consumer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	c.signal()
	for _, d := range c.inflight {
		d.closeKept()
	}
	var errs []error
	for _, w := range c.watches {
		errs = append(errs, w.Close())
	}
	c.watches = nil
	if c.claim != nil {
		_ = c.writeFrontier(c.opts.Fsync != FsyncNone) // a hint: an older one only costs a listing
		errs = append(errs, c.claim.release())
	}
	return errors.Join(errs...)
}

// refreshWatches keeps wake-up watches on the root and on the newest shard
// directory at each level, where new chunks appear. It reports whether a
// watch was added (a chunk may have arrived before it).
func (c *Consumer) refreshWatches() bool {
	dw, ok := c.fsys.(DirWatcher)
	if !ok {
		return false
	}
	want := []string{"."}
	dir := "."
	for range c.layout.Depth() {
		entries, err := c.fsys.ReadDir(dir)
		if err != nil {
			break
		}
		last := ""
		for _, e := range entries {
			if e.IsDir() && e.Type()&fs.ModeSymlink == 0 && c.layout.IsShardDir(e.Name()) {
				last = e.Name()
			}
		}
		if last == "" {
			break
		}
		dir = joinPath(dir, last)
		want = append(want, dir)
	}
	added := false
	for _, d := range want {
		if _, ok := c.watches[d]; ok {
			continue
		}
		w, err := dw.WatchDir(d)
		if err != nil {
			continue // polling still covers it
		}
		c.watches[d] = w
		added = true
	}
	for d, w := range c.watches {
		if !slices.Contains(want, d) {
			_ = w.Close()
			delete(c.watches, d)
		}
	}
	return added
}

// wait blocks until a watch fires, a delivery settles, the poll interval
// passes, or ctx ends.
func wait(ctx context.Context, poll time.Duration, settled <-chan struct{}, watches []<-chan struct{}) error {
	t := time.NewTimer(poll)
	defer t.Stop()
	done := make(chan struct{})
	defer close(done)
	woke := make(chan struct{}, 1)
	for _, ch := range watches {
		go func(ch <-chan struct{}) {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-done:
			}
		}(ch)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-settled:
	case <-woke:
	case <-t.C:
	}
	return nil
}
