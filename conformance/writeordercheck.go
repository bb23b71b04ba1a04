package conformance

import (
	"fmt"
	"strings"
	"sync"

	"github.com/mqb-project/mqb/core"
)

// The write protocol seen from the operations a Producer.Write makes on a
// recording FS: temporary names, sidecar before payload, syncs per fsync
// policy (protocol section 4). The op log here serves the other checks that
// look at operation order too.

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

// checkWriteOrder checks, from the operations a Producer.Write makes, the
// write protocol: tmp names, sidecar before payload, syncs per policy.
func checkWriteOrder(t TB, e *env) {
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		for _, atomic := range []bool{true, false} {
			for _, layout := range []string{"", "&metadata_extension=", "&naming_pattern={seq:04}&shard_depth=2&shard_width=1"} {
				q := fmt.Sprintf("fsync=%s&atomic=%v%s", policy, atomic, layout)
				writeOrderCase(t, e, q)
				if policy == core.FsyncBatch {
					batchSyncsCase(t, e, q)
				}
			}
		}
	}
}

// batchSyncsCase checks how an fsync=batch Write makes its files' bytes
// durable on an FS with SyncAll: one SyncAll for a batch of two files or
// more and no sync of a single file; for a batch of one file (one message
// without a sidecar) a sync of that file and no SyncAll, which would look
// for dirty files across the whole filesystem. Without SyncAll every file
// is synced on its own (writeOrderCase checks that the bytes are synced).
func batchSyncsCase(t TB, e *env, q string) {
	t.Helper()
	inner := e.newFS()
	if _, ok := inner.(core.FSSyncer); !ok {
		return
	}
	fsys, log := recording(inner)
	o := spoolOptions(t, q)
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	for _, n := range []int{5, 1} {
		log.take()
		_, err = p.Write(e.ctx, testMessages("s", int(p.NextSeq()), n))
		noErr(t, q+": Write", err)
		all, each := countBatchSyncs(log.take())
		files := n
		if o.MetadataExt != "" {
			files *= 2
		}
		if files > 1 && (all != 1 || each != 0) {
			t.Errorf("%s: a batch of %d files made %d SyncAll and %d file syncs, want 1 and 0", q, files, all, each)
		}
		if files == 1 && (all != 0 || each != 1) {
			t.Errorf("%s: a batch of one file made %d SyncAll and %d file syncs, want 0 and 1", q, all, each)
		}
	}
}

// countBatchSyncs counts the SyncAll calls and the syncs of single chunk
// files among ops, leaving out the producer's high-water mark.
func countBatchSyncs(ops []Op) (all, each int) {
	for _, op := range ops {
		switch {
		case op.Kind != OpSync || isClaimUpdateOp(op):
		case op.Name == ".":
			all++
		default:
			each++
		}
	}
	return all, each
}

// writeOrder checks the operations of one Producer.Write against the write
// protocol, for the layout and policy of query q.
type writeOrder struct {
	t          TB
	q          string
	o          core.Options
	nm         names
	ops        []Op
	syncing    bool // fsync is not none
	hasSyncAll bool // the FS flushes all files at once: Sync(".")
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
	w := &writeOrder{t: t, q: q, o: o, nm: nm, ops: log.take(), syncing: o.Fsync != core.FsyncNone}
	_, w.hasSyncAll = inner.(core.FSSyncer)
	if !w.noSyncsUnlessAsked() {
		return
	}
	prevDone := -1
	for s := uint64(first); s < first+count; s++ {
		dir, _ := nm.base(s)
		if !w.newShardDirSynced(dir) {
			return
		}
		commit, ok := w.directCommit(s)
		if o.Atomic {
			commit, ok = w.atomicCommit(s, dir)
		}
		if !ok {
			return
		}
		if w.syncing {
			if prevDone, ok = w.durableInOrder(s, dir, commit, prevDone, s+1 < first+count); !ok {
				return
			}
		}
	}
	w.batchSyncDirs()
	for _, name := range tree(t, inner) {
		if strings.HasSuffix(name, core.TmpSuffix) {
			w.fail("%s left behind after Write returned", name)
		}
	}
}

func (w *writeOrder) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Errorf("%s: "+format+"\nops: %v", append(append([]any{w.q}, args...), w.ops)...)
}

// noSyncsUnlessAsked fails when fsync=none made a sync call.
func (w *writeOrder) noSyncsUnlessAsked() bool {
	if w.syncing {
		return true
	}
	for _, op := range w.ops {
		// The high-water mark is synced whatever the policy.
		if (op.Kind == OpSync || op.Kind == OpSyncDir) && !isClaimUpdateOp(op) {
			w.fail("fsync=none made a %s call", op.Kind)
			return false
		}
	}
	return true
}

// dataSynced reports whether the bytes of name were made durable after its
// last write and before index at.
func (w *writeOrder) dataSynced(name string, at int) bool {
	ops := w.ops[:at]
	last := findLast(ops, isOp(OpWrite, name))
	if last < 0 {
		return true // empty payload
	}
	return find(ops, last, func(o Op) bool {
		return o.Kind == OpSync && (o.Name == name || (o.Name == "." && w.hasSyncAll))
	}) >= 0
}

