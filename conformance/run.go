package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core"
)

// TB is the part of testing.TB that the checks use. *testing.T satisfies it;
// Check supplies its own implementation.
//
// As with testing.T, Fatalf and Skipf must be called from the goroutine
// running the check.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
}

var _ TB = (*testing.T)(nil)

// Config tunes a run of the suite. The zero value is the default.
type Config struct {
	// Timeout bounds each check; 0 means 2 minutes (10 in Long mode).
	// When it passes the check fails and its context is canceled.
	Timeout time.Duration

	// Long makes the fault-injection and power-cut loops explore more
	// operations, seeds and error codes. The environment variable
	// MQB_CONFORMANCE_LONG=1 sets it too.
	Long bool

	// Seed makes the random choices of the loops; 0 picks a fixed default
	// so that runs are reproducible.
	Seed int64

	// Match, when set, runs only the checks whose name it matches, like
	// go test -run.
	Match *regexp.Regexp

	// Skip, when set, leaves out the checks whose name it matches, like
	// go test -skip.
	Skip *regexp.Regexp

	// SharedLocks says the FS's claims do not conflict within one process
	// (Linux flock on NFS does this), so the checks that need two
	// conflicting claims in one process skip instead of failing. Claims
	// must still exclude other processes.
	SharedLocks bool
}

// selects reports whether the check called name is to run.
func (c Config) selects(name string) bool {
	return (c.Match == nil || c.Match.MatchString(name)) && (c.Skip == nil || !c.Skip.MatchString(name))
}

func (c Config) withDefaults() Config {
	if v := os.Getenv("MQB_CONFORMANCE_LONG"); v != "" && v != "0" && v != "false" {
		c.Long = true
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
		if c.Long {
			c.Timeout = 10 * time.Minute
		}
	}
	if c.Seed == 0 {
		c.Seed = 20240601
	}
	return c
}

// loopStats counts what the durability loops explored.
type loopStats struct {
	FaultsInjected int64 // operations failed on purpose by FaultInjection
	CrashPoints    int64 // operations before which PowerCut took power-cut states
	CrashStates    int64 // power-cut states PowerCut reopened and checked
}

// env is what a check gets besides its TB.
type env struct {
	ctx   context.Context // canceled when the check times out
	cfg   Config
	newFS func() core.FS // a fresh, empty FS; fails the check on error
	stats *loopStats
}

// check is one named conformance check.
type check struct {
	name string
	fn   func(t TB, e *env)
}

// Run runs every check of the suite as a subtest of t, each on fresh
// filesystems from newFS. newFS is called at least once per subtest, with
// that subtest's t; it should return an empty FS and register its cleanup
// with t.Cleanup.
func Run(t *testing.T, newFS func(t *testing.T) core.FS) {
	RunConfig(t, Config{}, newFS)
}

// RunConfig is Run with a Config.
func RunConfig(t *testing.T, cfg Config, newFS func(t *testing.T) core.FS) {
	t.Helper()
	cfg = cfg.withDefaults()
	stats := &loopStats{}
	for _, c := range allChecks() {
		if !cfg.selects(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			timer := time.AfterFunc(cfg.Timeout, func() {
				t.Errorf("%s did not finish within %v; canceling it", c.name, cfg.Timeout)
				cancel()
			})
			defer timer.Stop()
			e := &env{ctx: ctx, cfg: cfg, stats: stats, newFS: func() core.FS {
				fsys := newFS(t)
				if fsys == nil {
					t.Fatalf("newFS returned nil")
				}
				return fsys
			}}
			c.fn(t, e)
		})
	}
	summary := fmt.Sprintf("conformance summary: %d faults injected, %d crash points explored (%d crashed states reopened) (long=%v, seed=%d)",
		atomic.LoadInt64(&stats.FaultsInjected), atomic.LoadInt64(&stats.CrashPoints), atomic.LoadInt64(&stats.CrashStates), cfg.Long, cfg.Seed)
	t.Log(summary)
	Report(t, summary)
}

