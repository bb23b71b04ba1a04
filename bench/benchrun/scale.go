package benchrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// ScaleConfig selects a backlog-scaling run.
type ScaleConfig struct {
	Dir          string   // where the spools are made (backend os)
	Backlogs     []int    // messages in the backlog; default 10k and 100k
	Layouts      []string // default sharded; add flat to see its listing cost
	PayloadBytes int      // default 1 KiB
	Sidecar      bool
	Fsync        string // default batch
	BatchSize    int    // default 256, for producing and draining
	// Progress, when set, is told what is being done.
	Progress func(string)
}

// ScaleResult is the cost of filling and draining one backlog.
type ScaleResult struct {
	Backlog         int     `json:"backlog"`
	Layout          string  `json:"layout"`
	Fsync           string  `json:"fsync"`
	BatchSize       int     `json:"batch_size"`
	PayloadBytes    int     `json:"payload_bytes"`
	Sidecar         bool    `json:"sidecar"`
	ProduceUsPerMsg float64 `json:"produce_us_per_msg"`
	DrainUsPerMsg   float64 `json:"drain_us_per_msg"`
	// FirstReadMs is the time from opening the consumer to its first
	// batch: mostly listing the first directory.
	FirstReadMs float64 `json:"first_read_ms"`
	// ListMs is the time of one FS.ReadDir of the first leaf directory
	// (the spool root when flat) with the backlog in place; RawListMs that
	// of a bare getdents loop over it that only counts, as `ls -f | wc -l`.
	ListMs      float64 `json:"list_ms"`
	RawListMs   float64 `json:"raw_list_ms"`
	ListEntries int     `json:"list_entries"`
	// RestartReadMs is the time from opening a second consumer, after the
	// first closed half way through the drain, to its first batch.
	RestartReadMs float64 `json:"restart_read_ms"`
	// RawProduceUsPerMsg and RawDrainUsPerMsg are the costs of the raw
	// loop (bare system calls, the same files) on a backlog of the same
	// size: how much of the growth with the backlog is the kernel's.
	RawProduceUsPerMsg float64 `json:"raw_produce_us_per_msg"`
	RawDrainUsPerMsg   float64 `json:"raw_drain_us_per_msg"`
	// The same costs in CPU time (user and system) of this process, which
	// other work on the machine disturbs less than the wall clock.
	ProduceCPUUsPerMsg    float64 `json:"produce_cpu_us_per_msg"`
	DrainCPUUsPerMsg      float64 `json:"drain_cpu_us_per_msg"`
	RawProduceCPUUsPerMsg float64 `json:"raw_produce_cpu_us_per_msg"`
	RawDrainCPUUsPerMsg   float64 `json:"raw_drain_cpu_us_per_msg"`
	FirstReadCPUMs        float64 `json:"first_read_cpu_ms"`
	RestartReadCPUMs      float64 `json:"restart_read_cpu_ms"`
	RawListCPUMs          float64 `json:"raw_list_cpu_ms"`
	// RSSBeforeMiB is the resident set when draining starts, after a GC
	// that returns memory to the OS; DrainPeakRSSMiB is the peak resident
	// set (VmHWM) of the process while draining.
	RSSBeforeMiB    float64 `json:"rss_before_mib"`
	DrainPeakRSSMiB float64 `json:"drain_peak_rss_mib"`
	PeakReset       bool    `json:"peak_reset"` // false: the peak could not be reset and covers the whole process life
}

