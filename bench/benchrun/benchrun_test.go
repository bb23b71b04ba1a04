package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunReportIsWellFormed(t *testing.T) {
	cfg := Config{
		Dir:        t.TempDir(),
		Fsync:      []string{"none", "batch", "chunk"},
		BatchSizes: []int{1, 16},
		Sizes:      []int{100},
		Reads:      []string{ReadLent, ReadBytes},
		Count:      50,
		Rounds:     2,
	}
	var calls []Progress
	cfg.Progress = func(p Progress) { calls = append(calls, p) }
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	left, err := os.ReadDir(cfg.Dir)
	require.NoError(t, err)
	assert.Empty(t, left, "Run removes its trials and the directory that holds them")
	want := cfg.Cases()
	require.Len(t, want, 3*2+3*2*2, "produce cells, then consume cells in both read modes")
	require.Len(t, rep.Results, len(want))
	for i, r := range rep.Results {
		c := want[i]
		assert.Equal(t, []any{c.Op, c.Fsync, c.BatchSize, 100, c.Read, c.Name()}, []any{r.Op, r.Fsync, r.BatchSize, r.PayloadBytes, r.Read, r.Name}, "result %d", i)
		assert.Equal(t, r.Op == OpConsume, strings.HasSuffix(r.Name, "/read="+r.Read), "%s %s: the read mode is in the consume cell's name", r.Op, r.Name)
		for what, v := range map[string]float64{"msgs/s": r.MsgsPerSec, "raw msgs/s": r.RawMsgsPerSec, "x raw": r.RatioToRaw, "MB/s": r.MBPerSec, "p50": r.P50BatchMs} {
			assert.Positive(t, v, "%s %s: %s", r.Op, r.Name, what)
		}
		assert.GreaterOrEqual(t, r.P99BatchMs, r.P50BatchMs, "%s %s: p99 under p50", r.Op, r.Name)
		assert.Equal(t, 2, r.Rounds, r.Name)
		assert.Len(t, r.RoundsMsgsPerSec, 2, r.Name)
		if assert.Len(t, r.RoundsRatioToRaw, 2, r.Name) {
			mid := (r.RoundsRatioToRaw[0] + r.RoundsRatioToRaw[1]) / 2
			assert.InDelta(t, mid, r.RatioToRaw, 1e-9, "%s: x raw is the median of the rounds' ratios", r.Name)
		}
		assert.Equal(t, 50, r.Count, r.Name)
		if runtime.GOOS == "linux" {
			assert.Positive(t, r.CPURatioToRaw, "%s %s: CPU time is measured", r.Op, r.Name)
		}
		if r.Op == OpProduce && r.Fsync == "batch" {
			assert.Len(t, r.RawStrategies, 3, r.Name)
			assert.Equal(t, r.RawMsgsPerSec, r.RawStrategies[r.RawArm], "%s: the best raw strategy is the baseline", r.Name)
		} else {
			assert.Equal(t, RawArmPrefix, r.RawArm, "%s %s", r.Op, r.Name)
		}
	}
	require.Len(t, calls, len(want)*2+1, "progress calls")
	assert.Equal(t, calls[len(calls)-1].Total, calls[len(calls)-1].Done, "the last progress call")
	assert.NotEmpty(t, rep.Machine.FSType)
	assert.NotEmpty(t, rep.Machine.FSMagic)

	// JSON: one object with a results array carrying the documented keys.
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	for _, k := range []string{"op", "fsync", "batch_size", "payload_bytes", "msgs_per_sec", "mb_per_sec",
		"p50_batch_ms", "p99_batch_ms", "raw_msgs_per_sec", "ratio_to_raw"} {
		assert.Contains(t, doc.Results[0], k, "JSON result")
	}

	// Text: a header and one row per result.
	buf.Reset()
	require.NoError(t, rep.WriteText(&buf))
	assert.Contains(t, buf.String(), "msgs/s")
	assert.GreaterOrEqual(t, strings.Count(buf.String(), "produce"), 6, buf.String())
	assert.Regexp(t, `(?m)^ *consume +none +1 +100B +lent `, buf.String(), "the read column")
	assert.Regexp(t, `(?m)^ *consume +none +1 +100B +bytes `, buf.String(), "the read column")
	assert.Contains(t, buf.String(), "LendPayloadBuffers", "the read modes are explained")
	if runtime.GOOS == "linux" {
		assert.Contains(t, buf.String(), "cpu x raw", "the CPU column and its legend")
	}

	// SVG: well-formed XML with one bar per result.
	buf.Reset()
	require.NoError(t, rep.WriteSVG(&buf))
	checkXML(t, buf.Bytes())
	assert.GreaterOrEqual(t, strings.Count(buf.String(), "<rect x="), len(rep.Results), "bars")
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err, "not well-formed XML:\n%s", b)
	}
}

