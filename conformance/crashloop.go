package conformance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/mqb-project/mqb/core"
)

func powerCutChecks() []check {
	return []check{
		{"PowerCutChunk", func(t TB, e *env) { checkPowerCut(t, e, "fsync=chunk") }},
		{"PowerCutBatch", func(t TB, e *env) { checkPowerCut(t, e, "fsync=batch") }},
		{"PowerCutNone", func(t TB, e *env) { checkPowerCut(t, e, "fsync=none") }},
		{"PowerCutNonAtomic", func(t TB, e *env) { checkPowerCut(t, e, "fsync=chunk&atomic=false") }},
	}
}

// powerCutRules is the durability table: what a spool may show after a
// power cut (keep < 1) or a crash of the process alone (keep == 1).
func powerCutRules(o core.Options, keep float64) rules {
	r := rules{tearUnacked: !o.Atomic}
	if o.Fsync == core.FsyncNone && keep < 1 {
		// fsync=none promises nothing across a power cut: acknowledged
		// chunks may be lost or torn, consumed ones may come back. What
		// is left is still delivered in order, never twice, and the
		// sequence is never reused.
		r.mayLose, r.mayTear, r.mayResurrect = true, true, true
	}
	return r
}

// checkPowerCut runs the workload on an FS with a crash model and, at every
// k-th operation and at seeded random ones, takes the state a power cut
// would leave just before that operation, with several shares of the
// unsynced changes surviving, reopens the spool on it and checks the
// durability table.
func checkPowerCut(t TB, e *env, q string) {
	if crashModelOf(e.newFS()) == nil {
		t.Skipf("the FS has no crash model (implement conformance.CrashModel)")
	}
	seeds, total, stride, random := 2, 20, 4, 0.03
	keeps := []float64{0, 0.5, 1}
	if e.cfg.Long {
		seeds, total, stride, random = 6, 40, 1, 0
		keeps = []float64{0, 0.2, 0.5, 0.8, 1}
	}
	var points, states, lost, torn, tornSidecars, resurrected, failures int
	for s := range seeds {
		layout := "&shard_depth=2&shard_width=1&naming_pattern={seq:04}"
		if s%2 == 1 {
			layout = ""
		}
		o := spoolOptions(t, q+layout)
		seed := e.cfg.Seed + int64(s)
		inner := e.newFS()
		crash := crashModelOf(inner)
		w := newWorkload(o, total, seed, "p")
		rng := rand.New(rand.NewPCG(uint64(seed), 6))
		n := 0
		hook := func(op Op) error {
			n++
			if n%stride != 0 && rng.Float64() >= random {
				return nil
			}
			if e.ctx.Err() != nil {
				t.Fatalf("canceled after %d crash points", points)
			}
			points++
			for _, keep := range keeps {
				after := crash(seed<<20+int64(n), keep)
				rep, errs := verifyReopen(e.ctx, after, o, w.m, powerCutRules(o, keep))
				states++
				lost += rep.lost
				torn += rep.torn
				tornSidecars += rep.tornSidecars
				resurrected += rep.resurrected
				if len(errs) > 0 {
					t.Errorf("%s%s seed %d: power cut before op %d (%s %s), keeping %.0f%% of unsynced changes:\n  %s",
						q, layout, seed, n, op.Kind, op.Name, keep*100, strings.Join(errs, "\n  "))
					if failures++; failures >= 5 {
						t.Fatalf("stopping after 5 failing crash points")
					}
				}
			}
			return nil
		}
		if err := w.run(e.ctx, wrapFS(inner, hook)); err != nil {
			t.Fatalf("%s seed %d: the workload failed: %v", q, seed, err)
		}
	}
	atomic.AddInt64(&e.stats.CrashPoints, int64(points))
	atomic.AddInt64(&e.stats.CrashStates, int64(states))
	note := ""
	if lost+torn+tornSidecars+resurrected > 0 {
		note = fmt.Sprintf("; allowed by %s: %d acknowledged messages lost, %d torn payloads, %d torn sidecars, %d consumed messages back",
			q, lost, torn, tornSidecars, resurrected)
	}
	every := "before every operation"
	if stride > 1 {
		every = fmt.Sprintf("before every %dth operation and %.0f%% of the others", stride, random*100)
	}
	t.Logf("%s: %d crash points explored, %d crashed states reopened (%d seeds, %s, keeping %v of the unsynced changes)%s",
		q, points, states, seeds, every, keeps, note)
}
