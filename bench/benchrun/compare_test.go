package benchrun

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two small reports as mqb bench --json writes them: one cell that got
// clearly faster, one whose rounds overlap, one dropped and one added.
const oldReportJSON = `{"count": 10, "rounds": 3, "results": [
 {"name": "fsync=none/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "produce",
  "msgs_per_sec": 1000, "ratio_to_raw": 0.80, "rounds_msgs_per_sec": [950, 1000, 1050]},
 {"name": "fsync=none/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "consume",
  "msgs_per_sec": 2000, "ratio_to_raw": 0.70, "rounds_msgs_per_sec": [1800, 2000, 2200]},
 {"name": "fsync=chunk/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "produce",
  "msgs_per_sec": 300, "ratio_to_raw": 0.90, "rounds_msgs_per_sec": [290, 300, 310]}
]}`

const newReportJSON = `{"count": 10, "rounds": 3, "results": [
 {"name": "fsync=none/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "produce",
  "msgs_per_sec": 1500, "ratio_to_raw": 0.95, "rounds_msgs_per_sec": [1400, 1500, 1600]},
 {"name": "fsync=none/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "consume",
  "msgs_per_sec": 2100, "ratio_to_raw": 0.72, "rounds_msgs_per_sec": [2150, 2100, 2400]},
 {"name": "fsync=batch/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os", "op": "produce",
  "msgs_per_sec": 500, "ratio_to_raw": 0.85, "rounds_msgs_per_sec": [480, 500, 520]}
]}`

func TestCompareMatchesCellsAndMarksNoise(t *testing.T) {
	old, err := ReadReport(strings.NewReader(oldReportJSON))
	require.NoError(t, err)
	cur, err := ReadReport(strings.NewReader(newReportJSON))
	require.NoError(t, err)

	c := Compare(old, cur)
	require.Len(t, c.Deltas, 2)
	faster, same := c.Deltas[0], c.Deltas[1]
	assert.Equal(t, []any{"produce", 1000.0, 1500.0, 0.80, 0.95, false},
		[]any{faster.Op, faster.OldMsgsPerSec, faster.NewMsgsPerSec, faster.OldRatio, faster.NewRatio, faster.Noise})
	assert.InDelta(t, 0.5, faster.Change, 1e-9)
	assert.Equal(t, "consume", same.Op)
	assert.InDelta(t, 0.05, same.Change, 1e-9)
	assert.True(t, same.Noise, "2150..2400 overlaps 1800..2200")
	assert.Equal(t, []string{"produce fsync=chunk/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os"}, c.OnlyOld)
	assert.Equal(t, []string{"produce fsync=batch/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os"}, c.OnlyNew)

	var buf bytes.Buffer
	require.NoError(t, c.WriteText(&buf))
	lines := strings.Split(buf.String(), "\n")
	assert.Regexp(t, `^ *produce +fsync=none/\S+ +1000 +1500 +\+50\.0% +0\.80 +0\.95 *$`, lines[1])
	assert.Regexp(t, `^ *consume +fsync=none/\S+ +2000 +2100 +\+5\.0% +~ +0\.70 +0\.72 *$`, lines[2])
	assert.Equal(t, CompareSummary{Cells: 2, MeanRatioChange: c.Summary.MeanRatioChange,
		SDRatioChange: c.Summary.SDRatioChange, Faster: 1}, c.Summary)
	assert.InDelta(t, (0.15+0.02)/2, c.Summary.MeanRatioChange, 1e-9)
	assert.InDelta(t, math.Sqrt(2*0.065*0.065), c.Summary.SDRatioChange, 1e-9)
	assert.Contains(t, buf.String(), "2 cells in both runs: x raw changed by +0.085 on average (standard deviation 0.092); "+
		"msgs/s 1 faster and 0 slower beyond the rounds' scatter, 1 within it")
	assert.Contains(t, buf.String(), "only in the earlier run: produce fsync=chunk/")
	assert.Contains(t, buf.String(), "only in this run: produce fsync=batch/")
}

// TestCompareReadModes matches a consume cell of a report from before read
// modes (a new []byte per payload) with the read=bytes cell, not the
// read=lent one.
func TestCompareReadModes(t *testing.T) {
	old, err := ReadReport(strings.NewReader(oldReportJSON))
	require.NoError(t, err)
	name := "fsync=none/batch=1/size=1KiB/sidecar=on/layout=flat/backend=os"
	cur := &Report{Results: []Result{
		{Op: OpConsume, Name: name + "/read=lent", Read: ReadLent, MsgsPerSec: 3000},
		{Op: OpConsume, Name: name + "/read=bytes", Read: ReadBytes, MsgsPerSec: 2000},
	}}
	c := Compare(old, cur)
	require.Len(t, c.Deltas, 1)
	assert.Equal(t, name+"/read=bytes", c.Deltas[0].Name)
	assert.Equal(t, []string{"consume " + name + "/read=lent"}, c.OnlyNew)
}

// A cell that got slower beyond the rounds' scatter counts as slower, and
// one cell alone has no spread.
func TestSummarize(t *testing.T) {
	s := summarize([]Delta{{OldRatio: 0.9, NewRatio: 0.8, Change: -0.2}})
	assert.Equal(t, 1, s.Slower)
	assert.InDelta(t, -0.1, s.MeanRatioChange, 1e-9)
	assert.Zero(t, s.SDRatioChange)
	assert.Equal(t, CompareSummary{}, summarize(nil))
}

func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want bool
	}{
		{"disjoint, b above", []float64{1, 2}, []float64{3, 4}, false},
		{"disjoint, b below", []float64{5, 6}, []float64{3, 4}, false},
		{"touching", []float64{1, 3}, []float64{3, 4}, true},
		{"nested", []float64{1, 9}, []float64{4, 5}, true},
		{"no rounds recorded", nil, []float64{3, 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, overlap(tc.a, tc.b))
		})
	}
}

func TestReadReportRefusesWhatIsNotAReport(t *testing.T) {
	for _, in := range []string{`not json`, `{"scale": []}`} {
		_, err := ReadReport(strings.NewReader(in))
		assert.Error(t, err, in)
	}
}