func TestRunRefusesBadCases(t *testing.T) {
	for _, cfg := range []Config{
		{Dir: t.TempDir(), Fsync: []string{"sometimes"}},
		{Dir: t.TempDir(), BatchSizes: []int{0}},
		{Dir: t.TempDir(), Layouts: []string{"deep"}},
		{Dir: t.TempDir(), Backends: []string{"s3"}},
		{Dir: t.TempDir(), Ops: []string{OpConsume}, Reads: []string{"mmap"}},
		{},
	} {
		_, err := Run(context.Background(), cfg)
		assert.Error(t, err, "Run(%+v)", cfg)
	}
}

func TestScaleSmoke(t *testing.T) {
	rs, err := Scale(context.Background(), ScaleConfig{Dir: t.TempDir(), Backlogs: []int{1200}, Layouts: []string{LayoutSharded, LayoutFlat},
		PayloadBytes: 100, Sidecar: true, Fsync: "none"})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Positive(t, r.ProduceUsPerMsg, "%+v", r)
		assert.Positive(t, r.DrainUsPerMsg, "%+v", r)
		assert.Positive(t, r.DrainPeakRSSMiB, "%+v", r)
	}
	assert.Equal(t, 1000*2, rs[0].ListEntries, "sharded: one leaf of 1000 chunks with sidecars")
	assert.GreaterOrEqual(t, rs[1].ListEntries, 1200*2, "flat: every chunk")
	var buf bytes.Buffer
	require.NoError(t, WriteScaleText(&buf, rs))
	assert.Contains(t, buf.String(), "drain peak")
}

func TestHandoffSmoke(t *testing.T) {
	for _, wake := range []bool{true, false} {
		r, err := Handoff(context.Background(), HandoffConfig{Dir: t.TempDir(), Count: 5, Wake: wake, PollInterval: 5 * time.Millisecond})
		require.NoError(t, err)
		assert.Equal(t, 5, r.Count)
		assert.Positive(t, r.P99FromWriteMs, "%+v", r)
		assert.GreaterOrEqual(t, r.P99FromAckMs, r.P50FromAckMs, "%+v", r)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"100", 100, false}, {"100B", 100, false}, {"1KiB", 1024, false}, {"64k", 64 << 10, false},
		{"1MiB", 1 << 20, false}, {" 2 MB", 2 << 20, false}, {"", 0, true}, {"KiB", 0, true}, {"3 parsecs", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if tc.wantErr {
			assert.Error(t, err, "ParseSize(%q)", tc.in)
			continue
		}
		assert.NoError(t, err, "ParseSize(%q)", tc.in)
		assert.Equal(t, tc.want, got, "ParseSize(%q)", tc.in)
	}
	for n, want := range map[int64]string{0: "0B", 100: "100B", 1023: "1023B", 1024: "1KiB", 64 << 10: "64KiB", 1 << 20: "1MiB",
		1500: "1.5KiB", 1536: "1.5KiB", 5_000_000: "4.8MiB", 3 << 30: "3GiB", 1<<62 + 1<<61: "6EiB", 1<<62 + 1<<59: "4.5EiB"} {
		assert.Equal(t, want, FormatSize(n), "FormatSize(%d)", n)
	}
}

