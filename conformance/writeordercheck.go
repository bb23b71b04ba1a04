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
	for _, policy := range []string{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
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
