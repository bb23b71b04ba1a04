package bench

import (
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bench/benchrun"
)

// smokeCases is a slice of the benchmark matrix that reaches every code
// path: every fsync policy and batch size with the defaults (1 KiB, sidecar
// on, flat, os), and every other size, sidecar, layout and backend value
// once.
func smokeCases(op string) []benchrun.Case {
	var out []benchrun.Case
	for _, c := range matrix(op) {
		odd := 0
		if c.PayloadBytes != 1<<10 {
			odd++
		}
		if !c.Sidecar {
			odd++
		}
		if c.Layout != benchrun.LayoutFlat {
			odd++
		}
		if c.Backend != osfs.Name {
			odd++
		}
		if odd == 0 || (odd == 1 && c.Fsync == "batch" && c.BatchSize == 16) {
			out = append(out, c)
		}
	}
	return out
}

// TestBenchmarkMatrixSmoke pushes a few messages through a slice of the
// benchmark matrix that covers every code path, so that CI exercises the
// benchmarks without timing anything.
func TestBenchmarkMatrixSmoke(t *testing.T) {
	dir := t.TempDir()
	for _, op := range []string{benchrun.OpProduce, benchrun.OpConsume} {
		cases := smokeCases(op)
		if len(cases) != 3*3+3+1+1+1 {
			t.Fatalf("%d smoke cases for %s", len(cases), op)
		}
		for _, c := range cases {
			n := 3
			if c.PayloadBytes >= 1<<20 {
				n = 1
			}
			r := measureCase(t, dir, c, n, nil)
			if len(r.sums) < 2 || r.arms[len(r.arms)-1] != benchrun.ArmSpool {
				t.Fatalf("%s %s: arms %v", op, c.Name(), r.arms)
			}
			for i, d := range r.sums {
				if d <= 0 {
					t.Errorf("%s %s: arm %s took %v", op, c.Name(), r.arms[i], d)
				}
			}
		}
	}
}
