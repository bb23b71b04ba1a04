package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bench/benchrun"
	"github.com/mqb-project/mqb/core"
)

// matrix is every case of one operation, in benchmark name order.
func matrix(op string) []benchrun.Case {
	cfg := benchrun.Config{
		Ops:        []string{op},
		Fsync:      []string{string(core.FsyncNone), string(core.FsyncBatch), string(core.FsyncChunk)},
		BatchSizes: []int{1, 16, 256},
		Sizes:      []int{100, 1 << 10, 64 << 10, 1 << 20},
		Sidecars:   []bool{true, false},
		Layouts:    []string{benchrun.LayoutFlat, benchrun.LayoutSharded},
		Backends:   []string{osfs.Name, memfs.Name},
	}
	return cfg.Cases()
}

// benchDir is $MQB_BENCH_DIR, or a temporary directory.
func benchDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("MQB_BENCH_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
		return d
	}
	return tb.TempDir()
}

// caseResult is one measurement of a case: the total time of every arm.
type caseResult struct {
	arms []string
	sums []time.Duration
	n    int
}

// measureCase runs n messages of c through a Trial, a batch per arm in
// turn.
func measureCase(tb testing.TB, dir string, c benchrun.Case, n int, reset func()) caseResult {
	tb.Helper()
	t, err := benchrun.NewTrial(dir, c)
	if err != nil {
		tb.Fatal(err)
	}
	defer t.Close()
	if err := t.Fill(n); err != nil {
		tb.Fatal(err)
	}
	res := caseResult{arms: t.Arms(), n: n}
	res.sums = make([]time.Duration, len(res.arms))
	var durs []time.Duration
	if reset != nil {
		reset()
	}
	for done := 0; done < n; {
		k := min(c.BatchSize, n-done)
		if durs, err = t.Step(k, durs); err != nil {
			tb.Fatal(err)
		}
		for i, d := range durs {
			res.sums[i] += d
		}
		done += k
	}
	return res
}

func (r caseResult) report(b *testing.B, c benchrun.Case) {
	spool := r.sums[len(r.sums)-1]
	n := float64(r.n)
	best := time.Duration(0)
	for i, d := range r.sums[:len(r.sums)-1] {
		if best == 0 || d < best {
			best = d
		}
		if name, ok := strings.CutPrefix(r.arms[i], benchrun.RawArmPrefix+"/"); ok {
			b.ReportMetric(float64(d.Nanoseconds())/n, name+"-ns/op")
		}
	}
	b.ReportMetric(float64(spool.Nanoseconds())/n, "ns/op")
	b.ReportMetric(n/spool.Seconds(), "msgs/s")
	b.ReportMetric(n*float64(c.PayloadBytes)/spool.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(best.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(best.Seconds()/spool.Seconds(), "x-raw")
}

func benchOp(b *testing.B, op string) {
	for _, c := range matrix(op) {
		b.Run(c.Name(), func(b *testing.B) {
			r := measureCase(b, benchDir(b), c, b.N, b.ResetTimer)
			b.StopTimer()
			r.report(b, c)
		})
	}
}

// BenchmarkProduce writes b.N messages per case, one batch of the raw
// baseline before each batch of the spool.
func BenchmarkProduce(b *testing.B) { benchOp(b, benchrun.OpProduce) }

// BenchmarkConsume drains a backlog of b.N messages per case with
// Read+Ack, one batch of the raw baseline before each batch of the spool.
func BenchmarkConsume(b *testing.B) { benchOp(b, benchrun.OpConsume) }

// BenchmarkScale fills and drains sharded backlogs and reports
// produce-us/msg, drain-us/msg, drain-peak-MiB and first-read-ms. Set
// MQB_BENCH_1M=1 to add the 1M backlog.
func BenchmarkScale(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if os.Getenv("MQB_BENCH_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run("backlog="+count(n)+"/layout=sharded", func(b *testing.B) {
			for range b.N {
				rs, err := benchrun.Scale(context.Background(), benchrun.ScaleConfig{Dir: benchDir(b), Backlogs: []int{n}, Sidecar: true})
				if err != nil {
					b.Fatal(err)
				}
				r := rs[0]
				b.ReportMetric(r.ProduceUsPerMsg, "produce-us/msg")
				b.ReportMetric(r.DrainUsPerMsg, "drain-us/msg")
				b.ReportMetric(r.DrainPeakRSSMiB, "drain-peak-MiB")
				b.ReportMetric(r.FirstReadMs, "first-read-ms")
				b.ReportMetric(0, "ns/op") // the whole fill and drain: meaningless
			}
		})
	}
}

func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// BenchmarkHandoff measures the latency from Producer.Write returning to
// the waiting consumer's delivery, with the backend's wake-ups and with
// polling every 10ms and every 250ms (the default poll_interval).
func BenchmarkHandoff(b *testing.B) {
	modes := []struct {
		name  string
		wake  bool
		poll  time.Duration
		count int
	}{
		{"wake=inotify", true, 250 * time.Millisecond, 200},
		{"wake=poll/interval=10ms", false, 10 * time.Millisecond, 100},
		{"wake=poll/interval=250ms", false, 250 * time.Millisecond, 20},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			for range b.N {
				r, err := benchrun.Handoff(context.Background(), benchrun.HandoffConfig{
					Dir: benchDir(b), Count: m.count, Wake: m.wake, PollInterval: m.poll})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.P50FromAckMs, "p50-ms")
				b.ReportMetric(r.P99FromAckMs, "p99-ms")
				b.ReportMetric(0, "ns/op") // mostly pauses between messages
			}
		})
	}
}

// BenchmarkProduceBounded measures what max_messages, max_bytes and
// min_free_bytes cost a producer when they are set but never reached: the
// raw baseline, the bounded spool and the unbounded spool take turns, batch
// by batch. It reports bounded-x-raw, spool-x-raw and bounded-x-spool (1.0
// is no cost).
func BenchmarkProduceBounded(b *testing.B) {
	for _, fsync := range []core.FsyncPolicy{core.FsyncNone, core.FsyncBatch, core.FsyncChunk} {
		for _, batch := range []int{1, 256} {
			c := benchrun.Case{Op: benchrun.OpProduce, Fsync: string(fsync), BatchSize: batch, PayloadBytes: 1 << 10,
				Sidecar: true, Layout: benchrun.LayoutFlat, Backend: osfs.Name, Bounded: true}
			b.Run(c.Name(), func(b *testing.B) {
				r := measureCase(b, benchDir(b), c, b.N, b.ResetTimer)
				b.StopTimer()
				arm := map[string]time.Duration{}
				for i, name := range r.arms {
					arm[name] = r.sums[i]
				}
				raw := r.sums[0]
				bounded, spool := arm[benchrun.ArmBounded], arm[benchrun.ArmSpool]
				b.ReportMetric(float64(bounded.Nanoseconds())/float64(r.n), "ns/op")
				b.ReportMetric(raw.Seconds()/bounded.Seconds(), "bounded-x-raw")
				b.ReportMetric(raw.Seconds()/spool.Seconds(), "spool-x-raw")
				b.ReportMetric(spool.Seconds()/bounded.Seconds(), "bounded-x-spool")
			})
		}
	}
}
