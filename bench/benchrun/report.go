package benchrun

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run.
type Report struct {
	Machine Machine `json:"machine"`
	Count   int     `json:"count"`  // messages per arm and round; 0 when each case has its own
	Rounds  int     `json:"rounds"` // rounds per case
	// RoundTime is, when Count is 0, how long a round of each case's raw
	// arm was sized to take (Config.RoundTime); each Result has its count.
	RoundTime string    `json:"round_time,omitempty"`
	Started   time.Time `json:"started"`
	Elapsed   string    `json:"elapsed"`
	Results   []Result  `json:"results"`
	// Compare, when set, holds each cell's change against an earlier run
	// (mqb bench --compare).
	Compare *Comparison `json:"compare,omitempty"`
}

// Result is the measurement of one case. Rates are medians over rounds;
// latencies are percentiles over every batch of every round.
type Result struct {
	Name         string `json:"name"` // the case as benchmark name elements
	Op           string `json:"op"`   // produce or consume
	Fsync        string `json:"fsync"`
	BatchSize    int    `json:"batch_size"`
	PayloadBytes int    `json:"payload_bytes"`
	Sidecar      bool   `json:"sidecar"`
	Layout       string `json:"layout"`
	Backend      string `json:"backend"`
	// Read is how a consume cell read payloads: "lent" (into buffers the
	// caller lends) or "bytes" (a new []byte each). Reports from before
	// the field have none: their consume cells read "bytes".
	Read   string `json:"read,omitempty"`
	Count  int    `json:"count"` // messages per arm and round
	Rounds int    `json:"rounds"`

	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"` // payload bytes only, 10^6 bytes per MB
	P50BatchMs float64 `json:"p50_batch_ms"`
	P99BatchMs float64 `json:"p99_batch_ms"`

	// RawArm is the raw baseline compared with: "raw", or for fsync=batch
	// produce cases the fastest strategy, "raw/<strategy>".
	RawArm        string  `json:"raw_arm"`
	RawMsgsPerSec float64 `json:"raw_msgs_per_sec"`
	RawP50BatchMs float64 `json:"raw_p50_batch_ms"`
	RawP99BatchMs float64 `json:"raw_p99_batch_ms"`
	// RawStrategies holds every raw strategy's msgs/s when there were
	// several.
	RawStrategies map[string]float64 `json:"raw_strategies,omitempty"`
	// RawRatios holds the spool's ratio to each raw strategy, computed as
	// RatioToRaw is, when there were several.
	RawRatios map[string]float64 `json:"raw_ratios,omitempty"`
	// RatioToRaw is the median over rounds of spool msgs/s divided by the
	// raw baseline's msgs/s in the same round: 1 means as fast as bare
	// system calls.
	RatioToRaw float64 `json:"ratio_to_raw"`
	// RoundsRatioToRaw holds the spool's ratio to RawArm in each round,
	// whose median is RatioToRaw. How far they spread is the run's noise
	// for the cell. Reports from before the field have none.
	RoundsRatioToRaw []float64 `json:"rounds_ratio_to_raw,omitempty"`
	// CPURatioToRaw is the CPU time (user and system, every thread) the
	// spool arm took over all rounds divided by RawArm's: above 1 the spool
	// spent more CPU on the same messages, as when it reads on several
	// threads. 0 where CPU time is not measured, and in reports from
	// before the field.
	CPURatioToRaw float64 `json:"cpu_ratio_to_raw,omitempty"`

	RoundsMsgsPerSec []float64 `json:"rounds_msgs_per_sec"`
}

