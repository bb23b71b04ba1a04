package memfs

import (
	"cmp"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/afero"
)

// The crash model.
//
// Every file node has a content (in the base) and a synced length: File.Sync,
// SyncAll and Claim.Sync set it. A claim file written in place (Claim.WriteAt)
// keeps its durable bytes and the writes made since (placed). Every directory node has its current
// entries and its durable entries. A create, rename or remove updates the
// current entries at once and is logged as a pending op; SyncDir of a
// directory commits, into the durable entries, every pending op that names an
// entry of that directory, together with the earlier pending ops it depends on
// (closure below). A crash keeps the durable entries, plus a random share of
// the pending ops (each committed with its dependencies, exactly as a SyncDir
// would), and each file's synced bytes, plus a random prefix of its unsynced
// tail.

type opKind uint8

const (
	opCreate opKind = iota // create or mkdir: to
	opRemove               // remove or rmdir: from
	opRename               // from -> to
)

// slot is one directory entry name.
type slot struct {
	dir  *node
	name string
}

type dirOp struct {
	seq  uint64
	kind opKind
	n    *node
	from slot
	to   slot
	anc  []*node // for a rename across directories: the target dir and its ancestors then
	done bool
}

func (o *dirOp) slots() []slot {
	switch o.kind {
	case opCreate:
		return []slot{o.to}
	case opRemove:
		return []slot{o.from}
	default:
		return []slot{o.from, o.to}
	}
}

func (f *FS) logOp(o *dirOp) {
	f.seq++
	o.seq = f.seq
	f.log = append(f.log, o)
	o.n.pending = append(o.n.pending, o)
	for _, s := range o.slots() {
		s.dir.slotOps[s.name] = append(s.dir.slotOps[s.name], o)
		grew(s.dir.slotOps, &s.dir.slotPeak)
	}
}

// finishOp takes o out of the pending state (it was committed or forgotten).
func (f *FS) finishOp(o *dirOp) {
	if o.done {
		return
	}
	o.done = true
	o.n.pending = without(o.n.pending, o)
	for _, s := range o.slots() {
		if l := without(s.dir.slotOps[s.name], o); len(l) > 0 {
			s.dir.slotOps[s.name] = l
		} else {
			delete(s.dir.slotOps, s.name)
			s.dir.slotOps = shrunk(s.dir.slotOps, &s.dir.slotPeak)
		}
	}
	f.nDone++
	if f.nDone > 64 && f.nDone > len(f.log)/2 {
		f.log = slices.DeleteFunc(f.log, func(o *dirOp) bool { return o.done })
		f.nDone = 0
	}
}

// without removes o from l, a pending list in seq order. Ops leave their
// lists mostly in seq order (commit and maybeDrop finish the oldest first), so
// removing the head is O(1): the slice is advanced rather than shifted.
func without(l []*dirOp, o *dirOp) []*dirOp {
	i, ok := slices.BinarySearchFunc(l, o.seq, bySeq)
	if !ok {
		return l
	}
	if i == 0 {
		l[0] = nil
		return l[1:]
	}
	return slices.Delete(l, i, i+1)
}

func bySeq(o *dirOp, seq uint64) int { return cmp.Compare(o.seq, seq) }

// before returns the last op of l (a pending list in seq order) that is
// older than seq, or nil.
func before(l []*dirOp, seq uint64) *dirOp {
	if i, _ := slices.BinarySearchFunc(l, seq, bySeq); i > 0 {
		return l[i-1]
	}
	return nil
}

