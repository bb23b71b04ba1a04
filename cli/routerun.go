package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

// runFlags are the flags of every command that runs a route.
type runFlags struct {
	metricsAddr string
	noProgress  bool
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9090")
	cmd.Flags().BoolVar(&f.noProgress, "no-progress", false, "do not draw the progress display (drawn only when standard error is a terminal)")
}

// runRoute runs route with logging, metrics and the progress display.
func (a *app) runRoute(ctx context.Context, route *bridge.Route, f *runFlags) error {
	route.Logger = a.logger
	var observers multiObserver
	if f.metricsAddr != "" {
		m := newMetrics(route)
		srv, addr, err := serveMetrics(f.metricsAddr, m)
		if err != nil {
			return usage(fmt.Errorf("--metrics-addr %s: %w", f.metricsAddr, err))
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		a.logger.Info("serving metrics", "url", "http://"+addr+"/metrics")
		observers = append(observers, m)
	}
	if !f.noProgress && isTerminal(a.stderr) {
		p := newProgress(a.stderr, route, a.logs)
		observers = append(observers, p)
		defer p.stop()
	}
	if len(observers) > 0 {
		route.Observer = observers
	}
	return route.Run(ctx)
}

func serveMetrics(addr string, m *metrics) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.serveErr(err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// multiObserver fans route events out to several observers.
type multiObserver []bridge.Observer

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
