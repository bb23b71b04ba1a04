package benchrun

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAutoCount(t *testing.T) {
	kib := func(n, batch int) Case { return Case{BatchSize: batch, PayloadBytes: n << 10} }
	for _, tc := range []struct {
		what   string
		c      Case
		perMsg time.Duration
		want   int
	}{
		{"1 KiB drained at 25us: 250ms of them", kib(1, 1), 25 * time.Microsecond, 10000},
		{"rounded up to whole batches", kib(1, 256), 25 * time.Microsecond, 10240},
		{"a slow disk: the fewest", kib(1, 1), 2 * time.Millisecond, autoMinCount},
		{"a slow disk at batch 256: four batches", kib(1, 256), 2 * time.Millisecond, 4 * 256},
		{"a fast loop: the most", kib(1, 1), 10 * time.Nanosecond, autoMaxCount},
		{"1 MiB: at most 1 GiB", kib(1024, 1), 50 * time.Microsecond, 1024},
		{"1 MiB at batch 256: four batches are 1 GiB", kib(1024, 256), time.Second, 1024},
		{"16 MiB at batch 256: one batch, above 1 GiB", kib(16<<10, 256), time.Second, 256},
		{"16 MiB at batch 1: 1 GiB", kib(16<<10, 1), time.Second, 64},
		{"not measured: the most", kib(64, 16), 0, 16384},
	} {
		got := autoCount(tc.c, 2, tc.perMsg, DefaultRoundTime)
		assert.Equal(t, tc.want, got, tc.what)
		assert.Zero(t, got%tc.c.BatchSize, "%s: whole batches", tc.what)
	}
}

// TestAutoCountWholeBlocks: with more than two arms a round holds whole
// blocks of the arms' turns where the bounds allow, so that each arm runs
// in each place of a step as often in every round.
func TestAutoCountWholeBlocks(t *testing.T) {
	kib := func(n, batch int) Case { return Case{BatchSize: batch, PayloadBytes: n << 10} }
	for _, tc := range []struct {
		what   string
		c      Case
		arms   int
		perMsg time.Duration
		want   int
	}{
		{"two arms: an odd count of steps made even", kib(1, 1), 2, 25*time.Microsecond + 1, 10000},
		{"four arms: 4 batches of 256 are one block", kib(1, 256), 4, 2 * time.Millisecond, 4 * 256},
		{"four arms: 41 batches become 44", kib(1, 256), 4, 24 * time.Microsecond, 44 * 256},
		{"three arms: blocks of 6 steps", kib(1, 256), 3, 2 * time.Millisecond, 6 * 256},
		{"five arms: blocks of 10", kib(1, 1), 5, 2 * time.Millisecond, 260},
		{"three arms at 1 MiB, batch 256: 4 batches are 1 GiB, no block fits", kib(1024, 256), 3, time.Second, 1024},
		{"three arms at the most: down to whole blocks", kib(1, 1), 3, 10 * time.Nanosecond, autoMaxCount / 6 * 6},
		{"three arms at 4 MiB: whole blocks would be under the fewest", kib(4096, 1), 3, time.Second, autoMinCount},
	} {
		got := autoCount(tc.c, tc.arms, tc.perMsg, DefaultRoundTime)
		assert.Equal(t, tc.want, got, tc.what)
	}
}

func TestPilotCount(t *testing.T) {
	kib := func(n, batch int) Case { return Case{BatchSize: batch, PayloadBytes: n << 10} }
	assert.Equal(t, autoMinCount, pilotCount(kib(1, 1), 0), "auto: the fewest")
	assert.Equal(t, 256, pilotCount(kib(1, 256), 0), "one batch, not the four of a round")
	assert.Equal(t, 512, pilotCount(kib(1, 512), 0), "one batch, above the fewest")
	assert.Equal(t, 256, pilotCount(kib(1024, 256), 0), "1 MiB: one batch, under 1 GiB")
	assert.Equal(t, 64, pilotCount(kib(16<<10, 1), 0), "16 MiB: 1 GiB")
	assert.Equal(t, 128, pilotCount(kib(1, 256), 128), "never more than a fixed round")
	assert.Equal(t, autoMinCount, pilotCount(kib(1, 1), 4096), "a fixed round: the fewest")
}

// TestRunSizesRoundsByTime runs one case with auto counts: the pilot sets
// a count, every round has it, and the report says what rounds were sized
// for. A round time of 1ns asks for the fewest messages.
func TestRunSizesRoundsByTime(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), Ops: []string{OpProduce, OpConsume}, Fsync: []string{"none"},
		BatchSizes: []int{16}, Sizes: []int{100}, Rounds: 2}
	for _, tc := range []struct {
		roundTime time.Duration
		check     func(n int)
	}{
		{time.Nanosecond, func(n int) { assert.Equal(t, autoMinCount, n) }},
		{40 * time.Millisecond, func(n int) {
			assert.GreaterOrEqual(t, n, autoMinCount)
			assert.LessOrEqual(t, n, autoMaxCount)
			assert.Zero(t, n%16, "whole batches")
		}},
	} {
		cfg.RoundTime = tc.roundTime
		rep, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		assert.Zero(t, rep.Count, "no one count for the run")
		assert.Equal(t, tc.roundTime.String(), rep.RoundTime)
		require.Len(t, rep.Results, 2)
		for _, r := range rep.Results {
			tc.check(r.Count)
			assert.Len(t, r.RoundsMsgsPerSec, 2, r.Name)
		}
		var buf bytes.Buffer
		require.NoError(t, rep.WriteText(&buf))
		assert.Contains(t, buf.String(), "sized for rounds of "+tc.roundTime.String())
	}
}

// TestRoundsStartWarm: a round's timed steps are its count's batches, after
// (for a consume case) one more batch through every arm that is not timed;
// a consume case cannot warm before its backlog is filled, and a produce
// case is not warmed at all.
func TestRoundsStartWarm(t *testing.T) {
	for _, op := range []string{OpProduce, OpConsume} {
		c := Case{Op: op, Fsync: "none", BatchSize: 16, PayloadBytes: 100, Layout: LayoutFlat, Backend: "os", Read: ReadLent}
		if op == OpProduce {
			c.Read = ""
		}
		tt, err := runTrial(context.Background(), t.TempDir(), c, 48, &turns{})
		require.NoError(t, err, op)
		for i, arm := range tt.arms {
			assert.Len(t, tt.steps[i], 3, "%s %s: the timed steps are the count's batches", op, arm)
		}
	}
	c := Case{Op: OpConsume, Fsync: "none", BatchSize: 16, PayloadBytes: 100, Layout: LayoutFlat, Backend: "os", Read: ReadLent}
	tr, err := NewTrial(t.TempDir(), c)
	require.NoError(t, err)
	defer tr.Close()
	assert.ErrorContains(t, tr.Warm(16), "Fill must be called before Warm")

	c.Op, c.Read = OpProduce, ""
	pr, err := NewTrial(t.TempDir(), c)
	require.NoError(t, err)
	defer pr.Close()
	require.NoError(t, pr.Warm(16))
	entries, err := os.ReadDir(pr.Dir() + "/spool")
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".bin", "a produce case writes nothing to warm up")
	}
}