// Scale fills and drains each backlog in turn and reports the per-message
// cost and the draining peak RSS.
func Scale(ctx context.Context, cfg ScaleConfig) ([]ScaleResult, error) {
	if cfg.Dir == "" {
		return nil, errors.New("benchrun: ScaleConfig.Dir is required")
	}
	if len(cfg.Backlogs) == 0 {
		cfg.Backlogs = []int{10_000, 100_000}
	}
	if len(cfg.Layouts) == 0 {
		cfg.Layouts = []string{LayoutSharded}
	}
	if cfg.PayloadBytes == 0 {
		cfg.PayloadBytes = 1 << 10
	}
	if cfg.Fsync == "" {
		cfg.Fsync = string(core.FsyncBatch)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	var out []ScaleResult
	for _, lay := range cfg.Layouts {
		for _, n := range cfg.Backlogs {
			r, err := scaleOne(ctx, cfg, lay, n)
			if err != nil {
				return out, fmt.Errorf("backlog %d %s: %w", n, lay, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// scaleRun is one backlog of one layout: fill, list, drain.
type scaleRun struct {
	cfg    ScaleConfig
	layout string
	n      int // messages in the backlog
	fsys   core.FS
	o      core.Options
	res    *ScaleResult
}

func (s *scaleRun) say(f string, a ...any) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(fmt.Sprintf("backlog %d %s: ", s.n, s.layout) + fmt.Sprintf(f, a...))
	}
}

func scaleOne(ctx context.Context, cfg ScaleConfig, layout string, n int) (res ScaleResult, err error) {
	res = ScaleResult{Backlog: n, Layout: layout, Fsync: cfg.Fsync, BatchSize: cfg.BatchSize,
		PayloadBytes: cfg.PayloadBytes, Sidecar: cfg.Sidecar}
	s := &scaleRun{cfg: cfg, layout: layout, n: n, res: &res}
	dir, err := os.MkdirTemp(cfg.Dir, "mqb-scale-")
	if err != nil {
		return res, err
	}
	defer func() {
		s.say("cleaning up")
		if rerr := os.RemoveAll(dir); err == nil {
			err = rerr
		}
		_ = syncfsPath(cfg.Dir)
	}()
	fsys, err := openFS(osfs.Name, dir)
	if err != nil {
		return res, err
	}
	defer fsys.close()
	s.fsys, s.o = fsys.fs, spoolOptions(dir, cfg.Fsync, layout, cfg.Sidecar)
	if err := s.produce(ctx); err != nil {
		return res, err
	}
	if err := syncfsPath(dir); err != nil {
		return res, err
	}
	if err := s.list(); err != nil {
		return res, err
	}
	if err := s.drain(ctx); err != nil {
		return res, err
	}
	return res, s.raw(dir)
}

// raw fills and drains a backlog of the same size with the raw loop, in a
// directory of its own beside the drained spool.
func (s *scaleRun) raw(dir string) error {
	s.say("raw loop")
	rawDir := filepath.Join(dir, "raw")
	if err := os.Mkdir(rawDir, 0o700); err != nil {
		return err
	}
	var side []byte
	if s.cfg.Sidecar {
		side = sampleSidecar()
	}
	rs, err := rawScale(rawDir, s.n, s.cfg.BatchSize, s.cfg.Fsync, s.layout == LayoutSharded, makePayload(s.cfg.PayloadBytes), side)
	s.res.RawProduceUsPerMsg, s.res.RawDrainUsPerMsg = rs.produceUs, rs.drainUs
	s.res.RawProduceCPUUsPerMsg, s.res.RawDrainCPUUsPerMsg = rs.produceCPUUs, rs.drainCPUUs
	return err
}

// produce fills the backlog, batch by batch.
func (s *scaleRun) produce(ctx context.Context) error {
	payload := makePayload(s.cfg.PayloadBytes)
	p, err := core.OpenProducer(s.fsys, s.o)
	if err != nil {
		return err
	}
	msgs := make([]core.Message, s.cfg.BatchSize)
	start, cpu := time.Now(), cpuNow()
	for left := s.n; left > 0; {
		if err := ctx.Err(); err != nil {
			p.Close()
			return err
		}
		k := min(left, s.cfg.BatchSize)
		for i := range k {
			msgs[i] = core.Message{Metadata: benchMetadata, Payload: payload}
		}
		if _, err := p.Write(ctx, msgs[:k]); err != nil {
			p.Close()
			return err
		}
		left -= k
		if done := s.n - left; done/100_000 != (done-k)/100_000 {
			s.say("produced %d", done)
		}
	}
	s.res.ProduceUsPerMsg = float64(time.Since(start).Microseconds()) / float64(s.n)
	s.res.ProduceCPUUsPerMsg = float64((cpuNow() - cpu).Microseconds()) / float64(s.n)
	return p.Close()
}

// list lists the first leaf, as a consumer does.
func (s *scaleRun) list() error {
	leaf := "."
	if s.layout == LayoutSharded {
		leaf = "000/000"
	}
	start := time.Now()
	ents, err := s.fsys.ReadDir(leaf)
	s.res.ListMs = msOf(time.Since(start))
	s.res.ListEntries = len(ents)
	if err != nil {
		return err
	}
	cpu := cpuNow()
	s.res.RawListMs, err = rawListMs(filepath.Join(s.o.Path, leaf))
	s.res.RawListCPUMs = msOf(cpuNow() - cpu)
	return err
}

// drain reads and acks the whole backlog, measuring the peak resident set
// from its start. Half way through, it closes the consumer and opens a new
// one, as a restart would.
func (s *scaleRun) drain(ctx context.Context) error {
	runtime.GC()
	debug.FreeOSMemory()
	s.res.PeakReset = resetPeakRSS()
	s.res.RSSBeforeMiB = readStatusMiB("VmRSS")
	c, err := core.OpenConsumer(s.fsys, s.o)
	if err != nil {
		return err
	}
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	start, cpu := time.Now(), cpuNow()
	var restartAt time.Time
	var restartCPU time.Duration
	got, restarted := 0, false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !restarted && got >= s.n/2 {
			restarted, restartAt, restartCPU = true, time.Now(), cpuNow()
			if c, err = s.restart(c); err != nil {
				return err
			}
		}
		ds, err := c.Read(ctx, s.cfg.BatchSize)
		if errors.Is(err, core.ErrEnd) {
			break
		}
		if err != nil {
			return err
		}
		if got == 0 {
			s.res.FirstReadMs, s.res.FirstReadCPUMs = msOf(time.Since(start)), msOf(cpuNow()-cpu)
		} else if s.res.RestartReadMs == 0 && restarted {
			s.res.RestartReadMs, s.res.RestartReadCPUMs = msOf(time.Since(restartAt)), msOf(cpuNow()-restartCPU)
		}
		if err := c.Ack(ds...); err != nil {
			return err
		}
		got += len(ds)
		if got/100_000 != (got-len(ds))/100_000 {
			s.say("drained %d", got)
		}
	}
	s.res.DrainUsPerMsg = float64(time.Since(start).Microseconds()) / float64(s.n)
	s.res.DrainCPUUsPerMsg = float64((cpuNow() - cpu).Microseconds()) / float64(s.n)
	s.res.DrainPeakRSSMiB = readStatusMiB("VmHWM")
	if got != s.n {
		return fmt.Errorf("drained %d messages, want %d", got, s.n)
	}
	return nil
}

// restart closes c and opens the next consumer; drain times it from the
// close to the new one's first batch.
func (s *scaleRun) restart(c *core.Consumer) (*core.Consumer, error) {
	if err := c.Close(); err != nil {
		return nil, err
	}
	return core.OpenConsumer(s.fsys, s.o)
}

// resetPeakRSS resets the kernel's peak resident set of this process
// (VmHWM) to its current size; see proc(5), clear_refs value 5.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// readStatusMiB reads a kB field of /proc/self/status in MiB; 0 when
// unavailable.
func readStatusMiB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return 0
		}
		return kb / 1024
	}
	return 0
}

