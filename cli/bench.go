package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bench/benchrun"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// benchFlags are the flags of mqb bench.
type benchFlags struct {
	dir, svgFile                string
	fsyncs, sizes, ops, layouts []string
	backends, sidecars, reads   []string
	batches, scale              []int
	count, rounds, handoffCount int
	asJSON, handoff, rawHeld    bool
	scalePayload                string
	compare                     string
	large                       bool
	largeSize                   string
	roundTime                   time.Duration
}

func (a *app) benchCommand() *cobra.Command {
	var fl benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure spool throughput on your filesystem against raw system calls",
		Long: `bench measures how fast a directory spool produces and drains messages on
the filesystem holding --dir, for each fsync policy and batch size, and runs
the same file operations with bare system calls in the same rounds (one batch
of each in turn) so that the ratio to that raw baseline holds on a busy
machine. It works in a fresh subdirectory of --dir and removes it; on
ext2, ext3 and ext4 that directory is flagged +T (chattr), so that each trial
lands in a block group that no earlier trial's deletes slow down.

Each case's rounds are sized so that its raw loop takes about --round-time
(250ms): a pilot round of the case, which is not counted, times it, and the
"msgs" column gives the count chosen. A round of a few milliseconds measures
whatever else the machine did in them. Rounds hold at least 256 messages and
four batches, at most 65,536 messages and 1 GiB of payload. --count N gives
every case N messages per round instead, for a quick look on a slow disk; the
pilot round still runs, since the first round of a batch of large payloads in
a process pays for growing its memory. Every round of a drain also starts
with one untimed batch through each arm; a produce round instead first
writes to as much fresh memory as its files will take and hands it back,
so that no arm's writes land on pages a virtual machine's host has taken
back. With three or more arms (fsync=batch produce cells, --raw-held
drains) each runs in each place of a step as often, over a block of steps
that a sized round holds whole when it can.

Columns: msgs/s and MB/s (payload) are medians over --rounds; p50/p99 are
per-batch latencies (one Producer.Write, or one Read plus Ack); "x raw" is
spool msgs/s over raw msgs/s, the median of the rounds' own ratios, whose
lowest and highest the "range" column gives; "cpu x raw" is the CPU time of
every thread during the spool's steps over the raw arm's (a batch of large
payloads is read on several threads, which can beat the raw loop's time and
cost more CPU). Under the table, the cells
under 0.90 are split into those under it in every round and those with a
round at or above it (within the run's noise). For fsync=batch the raw
baseline is the fastest of three strategies: an fsync per file, all fsyncs
issued at once, and one syncfs per batch.

Consume cells say in their "read" column (and read= in their name) which API
they measured: --read lent (the default) reads each payload into a buffer
lent from a pool that is refilled at Ack (Consumer.LendPayloadBuffers), so
buffers are reused from batch to batch as the raw loop reuses its one;
--read bytes takes the new []byte Delivery.Payload the consumer allocates per
message, which shows what that convenience costs. --read stream has the
consumer leave payloads above 16 KiB on disk (Consumer.SetStreamAbove) and
reads each in turn into one buffer (Delivery.ReadInto), as the raw loop does,
so a batch of them holds no payload in memory; smaller ones are read into lent
buffers as with lent. --read lent,stream measures both.

The raw consume loop reads every payload into the same buffer and drops it.
A consumer that hands a batch over in memory cannot: its payloads all live
until Ack, so at large batches of large payloads they no longer fit the CPU
cache. --raw-held adds a second raw baseline that keeps each payload of a
batch in a buffer of its own, as lent buffers are kept; the table's ratio
stays the one to the faster baseline, and a list below it gives both.

--scale N,... instead fills and drains backlogs of N messages (sharded, or
each --layout given) and reports the per-message cost, the time to the first
delivery (listing) and the draining peak RSS; --handoff measures
the latency from a producer's write to a waiting consumer's delivery, with
wake-ups and with polling; --large copies one payload of --large-size (1 GiB)
from a file into a spool and on into a drop zone, reporting MB/s, the peak
RSS and the ratio to two bare file copies (copy_file_range on Linux) made in
the same rounds.`,
		Example: `  mqb bench --dir /var/spool
  mqb bench --dir /var/spool --fsync batch,chunk --batch-size 1,256 --size 1KiB,64KiB --json
  mqb bench --dir /mnt/fast --svg bench.svg
  mqb bench --dir /var/spool --scale 10000,100000
  mqb bench --dir /var/spool --handoff
  mqb bench --dir /var/spool --large --rounds 3
  mqb bench --dir /var/spool --json > before.json; mqb bench --dir /var/spool --compare before.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runBench(cmd, &fl) },
	}
	fl.register(cmd)
	return cmd
}

func (fl *benchFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&fl.dir, "dir", ".", "directory on the filesystem to measure (a subdirectory is made and removed)")
	f.StringSliceVar(&fl.fsyncs, "fsync", []string{string(core.FsyncNone), string(core.FsyncBatch), string(core.FsyncChunk)}, "fsync policies: none, batch, chunk")
	f.IntSliceVar(&fl.batches, "batch-size", []int{1, 16, 256}, "messages per write and per read")
	f.StringSliceVar(&fl.sizes, "size", []string{"1KiB"}, "payload sizes, such as 100B, 1KiB, 64KiB, 1MiB")
	f.IntVar(&fl.count, "count", 0, "messages per case and round; 0 sizes each case's rounds to take about --round-time in the raw loop (a pilot round measures it)")
	f.DurationVar(&fl.roundTime, "round-time", benchrun.DefaultRoundTime, "with --count 0: how long a round of each case's raw loop should take")
	f.IntVar(&fl.rounds, "rounds", 5, "rounds per case; figures are medians")
	f.StringSliceVar(&fl.ops, "op", []string{benchrun.OpProduce, benchrun.OpConsume}, "operations: produce, consume (drain with ack)")
	f.StringSliceVar(&fl.sidecars, "sidecar", []string{"on"}, "metadata sidecars: on, off, or both as on,off")
	f.StringSliceVar(&fl.layouts, "layout", []string{benchrun.LayoutFlat}, "layouts: flat, sharded (shard_depth=2, shard_width=3)")
	f.StringSliceVar(&fl.reads, "read", []string{benchrun.ReadLent}, "how consume cells read payloads: lent (into pooled buffers, reused as the raw loop reuses its buffer), bytes (a new []byte each), stream (above 16 KiB left on disk, each read into one buffer), or several as lent,stream")
	f.BoolVar(&fl.rawHeld, "raw-held", false, "give consume cells a second raw baseline that keeps each payload of a batch in its own buffer until the batch is removed, as the spool keeps lent buffers until Ack")
	f.StringSliceVar(&fl.backends, "backend", []string{bridge.BackendOS}, "backends: os, memfs (in memory; the raw baseline stays on --dir)")
	f.BoolVar(&fl.asJSON, "json", false, "print one JSON object with a results array instead of a table")
	f.StringVar(&fl.svgFile, "svg", "", "also write a bar chart of msgs/s per policy and batch size to this SVG file")
	f.IntSliceVar(&fl.scale, "scale", nil, "instead: fill and drain backlogs of these sizes, such as 10000,100000,1000000 (sharded unless --layout is given)")
	f.StringVar(&fl.scalePayload, "scale-size", "1KiB", "payload size for --scale")
	f.BoolVar(&fl.handoff, "handoff", false, "instead: measure producer-to-consumer hand-off latency, wake-ups versus polling")
	f.IntVar(&fl.handoffCount, "handoff-count", 200, "messages for --handoff")
	f.BoolVar(&fl.large, "large", false, "instead: copy one large payload file -> dir-spool -> drop zone (format=raw) with the connectors, against bare file copies in the same rounds")
	f.StringVar(&fl.largeSize, "large-size", "1GiB", "payload size for --large")
	f.StringVar(&fl.compare, "compare", "", "also print each cell's change against an earlier run's --json report in this file (~ marks overlapping rounds: noise), then the mean change of x raw over all cells")
}

// runBench runs the mode the flags select: --scale, --handoff or the
// throughput cases.
func (a *app) runBench(cmd *cobra.Command, fl *benchFlags) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if len(fl.scale) > 0 {
		size, err := benchrun.ParseSize(fl.scalePayload)
		if err != nil {
			return usage(fmt.Errorf("--size: %w", err))
		}
		scaleLayouts := []string{benchrun.LayoutSharded}
		if cmd.Flags().Changed("layout") {
			scaleLayouts = fl.layouts
		}
		return benchScale(cmd.Context(), out, errw, fl.dir, fl.scale, scaleLayouts, size, fl.asJSON)
	}
	if fl.handoff {
		return benchHandoff(cmd.Context(), out, fl.dir, fl.handoffCount, fl.asJSON)
	}
	if fl.large {
		return a.benchLarge(cmd, fl)
	}
	cfg, err := fl.config()
	if err != nil {
		return usage(err)
	}
	if fl.count > 0 && cmd.Flags().Changed("round-time") {
		return usage(fmt.Errorf("--round-time sizes rounds only with --count 0; --count %d fixes them", fl.count))
	}
	old, err := readOldReport(fl.compare)
	if err != nil {
		return usage(err)
	}
	cfg.Progress = benchProgress(errw)
	rep, err := benchrun.Run(cmd.Context(), cfg)
	if rep != nil && len(rep.Results) > 0 {
		if old != nil {
			c := benchrun.Compare(old, rep)
			rep.Compare = &c
		}
		if werr := writeBenchReport(out, rep, fl.asJSON, fl.svgFile); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil && cmd.Context().Err() != nil {
		return fmt.Errorf("%w: %v (results so far are printed)", bridge.ErrInterrupted, err)
	}
	return err
}

// readOldReport reads the report --compare names; nil when it names none.
func readOldReport(path string) (*benchrun.Report, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--compare: %w", err)
	}
	defer f.Close()
	rep, err := benchrun.ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("--compare %s: %w", path, err)
	}
	return rep, nil
}

// config turns the throughput flags into a benchrun.Config, refusing what
// benchrun would refuse with an error naming the flag.
func (fl *benchFlags) config() (benchrun.Config, error) {
	cfg := benchrun.Config{Dir: fl.dir, Ops: fl.ops, Fsync: fl.fsyncs, BatchSizes: fl.batches, Layouts: fl.layouts,
		Backends: fl.backends, Reads: fl.reads, RawHeld: fl.rawHeld, Count: fl.count, RoundTime: fl.roundTime, Rounds: fl.rounds}
	for _, s := range fl.sizes {
		n, err := benchrun.ParseSize(s)
		if err != nil {
			return cfg, fmt.Errorf("--size: %w", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for _, s := range fl.sidecars {
		switch s {
		case "on", "true":
			cfg.Sidecars = append(cfg.Sidecars, true)
		case "off", "false":
			cfg.Sidecars = append(cfg.Sidecars, false)
		default:
			return cfg, fmt.Errorf("--sidecar %q: valid values are on, off", s)
		}
	}
	return cfg, checkBenchFlags(cfg)
}

// checkBenchFlags reports the first flag value benchrun would refuse, as a
// usage error naming the flag.
func checkBenchFlags(cfg benchrun.Config) error {
	if cfg.Count < 0 {
		return fmt.Errorf("--count %d: must be 0 (rounds sized by --round-time) or more", cfg.Count)
	}
	if cfg.Count == 0 && cfg.RoundTime <= 0 {
		return fmt.Errorf("--round-time %s: must be above 0", cfg.RoundTime)
	}
	if cfg.Rounds < 1 {
		return fmt.Errorf("--rounds %d: must be at least 1", cfg.Rounds)
	}
	oneOf := func(flag string, vals []string, valid ...string) error {
		for _, v := range vals {
			ok := false
			for _, w := range valid {
				ok = ok || v == w
			}
			if !ok {
				return fmt.Errorf("--%s %q: valid values are %s", flag, v, strings.Join(valid, ", "))
			}
		}
		return nil
	}
	for _, err := range []error{
		oneOf("fsync", cfg.Fsync, string(core.FsyncNone), string(core.FsyncBatch), string(core.FsyncChunk)),
		oneOf("op", cfg.Ops, benchrun.OpProduce, benchrun.OpConsume),
		oneOf("layout", cfg.Layouts, benchrun.LayoutFlat, benchrun.LayoutSharded),
		oneOf("backend", cfg.Backends, bridge.BackendOS, bridge.BackendMemFS),
		oneOf("read", cfg.Reads, benchrun.ReadLent, benchrun.ReadBytes, benchrun.ReadStream),
	} {
		if err != nil {
			return err
		}
	}
	for _, b := range cfg.BatchSizes {
		if b < 1 {
			return fmt.Errorf("--batch-size %d: must be at least 1", b)
		}
	}
	return nil
}

// benchProgress returns a progress callback: one line redrawn in place on a
// terminal, otherwise one line per round.
func benchProgress(w io.Writer) func(benchrun.Progress) {
	tty := isTerminal(w)
	lastRound := 0
	start := time.Now()
	return func(p benchrun.Progress) {
		if p.Done == p.Total {
			if tty {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		}
		if tty {
			fmt.Fprintf(w, "\r\033[Kbench [%d/%d] %s %s round %d  %s", p.Done+1, p.Total, p.Case.Op,
				p.Case.Name(), p.Round, time.Since(start).Round(time.Second))
			return
		}
		if p.Round != lastRound {
			lastRound = p.Round
			fmt.Fprintf(w, "bench: round %d, %d/%d measurements done, %s\n", p.Round, p.Done, p.Total, time.Since(start).Round(time.Second))
		}
	}
}

func writeBenchReport(w io.Writer, rep *benchrun.Report, asJSON bool, svgFile string) error {
	if svgFile != "" {
		f, err := os.Create(svgFile)
		if err != nil {
			return err
		}
		werr := rep.WriteSVG(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("write %s: %w", svgFile, werr)
		}
	}
	if asJSON {
		return rep.WriteJSON(w)
	}
	return rep.WriteText(w)
}

func benchScale(ctx context.Context, out, errw io.Writer, dir string, backlogs []int, layouts []string, size int, asJSON bool) error {
	if err := checkBenchFlags(benchrun.Config{Count: 1, Rounds: 1, Layouts: layouts}); err != nil {
		return usage(err)
	}
	tty := isTerminal(errw)
	cfg := benchrun.ScaleConfig{Dir: dir, Backlogs: backlogs, Layouts: layouts, PayloadBytes: size, Sidecar: true,
		Progress: func(s string) {
			if tty {
				fmt.Fprintf(errw, "\r\033[Kbench: %s", s)
			} else {
				fmt.Fprintf(errw, "bench: %s\n", s)
			}
		}}
	rs, err := benchrun.Scale(ctx, cfg)
	if tty {
		fmt.Fprint(errw, "\r\033[K")
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %v", bridge.ErrInterrupted, err)
		}
		return err
	}
	if asJSON {
		return writeJSON(out, map[string]any{"machine": benchrun.DescribeMachine(dir), "scale": rs})
	}
	return benchrun.WriteScaleText(out, rs)
}

func benchHandoff(ctx context.Context, out io.Writer, dir string, count int, asJSON bool) error {
	var rs []benchrun.HandoffResult
	for _, m := range []benchrun.HandoffConfig{
		{Dir: dir, Count: count, Wake: true},
		{Dir: dir, Count: count, PollInterval: 10 * time.Millisecond},
		{Dir: dir, Count: max(1, count/10), PollInterval: 250 * time.Millisecond},
	} {
		r, err := benchrun.Handoff(ctx, m)
		if err != nil {
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return fmt.Errorf("%w: %v", bridge.ErrInterrupted, err)
			}
			return err
		}
		rs = append(rs, r)
	}
	if asJSON {
		return writeJSON(out, map[string]any{"machine": benchrun.DescribeMachine(dir), "handoff": rs})
	}
	return benchrun.WriteHandoffText(out, rs)
}

// benchLarge runs --large: the copies are real routes of this command's
// connectors (file format=raw -> dir-spool -> dropzone format=raw).
func (a *app) benchLarge(cmd *cobra.Command, fl *benchFlags) error {
	size, err := benchrun.ParseSize(fl.largeSize)
	if err != nil {
		return usage(fmt.Errorf("--large-size: %w", err))
	}
	rounds := 3
	if cmd.Flags().Changed("rounds") {
		rounds = fl.rounds
	}
	errw := cmd.ErrOrStderr()
	cfg := benchrun.LargeConfig{Dir: fl.dir, Size: int64(size), Rounds: rounds, Copy: a.largeCopy,
		Progress: func(s string) { fmt.Fprintf(errw, "bench: %s\n", s) }}
	r, err := benchrun.Large(cmd.Context(), cfg)
	if err != nil {
		if cmd.Context().Err() != nil {
			return fmt.Errorf("%w: %v", bridge.ErrInterrupted, err)
		}
		return err
	}
	if fl.asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"machine": benchrun.DescribeMachine(fl.dir), "large": r})
	}
	return benchrun.WriteLargeText(cmd.OutOrStdout(), r)
}

// largeCopy is benchrun.LargeConfig.Copy: two draining routes, and the
// file the second published.
func (a *app) largeCopy(ctx context.Context, in, spool, zone string) (string, error) {
	legs := [][2]string{
		{"file://" + in + "?format=raw", "dir-spool://" + spool},
		{"dir-spool://" + spool, "dropzone://" + zone + "?format=raw"},
	}
	quiet := slog.New(slog.DiscardHandler)
	for _, leg := range legs {
		src, _, err := a.env.NewSource(bridge.Endpoint{URL: leg[0]})
		if err != nil {
			return "", err
		}
		tgt, _, err := a.env.NewTarget(bridge.Endpoint{URL: leg[1]})
		if err != nil {
			return "", err
		}
		r := &bridge.Route{Source: src, Target: tgt, Input: leg[0], Output: leg[1], Drain: true, Logger: quiet}
		if err := r.Run(ctx); err != nil {
			return "", err
		}
	}
	entries, err := os.ReadDir(zone)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return filepath.Join(zone, e.Name()), nil
		}
	}
	return "", fmt.Errorf("the drop zone %s holds no file", zone)
}
