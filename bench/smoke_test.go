package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		require.Len(t, cases, 3*3+3+1+1+1, "smoke cases for %s", op)
		for _, c := range cases {
			n := 3
			if c.PayloadBytes >= 1<<20 {
				n = 1
			}
			r := measureCase(t, dir, c, n, nil)
			require.GreaterOrEqual(t, len(r.sums), 2, "%s %s: arms %v", op, c.Name(), r.arms)
			require.Equal(t, benchrun.ArmSpool, r.arms[len(r.arms)-1], "%s %s: the last arm", op, c.Name())
			for i, d := range r.sums {
				assert.Positive(t, d, "%s %s: arm %s", op, c.Name(), r.arms[i])
			}
		}
	}
}