func TestReportSummary(t *testing.T) {
	rep := &Report{Results: []Result{
		{Op: OpProduce, Name: "fsync=none/batch=1", RatioToRaw: 0.95},
		{Op: OpConsume, Name: "fsync=chunk/batch=256", RatioToRaw: 0.81},
		{Op: OpConsume, Name: "fsync=none/batch=1", RatioToRaw: 0.90},
		{Op: OpProduce, Name: "fsync=chunk/batch=1", RatioToRaw: 1.02},
	}}
	var buf bytes.Buffer
	rep.writeSummary(&buf)
	assert.Equal(t, "\n3 of 4 cells at 0.90 x raw or above; median 0.93; lowest 0.81 (consume fsync=chunk/batch=256)\n", buf.String(),
		"a cell under 0.90 without its rounds' ratios: nothing said of them")

	// With the rounds' ratios: a cell under 0.90 in every round, and one
	// whose median is under it but not every round.
	rep.Results[1].RoundsRatioToRaw = []float64{0.80, 0.81, 0.83}
	rep.Results = append(rep.Results, Result{Op: OpConsume, Name: "fsync=batch/batch=1", RatioToRaw: 0.88, RoundsRatioToRaw: []float64{0.91, 0.88, 0.85}})
	buf.Reset()
	rep.writeSummary(&buf)
	assert.Equal(t, "\n3 of 5 cells at 0.90 x raw or above; median 0.90; lowest 0.81 (consume fsync=chunk/batch=256)\n"+
		"of the 2 under 0.90: 1 under it in every round, 1 at or above it in some round (within this run's noise)\n", buf.String())
	assert.Equal(t, "0.85-0.91", ratioRange(rep.Results[4]))
	assert.Empty(t, ratioRange(rep.Results[0]), "no rounds' ratios, no range")

	buf.Reset()
	(&Report{Results: rep.Results[:1]}).writeSummary(&buf)
	assert.Empty(t, buf.String(), "one cell needs no summary")
}

// TestStepOrderBalancesPlacesAndPredecessors runs steps of trials of 1 to
// 6 arms, starting anywhere in the sequence: every step must run each arm
// once, and every blockSteps(n) steps in a row must put each arm in each
// place as often, and right after each other arm as often within the
// steps, since both an arm's place and the arm before it change what it
// measures.
func TestStepOrderBalancesPlacesAndPredecessors(t *testing.T) {
	for n := 1; n <= 6; n++ {
		block := blockSteps(n)
		for start := range block {
			tu := &turns{steps: start}
			order := make([]int, n)
			places := map[[2]int]int{}  // [place, arm]
			follows := map[[2]int]int{} // [arm before, arm]
			for range block {
				tu.steps++
				tu.stepOrder(order)
				seen := make([]bool, n)
				for j, i := range order {
					require.False(t, seen[i], "n=%d: arm %d twice in one step %v", n, i, order)
					seen[i] = true
					places[[2]int{j, i}]++
					if j > 0 {
						follows[[2]int{order[j-1], i}]++
					}
				}
			}
			require.Len(t, places, n*n, "n=%d: every arm in every place", n)
			for pa, c := range places {
				assert.Equal(t, block/n, c, "n=%d from step %d: arm %d in place %d", n, start, pa[1], pa[0])
			}
			require.Len(t, follows, n*(n-1), "n=%d: every arm right after every other", n)
			for pair, c := range follows {
				assert.Equal(t, block/n, c, "n=%d from step %d: arm %d after arm %d", n, start, pair[1], pair[0])
			}
		}
	}
}

// TestTwoArmsTakeTurns: with two arms the steps alternate, B A first, as
// they did before the Williams design, so that older reports compare.
func TestTwoArmsTakeTurns(t *testing.T) {
	tu := &turns{}
	var got [][]int
	for range 4 {
		tu.steps++
		order := make([]int, 2)
		tu.stepOrder(order)
		got = append(got, order)
	}
	assert.Equal(t, [][]int{{1, 0}, {0, 1}, {1, 0}, {0, 1}}, got)
}

