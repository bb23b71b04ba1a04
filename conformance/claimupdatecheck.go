package conformance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/mqb-project/mqb/core"
)

// The claim-update checks: the PRODUCER record holds the sequence
// high-water mark, and after the spool was drained it is all that keeps a
// new producer from reusing numbers. So an update of that record that fails
// or is cut by a power failure at any of its operations must leave the
// previous record or the new one, never neither.

func claimChecks() []check {
	return []check{
		{"ClaimUpdateFaults", checkClaimFaults},
		{"ClaimUpdatePowerCut", checkClaimPowerCut},
	}
}

// claimQueries are the spool options the claim checks run under. The
// 4-digit pattern makes the reserve step 10 numbers, so that a run of
// claimRun updates the record several times while it writes.
var claimQueries = []string{
	"fsync=chunk&naming_pattern={seq:04}&shard_depth=2&shard_width=1",
	"fsync=none&naming_pattern={seq:04}",
}

// isClaimUpdateOp reports whether op is one of the operations of an update
// of the PRODUCER record (a Claim write or sync).
func isClaimUpdateOp(op Op) bool {
	return op.Name == core.ProducerFile && (op.Kind == OpWrite || op.Kind == OpSync)
}

// claimRun is the scenario: a producer writes and closes, a consumer drains,
// a second producer writes through several reserve steps and closes, and a
// consumer drains again. It notes every sequence number whose chunk file was
// ever created or renamed, and when the first record was complete.
type claimRun struct {
	o        core.Options
	layout   *core.Layout
	used     atomic.Int64 // highest sequence number a chunk file was made for, plus 1
	recorded atomic.Bool  // a complete PRODUCER record exists (the first producer opened)
}

func newClaimRun(o core.Options) *claimRun {
	l, _ := o.Layout()
	return &claimRun{o: o, layout: l}
}

// note records the sequence number of a chunk file op is about to make.
func (r *claimRun) note(op Op) {
	if op.Kind != OpCreate && op.Kind != OpRename {
		return
	}
	name := op.Name
	if op.Kind == OpRename {
		name = op.To
	}
	if seq, _, ok := r.layout.Parse(name); ok && int64(seq)+1 > r.used.Load() {
		r.used.Store(int64(seq) + 1)
	}
}

func (r *claimRun) run(ctx context.Context, fsys core.FS) error {
	for i, n := range []int{3, 25} {
		p, err := core.OpenProducer(fsys, r.o)
		if err != nil {
			return fmt.Errorf("producer %d: OpenProducer: %w", i, err)
		}
		r.recorded.Store(true)
		for k := 0; k < n; k += 3 {
			if _, err := p.Write(ctx, testMessages(fmt.Sprintf("c%d", i), k, min(3, n-k))); err != nil {
				_ = p.CloseWithError(err)
				return fmt.Errorf("producer %d: Write: %w", i, err)
			}
		}
		if err := p.Close(); err != nil {
			return fmt.Errorf("producer %d: Close: %w", i, err)
		}
		if _, err := drainAll(ctx, fsys, r.o); err != nil {
			return err
		}
	}
	return nil
}

// drainAll consumes and acks every chunk in fsys and returns the highest
// sequence number it delivered, plus 1 (0 if none).
func drainAll(ctx context.Context, fsys core.FS, o core.Options) (uint64, error) {
	co := o
	co.ExitWhenEmpty = true
	co.BadSidecar = core.BadSidecarDeliver // fsync=none: a power cut may tear a sidecar
	c, err := core.OpenConsumer(fsys, co)
	if err != nil {
		return 0, fmt.Errorf("OpenConsumer: %w", err)
	}
	var end uint64
	for {
		ds, err := c.Read(ctx, 16)
		if errors.Is(err, core.ErrEnd) {
			break
		}
		if err == nil {
			err = c.Ack(ds...)
		}
		if err != nil {
			_ = c.Close()
			return end, fmt.Errorf("drain: %w", err)
		}
		for _, d := range ds {
			end = max(end, d.Seq+1)
		}
	}
	return end, c.Close()
}

// verifyClaimState checks fsys after a failed or cut claim update: the
// PRODUCER record is readable if one was complete before, and once the spool
// is drained a new producer starts above every number used so far.
func verifyClaimState(ctx context.Context, fsys core.FS, o core.Options, used uint64, recorded bool) []string {
	var errs []string
	h, _, err := core.ReadHolder(fsys, core.ProducerFile)
	switch {
	case err != nil:
		errs = append(errs, fmt.Sprintf("ReadHolder(PRODUCER): %v", err))
	case recorded && (h == nil || h.NextSeq == nil):
		errs = append(errs, fmt.Sprintf("the PRODUCER record is unreadable (%+v): neither the old nor the new record survived", h))
	}
	end, err := drainAll(ctx, fsys, o)
	if err != nil {
		return append(errs, err.Error())
	}
	used = max(used, end)
	p, err := core.OpenProducer(fsys, o)
	if err != nil {
		return append(errs, fmt.Sprintf("OpenProducer after the drain: %v", err))
	}
	if next := p.NextSeq(); next < used {
		errs = append(errs, fmt.Sprintf("after the drain a new producer starts at %d, but %d was used: sequence numbers %d to %d would be reused",
			next, used-1, next, used-1))
	}
	if err := p.Close(); err != nil {
		errs = append(errs, fmt.Sprintf("Producer.Close: %v", err))
	}
	return errs
}

