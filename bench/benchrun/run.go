package benchrun

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// Config selects the matrix Run measures. Empty lists take the defaults of
// DefaultConfig.
type Config struct {
	// Dir is the directory to measure in: the raw baseline always runs
	// there, and so does the spool for backend os. Run makes and removes a
	// subdirectory of its own.
	Dir        string
	Ops        []string // OpProduce, OpConsume
	Fsync      []string // none, batch, chunk
	BatchSizes []int
	Sizes      []int    // payload bytes
	Sidecars   []bool   // with and without metadata sidecars
	Layouts    []string // LayoutFlat, LayoutSharded
	Backends   []string // osfs.Name, memfs.Name
	Reads      []string // how consume cases read payloads: ReadLent, ReadBytes, ReadStream
	// RawHeld gives every consume case a second raw arm that keeps each
	// payload of a batch in memory until the batch is removed (Case.RawHeld).
	RawHeld bool
	// Count is the number of messages each arm writes or drains per round.
	// 0 (auto) sizes each case's rounds so that its raw arm takes about
	// RoundTime, as a pilot round measures it (autoCount).
	Count int
	// RoundTime is how long a round of the raw arm should take when Count
	// is auto; 0 is DefaultRoundTime.
	RoundTime time.Duration
	// Rounds is how many times each case runs, each time in a fresh
	// directory; figures are medians over rounds.
	Rounds int
	// Progress, when set, is called before each round of each case and
	// once at the end.
	Progress func(Progress)
}

// Progress tells how far Run has come.
type Progress struct {
	Case  Case
	Round int // 1-based round of Case
	Done  int // rounds finished over all cases
	Total int // rounds in the whole run
}

// DefaultConfig is what mqb bench measures without flags: both operations,
// every fsync policy, batch sizes 1, 16 and 256, 1 KiB payloads with
// sidecars, flat layout, backend os, rounds of about DefaultRoundTime.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:        dir,
		Ops:        []string{OpProduce, OpConsume},
		Fsync:      []string{string(core.FsyncNone), string(core.FsyncBatch), string(core.FsyncChunk)},
		BatchSizes: []int{1, 16, 256},
		Sizes:      []int{1 << 10},
		Sidecars:   []bool{true},
		Layouts:    []string{LayoutFlat},
		Backends:   []string{osfs.Name},
		Reads:      []string{ReadLent},
		RoundTime:  DefaultRoundTime,
		Rounds:     5,
	}
}

func (cfg Config) withDefaults() Config {
	d := DefaultConfig(cfg.Dir)
	if len(cfg.Ops) == 0 {
		cfg.Ops = d.Ops
	}
	if len(cfg.Fsync) == 0 {
		cfg.Fsync = d.Fsync
	}
	if len(cfg.BatchSizes) == 0 {
		cfg.BatchSizes = d.BatchSizes
	}
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = d.Sizes
	}
	if len(cfg.Sidecars) == 0 {
		cfg.Sidecars = d.Sidecars
	}
	if len(cfg.Layouts) == 0 {
		cfg.Layouts = d.Layouts
	}
	if len(cfg.Backends) == 0 {
		cfg.Backends = d.Backends
	}
	if len(cfg.Reads) == 0 {
		cfg.Reads = d.Reads
	}
	if cfg.Count < 0 {
		cfg.Count = 0
	}
	if cfg.RoundTime <= 0 {
		cfg.RoundTime = d.RoundTime
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = d.Rounds
	}
	return cfg
}