// WriteJSON writes the report as one indented JSON object with a "results"
// array.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a table for people.
func (r *Report) WriteText(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "dir %s: %s", m.Dir, m.FSType)
	if m.Device != "" {
		fmt.Fprintf(w, " on %s (%s)", m.Device, m.MountOptions)
	}
	fmt.Fprintf(w, "\nkernel %s, %d CPUs, %s/%s; %s, median of %d rounds\n",
		m.Kernel, m.CPUs, m.GoVersion, m.GOARCH, r.roundSize(), r.Rounds)
	if m.MemoryReporting != "" {
		fmt.Fprintf(w, "memory: freed pages go back to the host (%s);\n  a step handed them again runs slower, whichever arm it is\n", m.MemoryReporting)
	}
	fmt.Fprintln(w)
	vary := r.varying()
	if err := r.writeTable(w, vary); err != nil {
		return err
	}
	r.writeRawStrategies(w)
	r.writeSummary(w)
	if _, err := fmt.Fprintln(w, "\nx raw: spool msgs/s over raw-syscall msgs/s measured in the same rounds (1.00 = no overhead);\n  the median of the rounds' ratios, whose lowest and highest are the range."); err != nil {
		return err
	}
	if r.cpuMeasured() {
		fmt.Fprintln(w, "cpu x raw: the CPU time (user and system, every thread) the spool took over the raw arm's, all rounds;\n  above 1 it spent more CPU on the same messages (a batch of large payloads is read on several threads).")
	}
	if vary["read"] {
		fmt.Fprintf(w, "read: lent = payloads read into buffers lent from a pool refilled at Ack (Consumer.LendPayloadBuffers),\n  reused from batch to batch as the raw loop reuses its buffer; bytes = a new Delivery.Payload per message;\n  stream = payloads above %d KiB left on disk (Consumer.SetStreamAbove), each read into one buffer (Delivery.ReadInto).\n", streamAbove>>10)
	}
	if r.Compare == nil {
		return nil
	}
	fmt.Fprintln(w, "\nagainst the earlier run:")
	return r.Compare.WriteText(w)
}

// writeTable writes one row per result, with a column for each of sidecar,
// layout, backend and read that vary says to show.
func (r *Report) writeTable(w io.Writer, vary map[string]bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"op", "fsync", "batch", "size"}
	for _, k := range []string{"sidecar", "layout", "backend", "read", "msgs"} {
		if vary[k] {
			head = append(head, k)
		}
	}
	head = append(head, "msgs/s", "MB/s", "p50 batch", "p99 batch", "raw msgs/s", "x raw", "range")
	cpu := r.cpuMeasured()
	if cpu {
		head = append(head, "cpu x raw")
	}
	head = append(head, "raw")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, x := range r.Results {
		row := []string{x.Op, x.Fsync, fmt.Sprint(x.BatchSize), FormatSize(int64(x.PayloadBytes))}
		if vary["sidecar"] {
			row = append(row, onOff(x.Sidecar))
		}
		if vary["layout"] {
			row = append(row, x.Layout)
		}
		if vary["backend"] {
			row = append(row, x.Backend)
		}
		if vary["read"] {
			row = append(row, readOf(x))
		}
		if vary["msgs"] {
			row = append(row, fmt.Sprint(x.Count))
		}
		row = append(row, fmtRate(x.MsgsPerSec), fmt.Sprintf("%.1f", x.MBPerSec),
			fmtMs(x.P50BatchMs), fmtMs(x.P99BatchMs), fmtRate(x.RawMsgsPerSec),
			fmt.Sprintf("%.2f", x.RatioToRaw), ratioRange(x))
		if cpu {
			row = append(row, fmtRatio(x.CPURatioToRaw))
		}
		row = append(row, strings.TrimPrefix(strings.TrimPrefix(x.RawArm, RawArmPrefix), "/"))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

// cpuMeasured reports whether a result has its CPU time measured.
func (r *Report) cpuMeasured() bool {
	return slices.ContainsFunc(r.Results, func(x Result) bool { return x.CPURatioToRaw > 0 })
}

// fmtRatio is a ratio with two decimals; "" for 0 (not measured).
func fmtRatio(x float64) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", x)
}

// summaryAt is the ratio to raw the summary line counts cells against.
const summaryAt = 0.9

// writeSummary writes, for a run of more than one cell, how many cells
// reached summaryAt x raw, the median ratio and the lowest cell.
func (r *Report) writeSummary(w io.Writer) {
	if len(r.Results) < 2 {
		return
	}
	ratios := make([]float64, len(r.Results))
	low, reached := 0, 0
	for i, x := range r.Results {
		ratios[i] = x.RatioToRaw
		if x.RatioToRaw >= summaryAt {
			reached++
		}
		if x.RatioToRaw < r.Results[low].RatioToRaw {
			low = i
		}
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		median = (ratios[len(ratios)/2-1] + median) / 2
	}
	lx := r.Results[low]
	fmt.Fprintf(w, "\n%d of %d cells at %.2f x raw or above; median %.2f; lowest %.2f (%s %s)\n",
		reached, len(ratios), summaryAt, median, lx.RatioToRaw, lx.Op, lx.Name)
	if under := len(ratios) - reached; under > 0 {
		if always, ok := r.underEveryRound(); ok {
			fmt.Fprintf(w, "of the %d under %.2f: %d under it in every round, %d at or above it in some round (within this run's noise)\n",
				under, summaryAt, always, under-always)
		}
	}
}