// closure returns seeds and every pending op they depend on, in log order.
// An op depends on the earlier pending ops that
//   - move the same node (a node's history is committed as a prefix),
//   - name one of its entries (an entry name is never claimed twice),
//   - for a rename across directories, place the target directory or one of
//     its ancestors (a moved entry never lands in a lost directory),
//   - for a directory removal, name an entry of that directory (it was empty).
//
// Each of these is a set of the ops of one pending list (a node's pending,
// or the ops of one entry name) older than the op, and every op of such a
// list depends in turn on the older ones of the same list. So following, in
// each list, only the newest op older than the one at hand reaches the same
// set, and the cost is linear in the result rather than quadratic.
func (f *FS) closure(seeds []*dirOp) []*dirOp {
	in := map[*dirOp]bool{}
	stack := slices.Clone(seeds)
	push := func(l []*dirOp, seq uint64) {
		if d := before(l, seq); d != nil && !in[d] {
			stack = append(stack, d)
		}
	}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if in[o] || o.done {
			continue
		}
		in[o] = true
		push(o.n.pending, o.seq)
		for _, s := range o.slots() {
			push(s.dir.slotOps[s.name], o.seq)
		}
		for _, a := range o.anc {
			push(a.pending, o.seq)
		}
		if o.kind == opRemove && o.n.kind == kindDir {
			for _, l := range o.n.slotOps {
				push(l, o.seq)
			}
		}
	}
	out := make([]*dirOp, 0, len(in))
	for o := range in {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *dirOp) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// view is a set of durable entries that ops are applied to: the live durable
// maps (overlay nil, reference counts kept) or a copy-on-write overlay used to
// compute a crash state without touching the FS.
type view struct {
	overlay map[*node]map[string]*node
	touched []*node // live view: nodes that lost a durable entry
}

func (v *view) entries(d *node) map[string]*node {
	if v.overlay != nil {
		if m, ok := v.overlay[d]; ok {
			return m
		}
	}
	return d.durable
}

func (v *view) writable(d *node) map[string]*node {
	if v.overlay == nil {
		return d.durable
	}
	m, ok := v.overlay[d]
	if !ok {
		m = make(map[string]*node, len(d.durable)+1)
		for k, c := range d.durable {
			m[k] = c
		}
		v.overlay[d] = m
	}
	return m
}

func (v *view) put(s slot, n *node) {
	if s.dir.dropped {
		return
	}
	m := v.writable(s.dir)
	old := m[s.name]
	if old == n {
		return
	}
	m[s.name] = n
	if v.overlay == nil {
		if old != nil {
			old.durRefs--
			v.touched = append(v.touched, old)
		}
		n.durRefs++
	}
}

func (v *view) del(s slot, n *node) {
	if s.dir.dropped || v.entries(s.dir)[s.name] != n {
		return
	}
	delete(v.writable(s.dir), s.name)
	if v.overlay == nil {
		n.durRefs--
		v.touched = append(v.touched, n)
	}
}

func (v *view) apply(o *dirOp) {
	switch o.kind {
	case opCreate:
		v.put(o.to, o.n)
	case opRemove:
		v.del(o.from, o.n)
	case opRename:
		v.del(o.from, o.n)
		v.put(o.to, o.n)
	}
}

// commit makes seeds and their dependencies durable.
func (f *FS) commit(seeds []*dirOp) {
	if len(seeds) == 0 {
		return
	}
	v := &view{}
	ops := f.closure(seeds)
	for _, o := range ops {
		v.apply(o)
		f.finishOp(o)
	}
	for _, o := range ops {
		f.maybeDrop(o.n)
	}
	for _, n := range v.touched {
		f.maybeDrop(n)
	}
}

// maybeDrop forgets an unlinked node that no crash can bring back: it has no
// durable entry and no pending op that could give it one, or its whole
// history (from its creation on) is pending and ends with its removal, so
// committing all of it would change nothing. This keeps memory bounded when
// directories are never synced.
func (f *FS) maybeDrop(n *node) {
	if n == f.root || n.parent != nil || n.dropped || n.durRefs > 0 {
		return
	}
	if len(n.pending) > 0 && n.pending[0].kind != opCreate {
		return
	}
	n.dropped = true
	for len(n.pending) > 0 {
		f.finishOp(n.pending[0])
	}
	if n.kind == kindFile {
		_ = f.base.Remove(f.where(n))
	}
	delete(f.files, n)
	delete(f.unsynced, n)
	f.unsynced = shrunk(f.unsynced, &f.unsyncedPeak)
	if n.kind == kindDir {
		for name, c := range n.durable {
			delete(n.durable, name)
			c.durRefs--
			f.maybeDrop(c)
		}
	}
}