// WriteScaleText writes scaling results as two tables, wall clock then
// CPU time, and the growth of the per-message costs with the backlog.
func WriteScaleText(w io.Writer, rs []ScaleResult) error {
	fmt.Fprintf(w, "wall clock\n%9s %8s %6s %6s %7s %12s %12s %12s %12s %11s %10s %10s %8s %11s %10s %10s\n",
		"backlog", "layout", "fsync", "batch", "size", "produce us/m", "raw us/m", "drain us/m", "raw us/m",
		"first read", "list ms", "raw list", "entries", "restart", "rss before", "drain peak")
	for _, r := range rs {
		fmt.Fprintf(w, "%9d %8s %6s %6d %7s %12.2f %12.2f %12.2f %12.2f %9.1fms %10.2f %10.2f %8d %9.1fms %8.1fMi %8.1fMi\n",
			r.Backlog, r.Layout, r.Fsync, r.BatchSize, FormatSize(int64(r.PayloadBytes)), r.ProduceUsPerMsg, r.RawProduceUsPerMsg,
			r.DrainUsPerMsg, r.RawDrainUsPerMsg, r.FirstReadMs, r.ListMs, r.RawListMs, r.ListEntries, r.RestartReadMs,
			r.RSSBeforeMiB, r.DrainPeakRSSMiB)
	}
	fmt.Fprintf(w, "cpu time\n%9s %8s %12s %12s %12s %12s %11s %10s %11s\n",
		"backlog", "layout", "produce us/m", "raw us/m", "drain us/m", "raw us/m", "first read", "raw list", "restart")
	for _, r := range rs {
		fmt.Fprintf(w, "%9d %8s %12.2f %12.2f %12.2f %12.2f %9.1fms %8.1fms %9.1fms\n",
			r.Backlog, r.Layout, r.ProduceCPUUsPerMsg, r.RawProduceCPUUsPerMsg, r.DrainCPUUsPerMsg, r.RawDrainCPUUsPerMsg,
			r.FirstReadCPUMs, r.RawListCPUMs, r.RestartReadCPUMs)
	}
	return WriteScaleGrowth(w, rs)
}