// checkClaimFaults fails the i-th operation of the PRODUCER record updates
// of claimRun, for i = 0, 1, ... until a run has no i-th such operation,
// and checks the spool after each failed run. A failed write writes half
// of its bytes first, as a full disk does.
func checkClaimFaults(t TB, e *env) {
	var runs, injected int
	for _, q := range claimQueries {
		o := spoolOptions(t, q)
		for i := 0; ; i++ {
			if i > 1000 {
				t.Fatalf("%s: still finding claim operations to fail after 1000 runs", q)
			}
			if e.ctx.Err() != nil {
				t.Fatalf("canceled after %d runs", runs)
			}
			r := newClaimRun(o)
			var seen, hit int
			var what string
			errno := []syscall.Errno{syscall.EIO, syscall.ENOSPC}[i%2]
			view := wrapFS(e.newFS(), func(op Op) error {
				r.note(op)
				if !isClaimUpdateOp(op) {
					return nil
				}
				seen++
				if seen-1 != i {
					return nil
				}
				hit++
				what = fmt.Sprintf("%s %s (claim operation #%d) failing with %v", op.Kind, op.Name, i, errno)
				return &fs.PathError{Op: op.Kind.String(), Path: op.Name, Err: &InjectedError{Op: op, Errno: errno, Nth: i}}
			})
			runs++
			err := r.run(e.ctx, view)
			if hit == 0 {
				if err != nil {
					t.Fatalf("%s: a run without any injected fault failed: %v", q, err)
				}
				break
			}
			injected++
			if err == nil {
				continue // absorbed: nothing to check beyond the clean run
			}
			if !errors.Is(err, ErrInjected) {
				t.Errorf("%s: %s: the run failed with %v, not the injected fault", q, what, err)
			}
			if errs := verifyClaimState(e.ctx, view, o, uint64(r.used.Load()), r.recorded.Load()); len(errs) > 0 {
				t.Fatalf("%s: %s, after the run failed with %v:\n  %s", q, what, err, strings.Join(errs, "\n  "))
			}
		}
	}
	atomic.AddInt64(&e.stats.FaultsInjected, int64(injected))
	t.Logf("%d claim-update faults injected in %d runs", injected, runs)
}

// checkClaimPowerCut takes, before every operation of a PRODUCER record
// update of claimRun and before the operation that follows one, the states a
// power cut would leave (with several shares of the unsynced changes
// surviving), and checks each.
func checkClaimPowerCut(t TB, e *env) {
	if crashModelOf(e.newFS()) == nil {
		t.Skipf("the FS has no crash model (implement conformance.CrashModel)")
	}
	keeps := []float64{0, 0.5, 1}
	seeds := 3
	if e.cfg.Long {
		keeps, seeds = []float64{0, 0.2, 0.5, 0.8, 1}, 8
	}
	var points, states int
	for qi, q := range claimQueries {
		o := spoolOptions(t, q)
		inner := e.newFS()
		crash := crashModelOf(inner)
		r := newClaimRun(o)
		n, after := 0, false
		hook := func(op Op) error {
			n++
			claimOp := isClaimUpdateOp(op)
			cut := claimOp || after
			after = claimOp
			r.note(op)
			if !cut {
				return nil
			}
			if e.ctx.Err() != nil {
				t.Fatalf("canceled after %d crash points", points)
			}
			points++
			for s := range seeds {
				for _, keep := range keeps {
					seed := e.cfg.Seed + int64(qi)<<32 + int64(n)<<8 + int64(s)
					states++
					errs := verifyClaimState(e.ctx, crash(seed, keep), o, uint64(r.used.Load()), r.recorded.Load())
					if len(errs) > 0 {
						t.Fatalf("%s: power cut before op %d (%s %s), seed %d, keeping %.0f%% of unsynced changes:\n  %s",
							q, n, op.Kind, op.Name, seed, keep*100, strings.Join(errs, "\n  "))
					}
				}
			}
			return nil
		}
		if err := r.run(e.ctx, wrapFS(inner, hook)); err != nil {
			t.Fatalf("%s: the run failed: %v", q, err)
		}
	}
	atomic.AddInt64(&e.stats.CrashPoints, int64(points))
	atomic.AddInt64(&e.stats.CrashStates, int64(states))
	t.Logf("%d crash points around PRODUCER record updates, %d crashed states reopened", points, states)
}