// Cases lists the matrix in the order Run measures it.
func (cfg Config) Cases() []Case {
	cfg = cfg.withDefaults()
	var out []Case
	for _, op := range cfg.Ops {
		for _, be := range cfg.Backends {
			for _, lay := range cfg.Layouts {
				for _, side := range cfg.Sidecars {
					for _, size := range cfg.Sizes {
						for _, fs := range cfg.Fsync {
							for _, b := range cfg.BatchSizes {
								for _, read := range cfg.readsOf(op) {
									out = append(out, Case{Op: op, Fsync: fs, BatchSize: b, PayloadBytes: size,
										Sidecar: side, Layout: lay, Backend: be, Read: read,
										RawHeld: cfg.RawHeld && op == OpConsume})
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// readsOf returns the read modes of op's cases: none for produce.
func (cfg Config) readsOf(op string) []string {
	if op == OpConsume {
		return cfg.Reads
	}
	return []string{""}
}

// Run measures every case of cfg against the raw baseline in the same
// process and returns the report. It stops early, with the results so far,
// when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, fmt.Errorf("benchrun: Config.Dir is required")
	}
	cases := cfg.Cases()
	for _, c := range cases {
		if err := c.validate(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	rep := &Report{Machine: DescribeMachine(cfg.Dir), Count: cfg.Count, Rounds: cfg.Rounds, Started: time.Now().UTC()}
	dir, err := os.MkdirTemp(cfg.Dir, "mqb-bench-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spreadTrials(dir)
	if cfg.Count == 0 {
		rep.RoundTime = cfg.RoundTime.String()
	}
	total := len(cases) * cfg.Rounds
	done := 0
	ms := make([]*measure, len(cases))
	for i, c := range cases {
		ms[i] = newMeasure(c)
	}
	// Rounds are the outer loop, so that every case sees the same drift of
	// the machine (a disk that slows down after mass deletes, a noisy
	// neighbour) and medians compare across cases as well.
	for r := 1; r <= cfg.Rounds; r++ {
		for i, c := range cases {
			if err := ctx.Err(); err != nil {
				rep.Results = results(ms)
				return rep, err
			}
			if cfg.Progress != nil {
				cfg.Progress(Progress{Case: c, Round: r, Done: done, Total: total})
			}
			err := ms[i].setCount(ctx, cfg, dir)
			if err == nil {
				err = ms[i].round(ctx, dir, ms[i].count)
			}
			if err != nil {
				rep.Results = results(ms)
				return rep, fmt.Errorf("%s %s: %w", c.Op, c.Name(), err)
			}
			done++
		}
	}
	rep.Results = results(ms)
	rep.Elapsed = time.Since(rep.Started).Round(time.Millisecond).String()
	if cfg.Progress != nil {
		cfg.Progress(Progress{Done: done, Total: total})
	}
	return rep, nil
}

// measure collects the rounds of one case.
type measure struct {
	c     Case
	arms  []string
	total [][]time.Duration // [arm][round] time for the round's messages
	steps [][]time.Duration // [arm] every step's duration
	msgs  []int             // [round] messages per arm
	cpu   []time.Duration   // [arm] CPU time over every round (Trial.CPU)
	count int               // messages per round, once set (setCount)
}

// setCount sets the messages of m's rounds, once, after a pilot round of
// the case that is not kept: the first round in a process to hold a batch
// of large payloads paid for growing the heap (a lent 1 MiB drain at batch
// 256 ran at 0.2 of the raw loop in its first round and about 1.0 in the
// others). The count is cfg.Count, or when that is auto what the pilot's
// raw arm calls for (autoCount). The pilot runs in the case's own turn of
// the first round, so that it sees the machine as that round does.
func (m *measure) setCount(ctx context.Context, cfg Config, dir string) error {
	if m.count > 0 {
		return nil
	}
	n := pilotCount(m.c, cfg.Count)
	tt, err := runTrial(ctx, dir, m.c, n, &turns{})
	if err != nil {
		return fmt.Errorf("pilot round: %w", err)
	}
	m.count = cfg.Count
	if m.count == 0 {
		m.count = autoCount(m.c, len(tt.arms), fastestRaw(tt, n), cfg.RoundTime)
	}
	return nil
}

func newMeasure(c Case) *measure { return &measure{c: c} }

// results returns the result of every case measured at least once.
func results(ms []*measure) []Result {
	var out []Result
	for _, m := range ms {
		if len(m.msgs) > 0 {
			out = append(out, m.result())
		}
	}
	return out
}

// round measures one round of count messages and keeps its times.
func (m *measure) round(ctx context.Context, dir string, count int) error {
	tt, err := runTrial(ctx, dir, m.c, count, roundTurns(len(m.msgs)))
	if err != nil {
		return err
	}
	if m.arms == nil {
		m.arms = tt.arms
		m.total = make([][]time.Duration, len(m.arms))
		m.steps = make([][]time.Duration, len(m.arms))
		m.cpu = make([]time.Duration, len(m.arms))
	}
	for i := range m.arms {
		m.total[i] = append(m.total[i], tt.total[i])
		m.steps[i] = append(m.steps[i], tt.steps[i]...)
		m.cpu[i] += tt.cpu[i]
	}
	m.msgs = append(m.msgs, count)
	return nil
}

// trialTimes is what one trial measured, each slice in the order of its
// arms.
type trialTimes struct {
	arms  []string
	total []time.Duration   // time for all count messages
	steps [][]time.Duration // every step's duration
	cpu   []time.Duration   // CPU time of the process during the arm's steps
}

// runTrial runs count messages of c through every arm of a fresh trial in
// dir, a batch at a time, the arms taking turns as t says; a consume case
// first drains one batch through every arm that is not timed (Trial.Warm),
// a produce case first touches the memory its writes will take
// (Trial.touchPages).
func runTrial(ctx context.Context, dir string, c Case, count int, t *turns) (*trialTimes, error) {
	tr, err := newTrial(dir, c, t)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	warm := 0
	if c.Op == OpConsume {
		warm = c.BatchSize
	}
	if err := tr.Fill(count + warm); err != nil {
		return nil, err
	}
	if err := tr.Warm(warm); err != nil {
		return nil, err
	}
	if err := tr.touchPages(count); err != nil {
		return nil, err
	}
	arms := tr.Arms()
	tt := &trialTimes{arms: arms, total: make([]time.Duration, len(arms)), steps: make([][]time.Duration, len(arms))}
	var durs []time.Duration
	for left := count; left > 0; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(left, c.BatchSize)
		durs, err = tr.Step(n, durs)
		if err != nil {
			return nil, err
		}
		for i, d := range durs {
			tt.total[i] += d
			tt.steps[i] = append(tt.steps[i], d)
		}
		left -= n
	}
	tt.cpu = slices.Clone(tr.CPU())
	if len(tt.cpu) < len(arms) {
		tt.cpu = make([]time.Duration, len(arms))
	}
	return tt, tr.Close()
}

func (m *measure) rates(arm int) []float64 {
	out := make([]float64, len(m.total[arm]))
	for r, d := range m.total[arm] {
		out[r] = float64(m.msgs[r]) / d.Seconds()
	}
	return out
}

func (m *measure) result() Result {
	c := m.c
	spool := len(m.arms) - 1
	res := Result{
		Op: c.Op, Fsync: c.Fsync, BatchSize: c.BatchSize, PayloadBytes: c.PayloadBytes,
		Sidecar: c.Sidecar, Layout: c.Layout, Backend: c.Backend, Read: c.Read, Name: c.Name(),
		Rounds: len(m.msgs),
	}
	if len(m.msgs) == 0 {
		return res
	}
	res.Count = m.msgs[0]
	sr := m.rates(spool)
	res.MsgsPerSec = median(sr)
	res.MBPerSec = res.MsgsPerSec * float64(c.PayloadBytes) / 1e6
	res.RoundsMsgsPerSec = sr
	res.P50BatchMs = msOf(percentile(m.steps[spool], 50))
	res.P99BatchMs = msOf(percentile(m.steps[spool], 99))
	best, bestRate := 0, -1.0
	res.RawStrategies, res.RawRatios = map[string]float64{}, map[string]float64{}
	for a := range spool {
		r := median(m.rates(a))
		res.RawStrategies[m.arms[a]] = r
		res.RawRatios[m.arms[a]] = pairedRatio(sr, m.rates(a))
		if r > bestRate {
			best, bestRate = a, r
		}
	}
	res.RawArm = m.arms[best]
	res.RawMsgsPerSec = bestRate
	res.RawP50BatchMs = msOf(percentile(m.steps[best], 50))
	res.RawP99BatchMs = msOf(percentile(m.steps[best], 99))
	res.RatioToRaw = res.RawRatios[res.RawArm]
	res.RoundsRatioToRaw = roundRatios(sr, m.rates(best))
	if m.cpu[best] > 0 {
		res.CPURatioToRaw = float64(m.cpu[spool]) / float64(m.cpu[best])
	}
	if len(res.RawStrategies) == 1 {
		res.RawStrategies, res.RawRatios = nil, nil
	}
	return res
}

// pairedRatio returns the median over rounds of spool[r] / raw[r]: each
// round's rates divided before the median, so that a round in which the
// machine was slow for both arms counts as any other.
func pairedRatio(spool, raw []float64) float64 {
	return median(roundRatios(spool, raw))
}

// roundRatios returns spool[r] / raw[r] for each round r.
func roundRatios(spool, raw []float64) []float64 {
	ratios := make([]float64, len(spool))
	for r := range spool {
		ratios[r] = spool[r] / raw[r]
	}
	return ratios
}

func msOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the p-th percentile of ds by nearest rank; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}