// WriteScaleGrowth writes, for each layout, the per-message costs of its
// largest backlog over those of its smallest, the spool's beside the raw
// loop's, in wall clock and CPU time: a spool that costs the same at any
// size grows no more than the raw loop, whose growth is the kernel's.
func WriteScaleGrowth(w io.Writer, rs []ScaleResult) error {
	first, last := map[string]ScaleResult{}, map[string]ScaleResult{}
	var layouts []string
	for _, r := range rs {
		if f, ok := first[r.Layout]; !ok || r.Backlog < f.Backlog {
			if !ok {
				layouts = append(layouts, r.Layout)
			}
			first[r.Layout] = r
		}
		if l, ok := last[r.Layout]; !ok || r.Backlog > l.Backlog {
			last[r.Layout] = r
		}
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for _, lay := range layouts {
		f, l := first[lay], last[lay]
		if f.Backlog == l.Backlog {
			continue
		}
		_, err := fmt.Fprintf(w, "%s %d against %d, cost per message: produce %.2fx (raw loop %.2fx), cpu %.2fx (raw %.2fx); drain %.2fx (raw loop %.2fx), cpu %.2fx (raw %.2fx)\n",
			lay, l.Backlog, f.Backlog,
			ratio(l.ProduceUsPerMsg, f.ProduceUsPerMsg), ratio(l.RawProduceUsPerMsg, f.RawProduceUsPerMsg),
			ratio(l.ProduceCPUUsPerMsg, f.ProduceCPUUsPerMsg), ratio(l.RawProduceCPUUsPerMsg, f.RawProduceCPUUsPerMsg),
			ratio(l.DrainUsPerMsg, f.DrainUsPerMsg), ratio(l.RawDrainUsPerMsg, f.RawDrainUsPerMsg),
			ratio(l.DrainCPUUsPerMsg, f.DrainCPUUsPerMsg), ratio(l.RawDrainCPUUsPerMsg, f.RawDrainCPUUsPerMsg))
		if err != nil {
			return err
		}
	}
	return nil
}

// rawScaleCost is the raw loop's cost per message, in microseconds of wall
// clock and of CPU time.
type rawScaleCost struct {
	produceUs, drainUs, produceCPUUs, drainCPUUs float64
}

func perMsg(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
