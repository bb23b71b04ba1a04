package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

// runFlags are the flags of every command that runs a route.
type runFlags struct {
	metricsAddr string
	noProgress  bool
	sets        []string
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, liveness at /ping and readiness at /ready, e.g. 127.0.0.1:9090")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override a key of the route file: PATH=VALUE, e.g. batch.size=10 or output.dir_spool.fsync=batch (repeatable)")
	cmd.Flags().BoolVar(&f.noProgress, "no-progress", false, "do not draw the progress display (drawn only when standard error is a terminal and the route does not write to it)")
}

// routeJob is one route a command runs: label names the command in the
// progress display, name the route in logs and metrics.
type routeJob struct {
	label, name string
	cfg         *bridge.Config
	route       *bridge.Route
}

// runRoute runs route, built from cfg, with logging, metrics and the
// progress display.
func (a *app) runRoute(ctx context.Context, label, name string, cfg *bridge.Config, route *bridge.Route, f *runFlags) error {
	return a.runRoutes(ctx, []routeJob{{label: label, name: name, cfg: cfg, route: route}}, f, false)
}

// runRoutes runs jobs at the same time, with one metrics server for all.
// A failing route stops the others only with failFast; the error joins
// every route's. The progress display is drawn for a single route only.
func (a *app) runRoutes(ctx context.Context, jobs []routeJob, f *runFlags, failFast bool) error {
	ms := make([]*metrics, len(jobs)) // nil without --metrics-addr
	if f.metricsAddr != "" {
		mr := newMetricsRegistry(a.logger)
		for i, j := range jobs { // before serving: /ready waits for every route
			ms[i] = mr.route(j.route, a.routeLabels(j.name, j.cfg))
		}
		srv, addr, err := serveMetrics(f.metricsAddr, mr)
		if err != nil {
			return usage(fmt.Errorf("--metrics-addr %s: %w", f.metricsAddr, err))
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		a.logger.Info("serving metrics", "url", "http://"+addr+"/metrics", "ready", "http://"+addr+"/ready")
	}
	if len(jobs) == 1 {
		return a.runOne(ctx, jobs[0], f, ms[0], true)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.route.Logger = a.logger.With("route", j.name)
			if err := a.runOne(ctx, j, f, ms[i], false); err != nil {
				errs[i] = fmt.Errorf("route %s: %w", j.name, err)
				if failFast && !errors.Is(err, bridge.ErrInterrupted) {
					cancel(fmt.Errorf("route %s failed and --fail-fast is set", j.name))
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runOne runs one route with its metrics (m may be nil) and, when
// progress allows it, the progress display.
func (a *app) runOne(ctx context.Context, j routeJob, f *runFlags, m *metrics, progress bool) (err error) {
	route := j.route
	if route.Logger == nil {
		route.Logger = a.logger
	}
	var observers multiObserver
	if m != nil {
		observers = append(observers, m)
		defer m.setReady(false)
	}
	if progress && a.drawProgress(f, j.cfg) {
		p := newProgress(j.label, a.stderr, func() int { return terminalWidth(a.stderr) }, route, a.logs)
		observers = append(observers, p)
		defer func() { p.stop(outcome(err)) }()
	}
	if len(observers) > 0 {
		route.Observer = observers
	}
	return route.Run(ctx)
}

// drawProgress reports whether the progress display is wanted: standard
// error is a terminal that logs are written to as text, and the route does not write to a terminal, whose
// data lines the display would overwrite (stdout:// or a file target on
// a terminal device).
func (a *app) drawProgress(f *runFlags, cfg *bridge.Config) bool {
	if f.noProgress || a.logFormat == "json" || !isTerminal(a.stderr) {
		return false
	}
	r, err := a.env.Resolve(cfg.Output)
	if err != nil {
		return false
	}
	switch {
	case r.Connector.Name == "stdout":
		return !isTerminal(a.stdout)
	case r.Values.IsSet("path"):
		return !isTerminalPath(r.Values.String("path"), a.stderr)
	}
	return true
}

// outcome is how a route that returned err ended, for the last line of
// the progress display.
func outcome(err error) string {
	switch {
	case err == nil:
		return "done"
	case errors.Is(err, bridge.ErrInterrupted):
		return "interrupted"
	}
	return "failed"
}

// routeLabels are the metric labels of the route named name, built from
// cfg: the connectors are their YAML names (dir_spool, file...).
func (a *app) routeLabels(name string, cfg *bridge.Config) routeLabels {
	l := routeLabels{route: name}
	if r, err := a.env.Resolve(cfg.Input); err == nil {
		l.input = r.Connector.Name
	}
	if r, err := a.env.Resolve(cfg.Output); err == nil {
		l.output = r.Connector.Name
	}
	return l
}

func serveMetrics(addr string, m *metricsRegistry) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: m.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.serveErr(err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// multiObserver fans route events out to several observers.
type multiObserver []bridge.Observer

func (m multiObserver) Started() {
	for _, o := range m {
		if s, ok := o.(bridge.StartObserver); ok {
			s.Started()
		}
	}
}

func (m multiObserver) Received(n, b int) {
	for _, o := range m {
		o.Received(n, b)
	}
}

func (m multiObserver) Sent(n, b int, d time.Duration) {
	for _, o := range m {
		o.Sent(n, b, d)
	}
}

func (m multiObserver) WriteFailed(n int, err error) {
	for _, o := range m {
		o.WriteFailed(n, err)
	}
}

func (m multiObserver) Acked(n int) {
	for _, o := range m {
		o.Acked(n)
	}
}

func (m multiObserver) Nacked(n int) {
	for _, o := range m {
		o.Nacked(n)
	}
}

func (m multiObserver) Retrying(attempt int, wait time.Duration) {
	for _, o := range m {
		o.Retrying(attempt, wait)
	}
}

func (m multiObserver) DeadLettered(n int) {
	for _, o := range m {
		if d, ok := o.(bridge.DeadLetterObserver); ok {
			d.DeadLettered(n)
		}
	}
}
