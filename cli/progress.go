package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mqb-project/mqb/bridge"
)

// progress draws a route's progress on standard error: messages written
// and their rate, and a bar with an ETA when the source knows its total (a
// file's size, a drained spool's backlog).
type progress struct {
	p       *mpb.Progress
	bar     *mpb.Bar
	src     bridge.Progresser
	known   bool // the bar has a total
	written atomic.Int64
	start   time.Time
	quit    chan struct{}
	wg      sync.WaitGroup
	logs    *switchWriter
}

func newProgress(w io.Writer, route *bridge.Route, logs *switchWriter) *progress {
	pr := &progress{start: time.Now(), quit: make(chan struct{}), logs: logs}
	pr.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(200*time.Millisecond))
	pr.src, _ = route.Source.(bridge.Progresser)
	if logs != nil {
		logs.set(pr.p) // log lines print above the bar
	}
	pr.wg.Add(1)
	go pr.poll()
	return pr
}

// addBar adds the bar once the source is connected and knows its total,
// or a spinner when it does not.
func (pr *progress) addBar(total int64, unit string) {
	rate := decor.Any(func(decor.Statistics) string {
		n := pr.written.Load()
		secs := time.Since(pr.start).Seconds()
		if secs <= 0 {
			secs = 1e-9
		}
		return fmt.Sprintf("%d msgs  %.0f msg/s", n, float64(n)/secs)
	}, decor.WCSyncSpace)
	if total >= 0 {
		counters := decor.CountersNoUnit("%d / %d", decor.WCSyncSpace)
		if unit == "bytes" {
			counters = decor.CountersKibiByte("% .1f / % .1f", decor.WCSyncSpace)
		}
		pr.bar = pr.p.New(total, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name("copy", decor.WCSyncSpaceR), counters),
			mpb.AppendDecorators(rate, decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)),
		)
		pr.known = true
		return
	}
	pr.bar = pr.p.New(0, mpb.SpinnerStyle(),
		mpb.PrependDecorators(decor.Name("copy", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(rate, decor.Name(" "), decor.Elapsed(decor.ET_STYLE_GO)),
	)
}

func (pr *progress) poll() {
	defer pr.wg.Done()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-pr.quit:
			return
		case <-t.C:
		}
		var done, total int64 = 0, -1
		unit := ""
		if pr.src != nil {
			done, total, unit = pr.src.Progress()
		}
		if pr.bar == nil {
			if total < 0 && time.Since(pr.start) < time.Second {
				continue // the source may not be connected yet
			}
			pr.addBar(total, unit)
		}
		if pr.known {
			pr.bar.SetCurrent(done)
		}
	}
}

// stop removes the display; the last state stays on screen.
func (pr *progress) stop() {
	close(pr.quit)
	pr.wg.Wait()
	// mpb prints lines written through it (the route's last log lines) only
	// at its next refresh: let one happen before it shuts down.
	time.Sleep(250 * time.Millisecond)
	if pr.bar == nil {
		pr.p.Wait() // nothing was drawn
		if pr.logs != nil {
			pr.logs.set(nil)
		}
		return
	}
	if pr.known {
		done, _, _ := pr.src.Progress()
		pr.bar.SetCurrent(done)
	}
	if pr.bar.Current() > 0 || pr.written.Load() > 0 {
		pr.bar.SetTotal(-1, true)
	} else {
		pr.bar.Abort(false)
	}
	pr.p.Wait()
	if pr.logs != nil {
		pr.logs.set(nil)
	}
}

func (pr *progress) Received(int, int)            {}
func (pr *progress) Sent(int, int, time.Duration) {}
func (pr *progress) WriteFailed(int, error)       {}
func (pr *progress) Acked(n int)                  { pr.written.Add(int64(n)) }
func (pr *progress) Nacked(int)                   {}
func (pr *progress) Retrying(int, time.Duration)  {}

// switchWriter is where logs go: standard error, or above the progress
// display while one is drawn.
type switchWriter struct {
	mu   sync.Mutex
	base io.Writer
	cur  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = w
}

func (s *switchWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	w := s.cur
	s.mu.Unlock()
	if w != nil {
		if n, err := w.Write(b); err == nil {
			return n, nil
		}
	}
	return s.base.Write(b)
}