// underEveryRound counts the cells under summaryAt whose every round was
// under it too; ok is false when a cell under it has no rounds' ratios (a
// report from before them, or of one round).
func (r *Report) underEveryRound() (n int, ok bool) {
	for _, x := range r.Results {
		if x.RatioToRaw >= summaryAt {
			continue
		}
		if len(x.RoundsRatioToRaw) < 2 {
			return 0, false
		}
		if slices.Max(x.RoundsRatioToRaw) < summaryAt {
			n++
		}
	}
	return n, true
}

// ratioRange is the lowest and highest of cell x's rounds' ratios to raw,
// as "0.81-0.93"; "" for fewer than two rounds.
func ratioRange(x Result) string {
	if len(x.RoundsRatioToRaw) < 2 {
		return ""
	}
	return fmt.Sprintf("%.2f-%.2f", slices.Min(x.RoundsRatioToRaw), slices.Max(x.RoundsRatioToRaw))
}

// writeRawStrategies lists each raw strategy's msgs/s, and the spool's
// ratio to it, for the cells that tried several.
func (r *Report) writeRawStrategies(w io.Writer) {
	var notes []string
	for _, x := range r.Results {
		if len(x.RawStrategies) > 1 {
			keys := make([]string, 0, len(x.RawStrategies))
			for k := range x.RawStrategies {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s %s (x %.2f)", strings.TrimPrefix(k, RawArmPrefix+"/"), fmtRate(x.RawStrategies[k]), x.RawRatios[k])
			}
			notes = append(notes, fmt.Sprintf("  %s %s: %s", x.Op, x.Name, strings.Join(parts, ", ")))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nraw strategies, msgs/s (x: the spool's ratio to each; the table's is to the fastest):")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

// varying says which of sidecar, layout and backend take more than one
// value in the report, and whether it has consume cells ("read"): how
// those read is always shown.
func (r *Report) varying() map[string]bool {
	seen := map[string]map[string]bool{"sidecar": {}, "layout": {}, "backend": {}, "msgs": {}}
	out := map[string]bool{}
	for _, x := range r.Results {
		seen["msgs"][fmt.Sprint(x.Count)] = true
		seen["sidecar"][onOff(x.Sidecar)] = true
		seen["layout"][x.Layout] = true
		seen["backend"][x.Backend] = true
		out["read"] = out["read"] || x.Op == OpConsume
	}
	for k, v := range seen {
		out[k] = len(v) > 1
	}
	return out
}

// roundSize says how many messages a round of each case had: the fixed
// count, or the round time the counts were sized for and their range.
func (r *Report) roundSize() string {
	if r.Count > 0 || len(r.Results) == 0 {
		return fmt.Sprintf("%d messages per case and round", r.Count)
	}
	counts := make([]int, len(r.Results))
	for i, x := range r.Results {
		counts[i] = x.Count
	}
	lo, hi := slices.Min(counts), slices.Max(counts)
	if lo == hi {
		return fmt.Sprintf("%d messages per case and round (sized for rounds of %s)", lo, r.RoundTime)
	}
	return fmt.Sprintf("%d to %d messages per case and round (msgs: sized for rounds of %s)", lo, hi, r.RoundTime)
}

// readOf is how cell x read payloads: "-" for produce, "bytes" for a
// consume cell of a report from before lent buffers.
func readOf(x Result) string {
	switch {
	case x.Op != OpConsume:
		return "-"
	case x.Read == "":
		return ReadBytes
	}
	return x.Read
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func fmtRate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0fms", v)
	case v >= 1:
		return fmt.Sprintf("%.2fms", v)
	}
	return fmt.Sprintf("%.0fus", v*1000)
}
