package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/mqb-project/mqb/core"
)

// faultKinds are the operations FaultInjection fails, each in turn.
var faultKinds = []OpKind{OpCreate, OpWrite, OpSync, OpSyncDir, OpRename, OpRemove, OpMkdir, OpLock,
	OpClose, OpOpen, OpRead, OpReadDir, OpStat, OpRelease}

func faultChecks() []check {
	return []check{
		{"FaultInjectionChunk", func(t TB, e *env) { checkFaults(t, e, "fsync=chunk") }},
		{"FaultInjectionBatch", func(t TB, e *env) { checkFaults(t, e, "fsync=batch") }},
		{"FaultInjectionNone", func(t TB, e *env) { checkFaults(t, e, "fsync=none") }},
		{"FaultInjectionNonAtomic", func(t TB, e *env) { checkFaults(t, e, "fsync=chunk&atomic=false") }},
		{"FaultInjectionFailedSyncStops", checkFailedSyncStops},
	}
}

// checkFailedSyncStops fails the sync of one chunk file under each policy
// that syncs files one by one: after a failed fsync nobody knows what the
// page cache still holds, so the producer must fail that write and every
// later one (core.ErrProducerFailed), and the failed chunk must not be
// visible.
func checkFailedSyncStops(t TB, e *env) {
	for _, q := range []string{"fsync=chunk", "fsync=chunk&atomic=false"} {
		ff := NewFaultFS(e.newFS())
		p, err := core.OpenProducer(ff.FS(), spoolOptions(t, q))
		noErr(t, "OpenProducer", err)
		_, err = p.Write(e.ctx, testMessages("a", 0, 2))
		noErr(t, "Write", err)
		ff.Fail(OpSync, 0, syscall.EIO)
		_, err = p.Write(e.ctx, testMessages("b", 0, 1))
		if !errors.Is(err, ErrInjected) || !errors.Is(err, core.ErrProducerFailed) {
			t.Errorf("%s: Write with a failing fsync = %v, want the injected error and ErrProducerFailed", q, err)
		}
		if ff.Injected() != 1 {
			t.Fatalf("%s: the fsync fault was not reached (%d injected)", q, ff.Injected())
		}
		if _, err := p.Write(e.ctx, testMessages("c", 0, 1)); !errors.Is(err, core.ErrProducerFailed) {
			t.Errorf("%s: Write after a failed fsync = %v, want ErrProducerFailed", q, err)
		}
		p.Close()
		if left := chunkFiles(tree(t, ff.FS())); len(left) != 2*2 {
			t.Errorf("%s: after a failed fsync the spool holds %q, want the first 2 chunks only", q, left)
		}
	}
}

// checkFaults fails operation i of each kind, for i = 0, 1, ... until a run
// of the workload meets no fault, and after every failed run checks that a
// reopened producer and consumer recover: nothing acknowledged is lost, no
// partial payload is visible, nothing is delivered that the producer did
// not acknowledge, and sequence numbers are not reused.
func checkFaults(t TB, e *env, q string) {
	o := spoolOptions(t, q+"&naming_pattern={seq:04}&shard_depth=2&shard_width=1")
	total := 12
	errnos := func(i int) []syscall.Errno { return []syscall.Errno{[]syscall.Errno{syscall.EIO, syscall.ENOSPC}[i%2]} }
	if e.cfg.Long {
		total = 30
		errnos = func(int) []syscall.Errno { return []syscall.Errno{syscall.EIO, syscall.ENOSPC} }
	}
	var runs, injected, absorbed int
	var perKind []string
	failures := 0
	for _, kind := range faultKinds {
		kindFaults := 0
	next:
		for i := 0; ; i++ {
			if i > 5000 {
				t.Fatalf("%s: still finding %s operations to fail after 5000 runs", q, kind)
			}
			for _, errno := range errnos(i) {
				if e.ctx.Err() != nil {
					t.Fatalf("canceled after %d runs", runs)
				}
				ff := NewFaultFS(e.newFS())
				ff.Fail(kind, i, errno)
				w := newWorkload(o, total, e.cfg.Seed+int64(i), "f")
				err := w.run(e.ctx, ff.FS())
				runs++
				ff.Disarm()
				what := fmt.Sprintf("%s: %s #%d failing with %v", q, kind, i, errno)
				if ff.Injected() == 0 {
					w.abandon()
					if err != nil {
						t.Fatalf("%s: a run without any injected fault failed: %v", what, err)
					}
					checkCleanRun(t, what, w.m, ff.FS(), o)
					break next
				}
				injected++
				kindFaults++
				if err == nil {
					// The fault was absorbed (a retried read, a best-effort
					// cleanup): the run must still be complete.
					absorbed++
					checkCleanRun(t, what, w.m, ff.FS(), o)
					continue
				}
				if !errors.Is(err, ErrInjected) {
					t.Errorf("%s: the run failed with %v, which is not the injected fault %v", what, err, ff.Last())
				}
				w.abandon()
				_, errs := verifyReopen(e.ctx, ff.FS(), o, w.m, rules{unackedGone: true})
				if len(errs) > 0 {
					t.Errorf("%s: after the run failed with %v:\n  %s", what, err, strings.Join(errs, "\n  "))
					if failures++; failures >= 5 {
						t.Fatalf("stopping after 5 failing fault points")
					}
				}
			}
		}
		perKind = append(perKind, fmt.Sprintf("%s=%d", kind, kindFaults))
	}
	atomic.AddInt64(&e.stats.FaultsInjected, int64(injected))
	t.Logf("%s: %d faults injected in %d runs (%d absorbed without an error); per kind: %s",
		q, injected, runs, absorbed, strings.Join(perKind, " "))
}

// checkCleanRun checks a workload that returned no error: everything it
// wrote was acknowledged, delivered and consumed, and nothing is left.
func checkCleanRun(t TB, what string, m *model, fsys core.FS, o core.Options) {
	t.Helper()
	for s, msg := range m.sent {
		if !m.acked[s] || !m.consumed[s] {
			t.Errorf("%s: the run succeeded but %s (sequence %d) was acknowledged %v, consumed %v", what, msg.ID, s, m.acked[s], m.consumed[s])
			return
		}
	}
	st, err := core.Scan(context.Background(), fsys, o)
	if err != nil {
		t.Errorf("%s: Scan: %v", what, err)
	} else if st.Chunks != 0 || st.Tmp != 0 || st.Orphans != 0 {
		t.Errorf("%s: after a complete run the spool holds %d chunks, %d .tmp files, %d orphan sidecars", what, st.Chunks, st.Tmp, st.Orphans)
	}
}
