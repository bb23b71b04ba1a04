package cli

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mqb-project/mqb/bridge"
)

// metricDef is one metric mqb serves: the table both registers the metrics
// and generates docs/reference/metrics.md, so the two cannot drift apart.
type metricDef struct {
	Name   string
	Type   string // counter, gauge or histogram
	Labels []string
	Help   string
}

// metricDefs lists every mqb metric. Names follow Prometheus conventions: an
// mqb_ prefix, the unit in the name, _total on counters.
var metricDefs = []metricDef{
	{"mqb_input_received_total", "counter", []string{"route", "connector"}, "Messages read from the input; one read again after a failed write counts once (resends are in mqb_input_nacked_total)."},
	{"mqb_input_received_bytes_total", "counter", []string{"route", "connector"}, "Payload bytes read from the input."},
	{"mqb_input_acked_total", "counter", []string{"route", "connector"}, "Messages acknowledged at the input once the output made them durable."},
	{"mqb_input_nacked_total", "counter", []string{"route", "connector"}, "Messages negatively acknowledged at the input, to be delivered again."},
	{"mqb_output_sent_total", "counter", []string{"route", "connector"}, "Messages the output made durable."},
	{"mqb_output_sent_bytes_total", "counter", []string{"route", "connector"}, "Payload bytes the output made durable."},
	{"mqb_output_batches_total", "counter", []string{"route", "connector"}, "Batches the output made durable; a batch written in parts (batch.max_bytes) counts once per part."},
	{"mqb_output_errors_total", "counter", []string{"route", "connector"}, "Failed batch writes."},
	{"mqb_output_retries_total", "counter", []string{"route", "connector"}, "Retries of failed batch writes."},
	{"mqb_output_batch_duration_seconds", "histogram", []string{"route", "connector"}, "Time a successful batch write (or part of one) took, in seconds."},
	{"mqb_route_up", "gauge", []string{"route"}, "1 while the route runs with its input and output connected, 0 otherwise; /ready answers 200 only while it is 1."},
	{"mqb_spool_backlog_messages", "gauge", []string{"route", "connector", "spool"}, "Messages (chunks) waiting in a spool the route reads or writes, at the spool's last scan."},
	{"mqb_spool_unexpected_files", "gauge", []string{"route", "connector", "spool"}, "Files in a spool that match no chunk name (foreign files, wrong extensions), at the spool's last scan."},
	{"mqb_spool_bytes", "gauge", []string{"route", "connector", "spool"}, "Bytes of the payload and sidecar files in a spool the route reads or writes, at the spool's last scan."},
	{"mqb_spool_scan_timestamp_seconds", "gauge", []string{"route", "connector", "spool"}, "When the spool's last scan, which the three gauges above report, ended (Unix time); a scrape starts a new scan only once the last one ended nine times its duration ago."},
	{"mqb_spool_scan_duration_seconds", "gauge", []string{"route", "connector", "spool"}, "How long the spool's last scan took."},
	{"mqb_spool_full_waits_total", "counter", []string{"route", "connector", "spool"}, "Writes to a bounded spool that waited for a consumer to make room (when_full=block)."},
	{"mqb_spool_dropped_total", "counter", []string{"route", "connector", "spool"}, "Messages dropped because a bounded spool was full (when_full=drop_newest); each is also logged."},
	{"mqb_dead_letters_total", "counter", []string{"route", "connector"}, "Messages the output refused that the route moved to its dead-letter endpoint (connector: the output's)."},
}

func metricDef1(name string) metricDef {
	for _, d := range metricDefs {
		if d.Name == name {
			return d
		}
	}
	panic("cli: metric " + name + " is not in metricDefs")
}

// routeLabels are the label values of one route: its name and the
// connectors (YAML names) of its two ends.
type routeLabels struct {
	route, input, output string
}

// metricsRegistry is the Prometheus registry of one mqb process: the Go
// runtime and process collectors, and the metrics of each of its routes,
// told apart by their route label.
type metricsRegistry struct {
	reg     *prometheus.Registry
	vecs    map[string]*prometheus.CounterVec
	latency *prometheus.HistogramVec
	up      *prometheus.GaugeVec
	spools  *spoolCollector
	routes  []*metrics
	log     *slog.Logger
}

func newMetricsRegistry(log *slog.Logger) *metricsRegistry {
	mr := &metricsRegistry{reg: prometheus.NewRegistry(), vecs: map[string]*prometheus.CounterVec{}, spools: &spoolCollector{}, log: log}
	mr.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), mr.spools)
	for _, d := range metricDefs {
		if slices.Contains(d.Labels, "spool") {
			continue // reported by spoolCollector from the spool's last scan
		}
		switch d.Type {
		case "counter":
			mr.vecs[d.Name] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
			mr.reg.MustRegister(mr.vecs[d.Name])
		case "histogram":
			mr.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name: d.Name, Help: d.Help,
				Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 100µs to 26s
			}, d.Labels)
			mr.reg.MustRegister(mr.latency)
		}
	}
	d := metricDef1("mqb_route_up")
	mr.up = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
	mr.reg.MustRegister(mr.up)
	return mr
}

// metrics is one route's metrics in a metricsRegistry, and its readiness.
type metrics struct {
	received, receivedBytes  prometheus.Counter
	acks, nacks              prometheus.Counter
	sent, sentBytes, batches prometheus.Counter
	errors, retries          prometheus.Counter
	deadLetters              prometheus.Counter
	latency                  prometheus.Observer
	up                       prometheus.Gauge
	ready                    atomic.Bool
}