// TestRoundsTakeTurnsAtTheirEnds runs rounds of one, two and three steps
// as measure.round does, each a fresh trial: whatever the steps of a
// round, the arm that runs first in it, and the one that runs last, must
// alternate from round to round, B A first as before.
func TestRoundsTakeTurnsAtTheirEnds(t *testing.T) {
	c := Case{Op: OpProduce, Fsync: "none", BatchSize: 4, PayloadBytes: 16, Layout: LayoutFlat, Backend: "os"}
	for steps := 1; steps <= 3; steps++ {
		var firsts, lasts []int
		for r := range 4 {
			tr, err := newTrial(t.TempDir(), c, roundTurns(r))
			require.NoError(t, err)
			for s := range steps {
				_, err := tr.Step(c.BatchSize, nil)
				require.NoError(t, err)
				if s == 0 {
					firsts = append(firsts, tr.order[0])
				}
			}
			lasts = append(lasts, tr.order[len(tr.order)-1])
			require.NoError(t, tr.Close())
		}
		assert.Equal(t, []int{1, 0, 1, 0}, firsts, "%d steps a round: the first arm of each round", steps)
		if steps%2 == 0 {
			assert.Equal(t, []int{1, 0, 1, 0}, lasts, "%d steps a round: the last arm of each round", steps)
		} else {
			assert.Equal(t, []int{0, 1, 0, 1}, lasts, "%d steps a round: the last arm of each round", steps)
		}
	}
}

// TestArmDirsMadeInTurn makes the arms' directories of rounds in a row:
// the arm whose directory is made last, whose files spill furthest on
// ext4, must take turns like the arm that runs last, so that over a block
// of rounds each arm is made last once.
func TestArmDirsMadeInTurn(t *testing.T) {
	for _, names := range [][]string{{"raw0", "spool"}, {"raw0", "raw1", "raw2", "spool"}} {
		var lastMade []int
		for r := range 2 * len(names) {
			tr := &Trial{dir: t.TempDir(), turns: roundTurns(r)}
			dirs, made, err := tr.makeArmDirs(names)
			require.NoError(t, err)
			for i, d := range dirs {
				assert.Equal(t, filepath.Join(tr.dir, names[i]), d)
				assert.DirExists(t, d)
			}
			lastMade = append(lastMade, made[len(made)-1])
		}
		for arm := range names {
			assert.Equal(t, 2, countOf(lastMade, arm), "%d arms: arm %d made last in two of %d rounds (%v)", len(names), arm, len(lastMade), lastMade)
		}
	}
}

// TestPageBytes checks what a produce trial touches before its steps:
// whole pages for each payload and sidecar, on every arm.
func TestPageBytes(t *testing.T) {
	page := int64(os.Getpagesize())
	small := &Trial{c: Case{PayloadBytes: 1024, Sidecar: true}, arms: make([]*arm, 4)}
	assert.Equal(t, 10*4*2*page, small.pageBytes(10))
	large := &Trial{c: Case{PayloadBytes: 1 << 20}, arms: make([]*arm, 2)}
	assert.Equal(t, int64(3*2<<20), large.pageBytes(3))
	odd := &Trial{c: Case{PayloadBytes: int(page) + 1}, arms: make([]*arm, 1)}
	assert.Equal(t, 2*page, odd.pageBytes(1))
}

func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// TestFillInterleavesBacklogs fills three arms through fakes that log each
// write: every arm gets the whole backlog, in parts of at most fillPart,
// and each turn writes one part per arm, starting with the next arm, so
// that no arm's backlog is written before the others'.
func TestFillInterleavesBacklogs(t *testing.T) {
	type write struct{ arm, n int }
	var log []write
	tr := &Trial{c: Case{Op: OpConsume}}
	ready := make([]bool, 3)
	for i := range 3 {
		tr.arms = append(tr.arms, &arm{name: fmt.Sprint("arm", i), openFill: func() (*armFill, error) {
			return &armFill{
				write: func(n int) error { log = append(log, write{i, n}); return nil },
				close: func() error { return nil },
				ready: func() error { ready[i] = true; return nil },
			}, nil
		}})
	}
	const n = 3*fillPart + 10
	require.NoError(t, tr.Fill(n))
	assert.Equal(t, []bool{true, true, true}, ready, "every arm is readied")
	total := make([]int, 3)
	for turn := 0; turn*3 < len(log); turn++ {
		part := log[turn*3 : turn*3+3]
		for j, w := range part {
			assert.Equal(t, (j+turn)%3, w.arm, "turn %d: %v", turn, part)
			assert.LessOrEqual(t, w.n, fillPart)
			total[w.arm] += w.n
		}
	}
	assert.Equal(t, []int{n, n, n}, total, "messages per arm")
	assert.Len(t, log, 3*4, "four turns of three parts")
}
