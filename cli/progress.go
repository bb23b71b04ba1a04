package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqb-project/mqb/bridge"
)

// progress draws one status line of a running route on a terminal
// (standard error): messages written and their rate, and a bar with a
// percentage and an ETA when the source knows its total (a file's size, a
// drained spool's backlog once it is counted). Log lines print above it. When the route ends
// the line is replaced by a final one that says how far it got.
type progress struct {
	label   string
	w       io.Writer
	width   func() int // columns of the terminal, 0 if unknown
	src     bridge.Progresser
	start   time.Time
	written atomic.Int64
	first   atomic.Int64 // unix nanoseconds of the first message read, 0 before
	logs    *switchWriter

	mu    sync.Mutex
	drawn bool // a status line is on screen
	quit  chan struct{}
	wg    sync.WaitGroup
}

const progressRefresh = 200 * time.Millisecond

func newProgress(label string, w io.Writer, width func() int, route *bridge.Route, logs *switchWriter) *progress {
	pr := &progress{label: label, w: w, width: width, start: time.Now(), quit: make(chan struct{}), logs: logs}
	pr.src, _ = route.Source.(bridge.Progresser)
	if logs != nil {
		logs.set(pr) // log lines print above the status line
	}
	pr.wg.Add(1)
	go pr.loop()
	return pr
}

func (pr *progress) loop() {
	defer pr.wg.Done()
	t := time.NewTicker(progressRefresh)
	defer t.Stop()
	for {
		select {
		case <-pr.quit:
			return
		case <-t.C:
		}
		pr.mu.Lock()
		pr.draw(pr.line(""))
		pr.mu.Unlock()
	}
}

// draw replaces the status line with s. Call it with mu held.
func (pr *progress) draw(s string) {
	if w := pr.width(); w > 1 && len(s) >= w {
		s = s[:w-1] // a wrapped line could not be redrawn in place
	}
	fmt.Fprintf(pr.w, "\r%s\x1b[K", s)
	pr.drawn = true
}

// Write prints a log line above the status line.
func (pr *progress) Write(b []byte) (int, error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.drawn {
		fmt.Fprint(pr.w, "\r\x1b[K")
	}
	n, err := pr.w.Write(b)
	if pr.drawn {
		pr.draw(pr.line(""))
	}
	return n, err
}

// stop ends the display with a line saying how the route ended: outcome
// is "done", "interrupted" or "failed". After a clean end the line stays
// only if one was drawn; an interrupted or failed route always shows where
// it stopped.
func (pr *progress) stop(outcome string) {
	close(pr.quit)
	pr.wg.Wait()
	if pr.logs != nil {
		pr.logs.set(nil)
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if outcome == "done" && !pr.drawn {
		return
	}
	pr.draw(pr.line(outcome))
	fmt.Fprint(pr.w, "\n")
}

// line is the status line now; outcome is empty while the route runs.
func (pr *progress) line(outcome string) string {
	st := progressState{label: pr.label, outcome: outcome, written: pr.written.Load(), elapsed: time.Since(pr.start), total: -1}
	if f := pr.first.Load(); f != 0 {
		st.moving = time.Since(time.Unix(0, f))
	}
	if pr.src != nil {
		st.done, st.total, st.unit = pr.src.Progress()
	}
	return st.String()
}

// progressState is what a status line shows.
type progressState struct {
	label, outcome string
	written        int64 // messages acknowledged
	done, total    int64 // in unit; total <= 0: unknown
	unit           string
	elapsed        time.Duration // since the command started
	moving         time.Duration // since the first message was read
}

func (s progressState) String() string {
	var b strings.Builder
	b.WriteString(s.label)
	if s.outcome != "" {
		b.WriteString(" " + s.outcome)
	}
	secs := max(s.moving.Seconds(), 1e-3)
	rate := fmt.Sprintf("%.0f msg/s", float64(s.written)/secs)
	// A total is known only when the source reports one above zero: a source
	// not yet connected reports 0, and more than the total can arrive (a
	// producer writing into a spool being drained).
	if s.total <= 0 || s.done > s.total {
		fmt.Fprintf(&b, "  %d msgs  %s  %s", s.written, rate, roundDur(s.elapsed))
		return b.String()
	}
	pct := float64(s.done) * 100 / float64(s.total)
	if s.outcome == "" {
		b.WriteString("  " + bar(s.done, s.total, 24))
	}
	if s.unit == "bytes" {
		fmt.Fprintf(&b, "  %3.0f%%  %s / %s  %d msgs", pct, bytesText(s.done), bytesText(s.total), s.written)
	} else {
		fmt.Fprintf(&b, "  %3.0f%%  %d / %d msgs", pct, s.done, s.total)
	}
	fmt.Fprintf(&b, "  %s  %s", rate, roundDur(s.elapsed))
	if s.outcome == "" && s.done > 0 {
		left := time.Duration(float64(s.moving) * float64(s.total-s.done) / float64(s.done))
		fmt.Fprintf(&b, "  ETA %s", roundDur(left))
	}
	return b.String()
}

func bar(done, total int64, width int) string {
	n := int(done * int64(width) / total)
	return "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
}

func bytesText(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}

func roundDur(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func (pr *progress) Received(int, int)            { pr.first.CompareAndSwap(0, time.Now().UnixNano()) }
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
		return w.Write(b)
	}
	return s.base.Write(b)
}