// route adds the metrics of route, labelled l.
func (mr *metricsRegistry) route(route *bridge.Route, l routeLabels) *metrics {
	counter := func(name, connector string) prometheus.Counter {
		return mr.vecs[metricDef1(name).Name].WithLabelValues(l.route, connector)
	}
	m := &metrics{
		received:      counter("mqb_input_received_total", l.input),
		receivedBytes: counter("mqb_input_received_bytes_total", l.input),
		acks:          counter("mqb_input_acked_total", l.input),
		nacks:         counter("mqb_input_nacked_total", l.input),
		sent:          counter("mqb_output_sent_total", l.output),
		sentBytes:     counter("mqb_output_sent_bytes_total", l.output),
		batches:       counter("mqb_output_batches_total", l.output),
		errors:        counter("mqb_output_errors_total", l.output),
		retries:       counter("mqb_output_retries_total", l.output),
		deadLetters:   counter("mqb_dead_letters_total", l.output),
		latency:       mr.latency.WithLabelValues(l.route, l.output),
		up:            mr.up.WithLabelValues(l.route),
	}
	m.up.Set(0)
	for ep, connector := range map[any]string{route.Source: l.input, route.Target: l.output} {
		if s, ok := ep.(bridge.SpoolStatter); ok {
			mr.spools.add(spoolEnd{scan: &spoolScan{s: s}, connector: connector, route: l.route})
		}
	}
	mr.routes = append(mr.routes, m)
	return m
}

// handler serves the metrics, /ping (alive: always 200) and /ready (200
// only while the route runs with both ends connected, 503 otherwise).
func (mr *metricsRegistry) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(mr.reg, promhttp.HandlerOpts{Registry: mr.reg}))
	mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "pong")
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {
		for _, m := range mr.routes { // all added before the server starts
			if !m.ready.Load() {
				http.Error(w, "not ready: a route is not running with its input and output connected", http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

func (mr *metricsRegistry) serveErr(err error) {
	if mr.log != nil {
		mr.log.Error("metrics server stopped", "error", err)
	}
}

// setReady records whether the route runs with both ends connected.
func (m *metrics) setReady(ok bool) {
	m.ready.Store(ok)
	if ok {
		m.up.Set(1)
	} else {
		m.up.Set(0)
	}
}

// Started is called once both ends are connected.
func (m *metrics) Started() { m.setReady(true) }

func (m *metrics) Received(n, b int) {
	m.received.Add(float64(n))
	m.receivedBytes.Add(float64(b))
}

func (m *metrics) Sent(n, b int, d time.Duration) {
	m.sent.Add(float64(n))
	m.sentBytes.Add(float64(b))
	m.batches.Inc()
	m.latency.Observe(d.Seconds())
}

func (m *metrics) WriteFailed(int, error)      { m.errors.Inc() }
func (m *metrics) Acked(n int)                 { m.acks.Add(float64(n)) }
func (m *metrics) Nacked(n int)                { m.nacks.Add(float64(n)) }
func (m *metrics) Retrying(int, time.Duration) { m.retries.Inc() }
func (m *metrics) DeadLettered(n int)          { m.deadLetters.Add(float64(n)) }

type spoolEnd struct {
	scan             *spoolScan
	connector, route string
}

// spoolCollector reports each spool of the routes: the backlog, bytes and
// unexpected-files gauges from its last scan (see spoolScan), and a bounded
// spool's counters.
type spoolCollector struct {
	mu   sync.Mutex
	ends []spoolEnd
}

func (c *spoolCollector) add(e spoolEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ends = append(c.ends, e)
}

var (
	backlogDesc      = spoolDesc("mqb_spool_backlog_messages")
	unexpectedDesc   = spoolDesc("mqb_spool_unexpected_files")
	bytesDesc        = spoolDesc("mqb_spool_bytes")
	scanTimeDesc     = spoolDesc("mqb_spool_scan_timestamp_seconds")
	scanDurationDesc = spoolDesc("mqb_spool_scan_duration_seconds")
	fullWaitsDesc    = spoolDesc("mqb_spool_full_waits_total")
	droppedDesc      = spoolDesc("mqb_spool_dropped_total")
)

func spoolDesc(name string) *prometheus.Desc {
	d := metricDef1(name)
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

func (c *spoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{backlogDesc, unexpectedDesc, bytesDesc, scanTimeDesc, scanDurationDesc, fullWaitsDesc, droppedDesc} {
		ch <- d
	}
}

func (c *spoolCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ends := append([]spoolEnd(nil), c.ends...)
	c.mu.Unlock()
	scans := make([]*spoolScan, len(ends))
	for i, e := range ends {
		scans[i] = e.scan
	}
	for i, r := range scanAll(scans, scanWait) {
		e := ends[i]
		labels := []string{e.route, e.connector, e.scan.s.SpoolPath()}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		backlog, unexpected, bytes := math.NaN(), math.NaN(), math.NaN() // none finished yet, or it failed
		if r.st != nil {
			backlog, unexpected, bytes = float64(r.st.Chunks), float64(r.st.Unexpected), float64(r.st.Bytes+r.st.MetaBytes)
		}
		gauge(backlogDesc, backlog)
		gauge(unexpectedDesc, unexpected)
		gauge(bytesDesc, bytes)
		if !r.ended.IsZero() {
			gauge(scanTimeDesc, float64(r.ended.UnixNano())/1e9)
			gauge(scanDurationDesc, r.took.Seconds())
		}
		if b, ok := e.scan.s.(bridge.BoundedSpool); ok && b.Bounded() {
			ch <- prometheus.MustNewConstMetric(fullWaitsDesc, prometheus.CounterValue, float64(b.FullWaits()), labels...)
			ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(b.Dropped()), labels...)
		}
	}
}
