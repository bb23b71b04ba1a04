package benchrun

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Delta is one cell of a run compared with the same cell (same op and case
// name) of an earlier run.
type Delta struct {
	Op   string `json:"op"`
	Name string `json:"name"`

	OldMsgsPerSec float64 `json:"old_msgs_per_sec"`
	NewMsgsPerSec float64 `json:"new_msgs_per_sec"`
	// Change is new msgs/s over old msgs/s minus one: +0.10 is 10% faster.
	Change float64 `json:"change"`
	// OldRatio and NewRatio are each run's ratio to its own raw baseline;
	// a change in msgs/s with an unchanged ratio was the machine (kernel,
	// mount options, load), a change in the ratio was the spool.
	OldRatio float64 `json:"old_ratio_to_raw"`
	NewRatio float64 `json:"new_ratio_to_raw"`
	// Noise is true when the ranges of the two runs' per-round msgs/s
	// overlap: the change is within what the rounds already scatter.
	Noise bool `json:"noise"`
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Deltas  []Delta        `json:"deltas"`
	Summary CompareSummary `json:"summary"`
	// OnlyOld and OnlyNew name the cells ("op name") measured in one run
	// but not the other.
	OnlyOld []string `json:"only_old,omitempty"`
	OnlyNew []string `json:"only_new,omitempty"`
}

// CompareSummary sums up the cells measured in both runs. One cell's
// ratio moves by several points from run to run on a busy machine; the
// mean change over many cells shows a shift that no single cell can.
type CompareSummary struct {
	Cells int `json:"cells"`
	// MeanRatioChange is the mean of new minus old ratio to raw, and
	// SDRatioChange the standard deviation of those changes across the
	// cells (0 for fewer than two).
	MeanRatioChange float64 `json:"mean_ratio_change"`
	SDRatioChange   float64 `json:"sd_ratio_change"`
	// Faster and Slower count the cells whose msgs/s changed beyond the
	// rounds' scatter (Noise false); the rest are within it.
	Faster int `json:"faster"`
	Slower int `json:"slower"`
}

// summarize sums up deltas.
func summarize(deltas []Delta) CompareSummary {
	s := CompareSummary{Cells: len(deltas)}
	if len(deltas) == 0 {
		return s
	}
	for _, d := range deltas {
		s.MeanRatioChange += d.NewRatio - d.OldRatio
		switch {
		case d.Noise:
		case d.Change > 0:
			s.Faster++
		case d.Change < 0:
			s.Slower++
		}
	}
	s.MeanRatioChange /= float64(len(deltas))
	if len(deltas) > 1 {
		var sq float64
		for _, d := range deltas {
			dev := d.NewRatio - d.OldRatio - s.MeanRatioChange
			sq += dev * dev
		}
		s.SDRatioChange = math.Sqrt(sq / float64(len(deltas)-1))
	}
	return s
}

// ReadReport reads a report written by Report.WriteJSON (mqb bench --json).
func ReadReport(r io.Reader) (*Report, error) {
	var rep Report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("benchrun: read report: %w", err)
	}
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("benchrun: read report: no results (want the output of mqb bench --json)")
	}
	return &rep, nil
}

// Compare matches the cells of cur against those of old by op and case name,
// in the order of cur. A consume cell of a report from before lent buffers
// (no read= in its name) read a new []byte per payload: it matches the
// read=bytes cell.
func Compare(old, cur *Report) Comparison {
	key := func(x Result) string {
		if x.Op == OpConsume && x.Read == "" {
			return x.Op + " " + x.Name + "/read=" + ReadBytes
		}
		return x.Op + " " + x.Name
	}
	olds := make(map[string]Result, len(old.Results))
	for _, x := range old.Results {
		olds[key(x)] = x
	}
	var c Comparison
	seen := map[string]bool{}
	for _, x := range cur.Results {
		k := key(x)
		o, ok := olds[k]
		if !ok {
			c.OnlyNew = append(c.OnlyNew, k)
			continue
		}
		seen[k] = true
		d := Delta{Op: x.Op, Name: x.Name, OldMsgsPerSec: o.MsgsPerSec, NewMsgsPerSec: x.MsgsPerSec,
			OldRatio: o.RatioToRaw, NewRatio: x.RatioToRaw,
			Noise: overlap(o.RoundsMsgsPerSec, x.RoundsMsgsPerSec)}
		if o.MsgsPerSec > 0 {
			d.Change = x.MsgsPerSec/o.MsgsPerSec - 1
		}
		c.Deltas = append(c.Deltas, d)
	}
	for _, x := range old.Results {
		if k := key(x); !seen[k] {
			c.OnlyOld = append(c.OnlyOld, k)
		}
	}
	c.Summary = summarize(c.Deltas)
	return c
}

// overlap reports whether the ranges [min, max] of a and b share a point.
// With no rounds recorded on either side the change cannot be told from
// noise, so that counts as overlapping too.
func overlap(a, b []float64) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	return slices.Min(a) <= slices.Max(b) && slices.Min(b) <= slices.Max(a)
}

// WriteText writes the comparison as a table for people: one row per cell
// measured in both runs, "~" marking a change within the rounds' scatter.
func (c Comparison) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcase\told msgs/s\tnew msgs/s\tchange\t\told x raw\tnew x raw\t")
	for _, d := range c.Deltas {
		mark := ""
		if d.Noise {
			mark = "~"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.1f%%\t%s\t%.2f\t%.2f\t\n", d.Op, d.Name, fmtRate(d.OldMsgsPerSec),
			fmtRate(d.NewMsgsPerSec), 100*d.Change, mark, d.OldRatio, d.NewRatio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if m := c.Summary; m.Cells > 0 {
		fmt.Fprintf(w, "%d cells in both runs: x raw changed by %+.3f on average (standard deviation %.3f); "+
			"msgs/s %d faster and %d slower beyond the rounds' scatter, %d within it\n",
			m.Cells, m.MeanRatioChange, m.SDRatioChange, m.Faster, m.Slower, m.Cells-m.Faster-m.Slower)
	}
	for _, s := range []struct {
		what  string
		cells []string
	}{{"only in the earlier run", c.OnlyOld}, {"only in this run", c.OnlyNew}} {
		if len(s.cells) > 0 {
			fmt.Fprintf(w, "%s: %s\n", s.what, strings.Join(s.cells, "; "))
		}
	}
	_, err := fmt.Fprintln(w, "\nchange: msgs/s against the earlier run; ~: the two runs' per-round ranges overlap (noise).\n"+
		"x raw moving with msgs/s points at the spool; msgs/s moving alone points at the machine.")
	return err
}