// ReportEnv names an environment variable: when it holds a file name,
// Report appends its lines there too, so that the figures of a passing run
// (which go test hides without -v) can be shown, as CI does.
const ReportEnv = "MQB_CONFORMANCE_REPORT"

// Report logs line on t and, when ReportEnv names a file, appends it there
// prefixed with the test's name.
func Report(t *testing.T, line string) {
	t.Helper()
	name := os.Getenv(ReportEnv)
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Errorf("%s: %v", ReportEnv, err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s: %s\n", t.Name(), line); err != nil {
		t.Errorf("%s: %v", ReportEnv, err)
	}
}

// Result is the outcome of one check run by Check.
type Result struct {
	Name     string
	Passed   bool   // false when it failed or was skipped
	Skipped  bool   // it did not apply; Err says why
	Err      string // the failures (or the skip reason), one per line
	Log      string // what the check logged, one line each
	Duration time.Duration
}

// Check runs every check of the suite outside go test and returns one Result
// per check, in order. newFS must return a fresh, empty FS each time it is
// called (for a real directory: a new subdirectory). An FS that is an
// io.Closer is closed when its check ends. Check stops early, marking the
// remaining checks as skipped, when ctx ends.
func Check(ctx context.Context, newFS func() (core.FS, error)) []Result {
	return CheckConfig(ctx, Config{}, newFS)
}

// CheckConfig is Check with a Config.
func CheckConfig(ctx context.Context, cfg Config, newFS func() (core.FS, error)) []Result {
	cfg = cfg.withDefaults()
	stats := &loopStats{}
	var out []Result
	for _, c := range allChecks() {
		if !cfg.selects(c.name) {
			continue
		}
		if ctx.Err() != nil {
			out = append(out, Result{Name: c.name, Skipped: true, Err: "not run: " + ctx.Err().Error()})
			continue
		}
		out = append(out, runOne(ctx, cfg, stats, c, newFS))
	}
	return out
}

// runOne runs c in its own goroutine on a runnerT.
func runOne(parent context.Context, cfg Config, stats *loopStats, c check, newFS func() (core.FS, error)) Result {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	r := &runnerT{name: c.name}
	e := &env{ctx: ctx, cfg: cfg, stats: stats, newFS: func() core.FS {
		fsys, err := newFS()
		if err != nil {
			r.Fatalf("newFS: %v", err)
		}
		if fsys == nil {
			r.Fatalf("newFS returned nil")
		}
		if cl, ok := fsys.(io.Closer); ok {
			r.Cleanup(func() { _ = cl.Close() })
		}
		return fsys
	}}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.runCleanups()
		c.fn(r, e)
	}()
	timer := time.NewTimer(cfg.Timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		r.Errorf("did not finish within %v; canceling it", cfg.Timeout)
		cancel()
		grace := min(10*time.Second, cfg.Timeout)
		select {
		case <-done:
		case <-time.After(grace):
			r.Errorf("still running %v after being canceled; abandoned", grace)
		}
	}
	return r.result(time.Since(start))
}

// runnerT is the TB of Check: it records instead of printing.
type runnerT struct {
	name string

	mu       sync.Mutex
	failed   bool
	skipped  bool
	errs     []string
	logs     []string
	cleanups []func()
}

func (r *runnerT) Helper()      {}
func (r *runnerT) Name() string { return r.name }

func (r *runnerT) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *runnerT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *runnerT) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *runnerT) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *runnerT) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *runnerT) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *runnerT) runCleanups() {
	for {
		r.mu.Lock()
		n := len(r.cleanups)
		if n == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[n-1]
		r.cleanups = r.cleanups[:n-1]
		r.mu.Unlock()
		f()
	}
}

func (r *runnerT) result(d time.Duration) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Name: r.name, Duration: d, Err: strings.Join(r.errs, "\n"), Log: strings.Join(r.logs, "\n")}
	switch {
	case r.failed:
	case r.skipped:
		res.Skipped = true
	default:
		res.Passed = true
	}
	return res
}