// newShardDirSynced checks that a shard directory the Write made, and its
// parent, were synced before anything was put into it.
func (w *writeOrder) newShardDirSynced(dir string) bool {
	d := find(w.ops, 0, isOp(OpMkdir, dir))
	if d < 0 || !w.syncing {
		return true
	}
	parent := "."
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		parent = dir[:i]
	}
	into := find(w.ops, d, func(op Op) bool {
		return (op.Kind == OpRename && strings.HasPrefix(op.To, dir+"/")) ||
			(!w.o.Atomic && op.Kind == OpCreate && strings.HasPrefix(op.Name, dir+"/"))
	})
	if into < 0 {
		w.fail("nothing was put into the new shard directory %s", dir)
		return false
	}
	if ds := find(w.ops, d, isOp(OpSyncDir, dir)); ds < 0 || ds > into {
		w.fail("new shard directory %s not synced before use", dir)
	}
	if ps := find(w.ops, d, isOp(OpSyncDir, parent)); ps < 0 || ps > into {
		w.fail("parent %s of new shard directory %s not synced before use", parent, dir)
	}
	return true
}

// atomicCommit checks chunk s of an atomic write: both files written under
// .tmp names, synced, the sidecar renamed (and its directory synced) before
// the payload. It returns the index of the payload rename, which makes the
// chunk visible.
func (w *writeOrder) atomicCommit(s uint64, dir string) (int, bool) {
	pay, side := w.nm.payloadName(s), w.nm.sidecarName(s)
	if find(w.ops, 0, isOp(OpCreate, pay)) >= 0 || (side != "" && find(w.ops, 0, isOp(OpCreate, side)) >= 0) {
		w.fail("atomic=true created a final name directly")
		return 0, false
	}
	commit := find(w.ops, 0, isRename(pay+core.TmpSuffix, pay))
	if commit < 0 {
		w.fail("payload %s was not renamed into place from %s", pay, pay+core.TmpSuffix)
		return 0, false
	}
	if w.syncing && !w.dataSynced(pay+core.TmpSuffix, commit) {
		w.fail("payload bytes of %s not synced before its rename", pay)
	}
	if side == "" {
		return commit, true
	}
	sr := find(w.ops, 0, isRename(side+core.TmpSuffix, side))
	if sr < 0 || sr > commit {
		w.fail("sidecar %s not renamed into place before its payload", side)
		return 0, false
	}
	if w.syncing && !w.dataSynced(side+core.TmpSuffix, sr) {
		w.fail("sidecar bytes of %s not synced before its rename", side)
	}
	if w.syncing && find(w.ops[:commit], sr, isOp(OpSyncDir, dir)) < 0 {
		w.fail("no SyncDir(%s) between the sidecar rename and the payload rename of %d", dir, s)
	}
	return commit, true
}

// directCommit checks chunk s of a write with atomic=false: final names
// created directly, sidecar first, no .tmp name and no rename. It returns
// the index after the payload's last write.
func (w *writeOrder) directCommit(s uint64) (int, bool) {
	if w.o.Atomic {
		return 0, true
	}
	pay, side := w.nm.payloadName(s), w.nm.sidecarName(s)
	commit := find(w.ops, 0, isOp(OpCreate, pay))
	if commit < 0 {
		w.fail("atomic=false did not create %s", pay)
		return 0, false
	}
	if side != "" {
		if sc := find(w.ops, 0, isOp(OpCreate, side)); sc < 0 || sc > commit {
			w.fail("atomic=false: sidecar %s not written before its payload", side)
		}
	}
	for _, op := range w.ops {
		if op.Kind == OpRename || strings.HasSuffix(op.Name, core.TmpSuffix) {
			w.fail("atomic=false used a .tmp name or a rename: %v", op)
			return 0, false
		}
	}
	if w.syncing && !w.dataSynced(pay, len(w.ops)) {
		w.fail("atomic=false: payload %s not synced", pay)
	}
	return findLast(w.ops, isOp(OpWrite, pay)) + 1, true
}

// durableInOrder checks that chunk s's directory is synced after the chunk
// became visible at index commit and, with fsync=chunk, that chunks become
// durable one after the other. It returns the index of that SyncDir.
func (w *writeOrder) durableInOrder(s uint64, dir string, commit, prevDone int, more bool) (int, bool) {
	done := find(w.ops, commit, isOp(OpSyncDir, dir))
	if done < 0 {
		w.fail("no SyncDir(%s) after %d became visible", dir, s)
		return 0, false
	}
	if w.o.Fsync != core.FsyncChunk || !w.o.Atomic {
		return done, true
	}
	if done < prevDone {
		w.fail("chunk %d committed before chunk %d", s, s-1)
	}
	if more {
		// The next chunk starts only after this one is durable.
		next := strings.TrimSuffix(w.nm.payloadName(s+1), ".bin")
		if n := find(w.ops, 0, func(o Op) bool {
			return o.Kind == OpCreate && strings.HasPrefix(o.Name, next)
		}); n >= 0 && n < done {
			w.fail("fsync=chunk: chunk %d started before chunk %d was durable", s+1, s)
		}
	}
	return done, true
}

// batchSyncDirs counts the SyncDir calls of a flat atomic fsync=batch
// write: one after the sidecar renames, one after the payload renames.
func (w *writeOrder) batchSyncDirs() {
	if w.o.Fsync != core.FsyncBatch || !w.o.Atomic || w.o.ShardDepth != 0 {
		return
	}
	n := 0
	for _, op := range w.ops {
		if op.Kind == OpSyncDir {
			n++
		}
	}
	want := 1
	if w.o.MetadataExt != "" {
		want = 2
	}
	if n != want {
		w.fail("fsync=batch: a batch made %d SyncDir calls, want %d (one after the sidecar renames, one after the payload renames)", n, want)
	}
}