// SyncDir makes durable every creation, rename and removal of entries of the
// directory name so far (a rename counts for both of its directories). It
// fails with fs.ErrNotExist when name is missing and syscall.ENOTDIR when it is
// not a directory.
func (f *FS) SyncDir(name string) error {
	const op = "syncdir"
	if err := f.check(op, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.lookup(op, name)
	if err != nil {
		return err
	}
	if d.kind != kindDir {
		return pathErr(op, name, syscall.ENOTDIR)
	}
	var seeds []*dirOp
	for _, l := range d.slotOps {
		seeds = append(seeds, l...)
	}
	f.commit(seeds)
	return nil
}

// SyncAll makes the bytes written so far to every file durable, as if each
// had been synced, including files that are unlinked but could come back
// after a crash. Like the core.FSSyncer contract, it promises nothing about
// directory entries: those still need SyncDir.
func (f *FS) SyncAll() error {
	const op = "syncall"
	if f.initErr != nil {
		return baseErr(op, ".", f.initErr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Only the files in unsynced can have bytes past their synced length.
	for n := range f.unsynced {
		if n.placed != nil {
			if err := f.syncPlaced(n); err != nil {
				return baseErr(op, n.rel(), err)
			}
			delete(f.unsynced, n)
			continue
		}
		size, err := f.size(n)
		if err != nil {
			return baseErr(op, n.rel(), err)
		}
		n.syncedLen = size
		if !n.writing {
			delete(f.unsynced, n)
		}
	}
	f.unsynced = shrunk(f.unsynced, &f.unsyncedPeak)
	return nil
}

func (f *FS) size(n *node) (int64, error) {
	fi, err := f.base.Stat(f.where(n))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// content returns the current bytes of the file node n.
func (f *FS) content(n *node) ([]byte, error) {
	return afero.ReadFile(f.base, f.where(n))
}

// CrashOptions says how much of what was not made durable survives a Crash.
type CrashOptions struct {
	// Seed makes the random choices; the same Seed on the same history
	// gives the same state.
	Seed int64
	// KeepUnsynced is the probability, from 0 to 1, that each unsynced
	// directory operation survives, and that each unsynced file tail
	// survives (in full with probability KeepUnsynced again, otherwise cut
	// at a random length). 0 keeps exactly the durable state; 1 keeps
	// everything, the state a crash of the process alone would leave.
	KeepUnsynced float64
}

// Crash returns a new, independent FS holding what a power cut at this
// instant would leave. The receiver is not changed and stays usable. The new
// FS is like one from New. Crash itself copies every surviving file.
//
// With KeepUnsynced 0 the result is exactly the durable state:
//   - an entry exists only if its creation or rename was made durable by
//     SyncDir of its directory (and the directory itself is reachable), and
//     an entry whose removal or rename away was not made durable is still
//     there;
//   - each file holds the bytes it had when last synced (File.Sync, SyncAll,
//     Claim.Sync): empty if it never was.
//
// With KeepUnsynced > 0, each pending (unsynced) create, rename or remove
// survives with that probability, and one that survives brings along the
// earlier pending operations it depends on, as a SyncDir would: the earlier
// operations on the same file or directory, on the same entry name, and for a
// rename across directories those that placed the target directory; a
// directory's removal brings along the earlier operations on its entries.
// Each file with unsynced bytes keeps its synced bytes followed by a prefix
// of the bytes written after them: the whole tail with probability
// KeepUnsynced², none with probability 1-KeepUnsynced, otherwise 1 to n-1 of
// its n unsynced bytes. A claim file written in place keeps its synced bytes
// with each unsynced Claim.WriteAt over them whole, torn (each 8-byte block
// of the file it covers new or old), or not at all, with the same
// probabilities.
//
// Whatever the options, the result is a state a crash could produce:
//   - a file's content is a prefix of its current content, at least as long
//     as its synced part (a claim file written in place: its synced bytes
//     with some blocks of each later write over them);
//   - a file or directory appears under at most one name; a renamed one
//     appears under its old name or its new name, never both, and never
//     neither if its old entry was durable;
//   - a rename is all or nothing; a directory that is gone took nothing with
//     it that was moved out of it first.
//
// Claims are not carried over (the locks die with the process), nor are
// watches. If a file's content cannot be read from the base, every method of
// the returned FS fails with that error.
func (f *FS) Crash(opts CrashOptions) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := opts.KeepUnsynced
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	p = min(p, 1)
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x6d71622d6d656d66))

	v := &view{overlay: map[*node]map[string]*node{}}
	if p > 0 {
		var seeds []*dirOp
		for _, o := range f.log {
			if !o.done && rng.Float64() < p {
				seeds = append(seeds, o)
			}
		}
		for _, o := range f.closure(seeds) {
			v.apply(o)
		}
	}

	out := New()
	err := f.initErr
	if err == nil {
		c := &crasher{f: f, v: v, rng: rng, p: p, out: out, seen: map[*node]bool{}, trace: f.crashTrace}
		err = c.dir(f.root, out.root, "/")
	}
	if err != nil {
		out.initErr = err
	}
	return out
}

type crasher struct {
	f    *FS
	v    *view
	rng  *rand.Rand
	p    float64
	out  *FS
	seen map[*node]bool

	trace func(p string, n *node, dup bool) // tests only
}

// dir copies the surviving tree under d into od, a durable directory of
// c.out, in name order so that the random draws are reproducible.
func (c *crasher) dir(d, od *node, at string) error {
	entries := c.v.entries(d)
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.SortFunc(names, strings.Compare)
	for _, name := range names {
		n := entries[name]
		p := path.Join(at, name)
		if c.trace != nil {
			c.trace(p, n, c.seen[n])
		}
		if c.seen[n] {
			continue // cannot happen; guards against a cycle
		}
		c.seen[n] = true
		var m *node
		if n.kind == kindDir {
			m = newNode(kindDir)
			m.born = n.born
			if err := c.dir(n, m, p); err != nil {
				return err
			}
		} else {
			data, err := c.f.content(n)
			if err != nil {
				return err
			}
			if n.placed != nil {
				data = c.placedContent(n.placed)
			} else {
				data = data[:c.keep(n, len(data))]
			}
			m = c.out.newFile()
			if err := afero.WriteFile(c.out.base, c.out.where(m), data, 0o644); err != nil {
				return err
			}
			m.syncedLen = int64(len(data))
			c.out.files[m] = struct{}{}
		}
		m.parent, m.name = od, name
		od.children[name] = m
		od.durable[name] = m
		m.durRefs = 1
	}
	return nil
}

// tearBlock is the unit in which an unsynced in-place write tears: a
// sector-like block of the file, at a multiple of its size.
const tearBlock = 8

// placedContent returns what survives of a file written in place: its
// durable bytes with each write made since over them whole (probability
// KeepUnsynced²), not at all (probability 1-KeepUnsynced), or otherwise torn:
// each tearBlock-byte block of the file that it covers holds its new bytes
// or its old ones, independently, as when a disk writes sectors out of
// order.
func (c *crasher) placedContent(p *placed) []byte {
	out := slices.Clone(p.durable)
	for _, w := range p.writes {
		if len(w.data) == 0 || c.p == 0 || c.rng.Float64() >= c.p {
			continue
		}
		whole := c.rng.Float64() < c.p
		if end := w.off + int64(len(w.data)); end > int64(len(out)) {
			out = append(out, make([]byte, end-int64(len(out)))...)
		}
		for at := w.off; at < w.off+int64(len(w.data)); {
			next := min((at/tearBlock+1)*tearBlock, w.off+int64(len(w.data)))
			if whole || c.rng.IntN(2) == 0 {
				copy(out[at:next], w.data[at-w.off:next-w.off])
			}
			at = next
		}
	}
	return out
}

// keep returns how many of the size current bytes of n survive.
func (c *crasher) keep(n *node, size int) int {
	k := int(min(n.syncedLen, int64(size)))
	tail := size - k
	if tail == 0 || c.p == 0 || c.rng.Float64() >= c.p {
		return k
	}
	if tail == 1 || c.rng.Float64() < c.p {
		return size
	}
	return k + 1 + c.rng.IntN(tail-1)
}
