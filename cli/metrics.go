package cli

import (
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mqb-project/mqb/bridge"
)

// metrics is a route's Prometheus metrics, on a registry of its own. The
// names follow Redpanda Connect's (input_received, output_sent,
// output_batch_sent, output_error, output_latency_ns) so that existing
// dashboards carry over; mqb adds bytes, acks, nacks, retries and the
// spool backlog.
type metrics struct {
	reg                      *prometheus.Registry
	received, receivedBytes  prometheus.Counter
	sent, sentBytes, batches prometheus.Counter
	errors                   prometheus.Counter
	latency                  prometheus.Histogram
	acks, nacks, retries     prometheus.Counter
	deadLetters              prometheus.Counter
	log                      *slog.Logger
}

func newMetrics(route *bridge.Route) *metrics {
	reg := prometheus.NewRegistry()
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m := &metrics{
		reg:           reg,
		log:           route.Logger,
		received:      counter("input_received", "Messages read from the input; one read again after a failed write counts once (resends are in mqb_nacks)."),
		receivedBytes: counter("input_received_bytes", "Payload bytes read from the input."),
		sent:          counter("output_sent", "Messages the output made durable."),
		sentBytes:     counter("output_sent_bytes", "Payload bytes the output made durable."),
		batches:       counter("output_batch_sent", "Batches the output made durable."),
		errors:        counter("output_error", "Failed batch writes."),
		acks:          counter("mqb_acks", "Messages acknowledged at the input after the output made them durable."),
		nacks:         counter("mqb_nacks", "Messages negatively acknowledged at the input for redelivery."),
		retries:       counter("mqb_retries", "Retries of failed batch writes."),
		deadLetters:   counter("mqb_dead_letters_total", "Messages the output refused that were moved to the dead-letter target."),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "output_latency_ns",
			Help:    "Time a successful batch write took, in nanoseconds.",
			Buckets: prometheus.ExponentialBuckets(float64(50*time.Microsecond), 4, 10),
		}),
	}
	reg.MustRegister(m.latency)
	for role, ep := range map[string]any{"input": route.Source, "output": route.Target} {
		br, ok := ep.(bridge.BacklogReporter)
		if !ok {
			continue
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "mqb_spool_backlog",
			Help:        "Chunks waiting in the spool (counted when scraped).",
			ConstLabels: prometheus.Labels{"path": br.SpoolPath(), "role": role},
		}, func() float64 {
			n, err := br.Backlog()
			if err != nil {
				return math.NaN()
			}
			return float64(n)
		}))
		if ur, ok := ep.(bridge.UnexpectedFilesReporter); ok {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "mqb_spool_unexpected_files",
				Help:        "Files with the payload extension that fit no chunk name of the spool's layout and are never delivered (counted when scraped).",
				ConstLabels: prometheus.Labels{"spool": br.SpoolPath(), "role": role},
			}, func() float64 {
				n, err := ur.UnexpectedFiles()
				if err != nil {
					return math.NaN()
				}
				return float64(n)
			}))
		}
	}
	if bs, ok := route.Target.(bridge.BoundedSpool); ok {
		registerSpoolBounds(reg, bs)
	}
	return m
}

// registerSpoolBounds exports what a dir-spool target's bounds did.
func registerSpoolBounds(reg *prometheus.Registry, bs bridge.BoundedSpool) {
	labels := prometheus.Labels{"spool": bs.SpoolPath()}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mqb_spool_full_waits_total", ConstLabels: labels,
			Help: "Writes that waited for a consumer to make room in the bounded spool (when_full=block)."},
			func() float64 { return float64(bs.FullWaits()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mqb_spool_dropped_total", ConstLabels: labels,
			Help: "Messages dropped because the bounded spool was full (when_full=drop_newest)."},
			func() float64 { return float64(bs.Dropped()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mqb_spool_bytes", ConstLabels: labels,
			Help: "Bytes of the spool's payload and sidecar files."},
			func() float64 {
				n, err := bs.SpoolBytes()
				if err != nil {
					return math.NaN()
				}
				return float64(n)
			}),
	)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *metrics) serveErr(err error) {
	if m.log != nil {
		m.log.Error("metrics server stopped", "error", err)
	}
}

func (m *metrics) Received(n, b int) {
	m.received.Add(float64(n))
	m.receivedBytes.Add(float64(b))
}

func (m *metrics) Sent(n, b int, d time.Duration) {
	m.sent.Add(float64(n))
	m.sentBytes.Add(float64(b))
	m.batches.Inc()
	m.latency.Observe(float64(d.Nanoseconds()))
}

func (m *metrics) WriteFailed(int, error)      { m.errors.Inc() }
func (m *metrics) Acked(n int)                 { m.acks.Add(float64(n)) }
func (m *metrics) Nacked(n int)                { m.nacks.Add(float64(n)) }
func (m *metrics) Retrying(int, time.Duration) { m.retries.Inc() }
func (m *metrics) DeadLettered(n int)          { m.deadLetters.Add(float64(n)) }
