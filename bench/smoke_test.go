package bench

import (
	"testing"

	"github.com/mqb-project/mqb/bench/benchrun"
)

// TestBenchmarkMatrixSmoke pushes a few messages through every case of the
// benchmark matrix, so that CI exercises each benchmark's code path without
// timing anything.
func TestBenchmarkMatrixSmoke(t *testing.T) {
	dir := t.TempDir()
	for _, op := range []string{benchrun.OpProduce, benchrun.OpConsume} {
		for _, c := range matrix(op) {
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
