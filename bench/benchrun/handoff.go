package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// HandoffConfig selects a producer-to-consumer latency run.
type HandoffConfig struct {
	Dir     string // where the spool lives (backend os)
	Backend string // default os
	Count   int    // messages, one at a time; default 200
	Fsync   string // default chunk
	// Wake uses the backend's wake-ups (inotify for os); false hides them
	// so that the consumer only polls.
	Wake bool
	// PollInterval is the consumer's poll_interval; default 250ms, the
	// option's default.
	PollInterval time.Duration
	// MaxGap bounds the random pause before each message, so that writes
	// arrive at random moments of the consumer's wait; default 2ms with
	// wake-ups and PollInterval when polling (so a poll-mode figure is that
	// of messages arriving at random times, not right after a poll).
	MaxGap time.Duration
}

// HandoffResult is the latency from a producer's write to the consumer's
// delivery. FromAck is measured from the moment Producer.Write returned (a
// delivery may come first: the chunk is visible before its directory sync
// returns, and those count as 0); FromWrite from the moment it was called.
type HandoffResult struct {
	Mode           string  `json:"mode"` // wake or poll
	Backend        string  `json:"backend"`
	Fsync          string  `json:"fsync"`
	PollIntervalMs float64 `json:"poll_interval_ms"`
	Count          int     `json:"count"`
	P50FromAckMs   float64 `json:"p50_from_ack_ms"`
	P99FromAckMs   float64 `json:"p99_from_ack_ms"`
	MaxFromAckMs   float64 `json:"max_from_ack_ms"`
	P50FromWriteMs float64 `json:"p50_from_write_ms"`
	P99FromWriteMs float64 `json:"p99_from_write_ms"`
	BeforeAck      int     `json:"delivered_before_ack"`
}

// noWatchFS hides a backend's DirWatcher so that a consumer polls.
type noWatchFS struct{ core.FS }

func (f noWatchFS) SyncAll() error {
	if s, ok := f.FS.(core.FSSyncer); ok {
		return s.SyncAll()
	}
	return errors.ErrUnsupported
}

func (cfg HandoffConfig) withDefaults() HandoffConfig {
	if cfg.Backend == "" {
		cfg.Backend = osfs.Name
	}
	if cfg.Count <= 0 {
		cfg.Count = 200
	}
	if cfg.Fsync == "" {
		cfg.Fsync = string(core.FsyncChunk)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.MaxGap <= 0 {
		cfg.MaxGap = 2 * time.Millisecond
		if !cfg.Wake {
			cfg.MaxGap = cfg.PollInterval
		}
	}
	return cfg
}

// Handoff writes Count messages one at a time, each after the consumer
// delivered the one before and a short random pause, and measures how long
// each took to reach the waiting consumer.
func Handoff(ctx context.Context, cfg HandoffConfig) (HandoffResult, error) {
	cfg = cfg.withDefaults()
	res := HandoffResult{Mode: "poll", Backend: cfg.Backend, Fsync: cfg.Fsync, Count: cfg.Count, PollIntervalMs: msOf(cfg.PollInterval)}
	if cfg.Wake {
		res.Mode = "wake"
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp(cfg.Dir, "mqb-handoff-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	sfs, err := openFS(cfg.Backend, dir)
	if err != nil {
		return res, err
	}
	defer sfs.close()
	fsys := sfs.fs
	if !cfg.Wake {
		fsys = noWatchFS{fsys}
	}
	o := spoolOptions(dir, cfg.Fsync, LayoutFlat, true)
	o.ExitWhenEmpty = false
	o.PollInterval = cfg.PollInterval
	p, err := core.OpenProducer(fsys, o)
	if err != nil {
		return res, err
	}
	defer p.Close()
	c, err := core.OpenConsumer(fsys, o)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := startDeliveries(ctx, c)
	defer func() {
		cancel()
		d.stop()
	}()
	err = measureHandoffs(ctx, cfg, p, d, &res)
	return res, err
}

// deliveries reads and acks one message at a time in the background and
// sends the moment each was delivered on got, which it closes when Read
// fails; err then says why, unless the context was canceled.
type deliveries struct {
	c   *core.Consumer
	got chan time.Time
	wg  sync.WaitGroup
	err error
}

func startDeliveries(ctx context.Context, c *core.Consumer) *deliveries {
	d := &deliveries{c: c, got: make(chan time.Time, 1)}
	d.wg.Go(func() {
		for {
			ds, err := c.Read(ctx, 1)
			now := time.Now()
			if err != nil {
				if ctx.Err() == nil {
					d.err = err
				}
				close(d.got)
				return
			}
			if err := c.Ack(ds...); err != nil {
				d.err = err
			}
			for range ds {
				d.got <- now
			}
		}
	})
	return d
}

// stop waits for the reader, whose context must be canceled, and closes
// the consumer.
func (d *deliveries) stop() {
	d.wg.Wait()
	d.c.Close()
}

// measureHandoffs writes cfg.Count messages, each after a random pause and
// once the one before was delivered, and fills res's percentiles.
func measureHandoffs(ctx context.Context, cfg HandoffConfig, p *core.Producer, d *deliveries, res *HandoffResult) error {
	fromAck := make([]time.Duration, 0, cfg.Count)
	fromWrite := make([]time.Duration, 0, cfg.Count)
	msg := make([]core.Message, 1)
	wait := cfg.PollInterval + 10*time.Second
	for range cfg.Count {
		time.Sleep(rand.N(cfg.MaxGap))
		msg[0] = core.Message{Metadata: benchMetadata, Payload: []byte("ping")}
		t0 := time.Now()
		if _, err := p.Write(ctx, msg); err != nil {
			return err
		}
		t1 := time.Now()
		var at time.Time
		var ok bool
		select {
		case at, ok = <-d.got:
		case <-time.After(wait):
			return fmt.Errorf("message not delivered within %s", wait)
		}
		if !ok {
			return fmt.Errorf("consumer stopped: %w", d.err)
		}
		lag := at.Sub(t1)
		if lag < 0 {
			lag = 0
			res.BeforeAck++
		}
		fromAck = append(fromAck, lag)
		fromWrite = append(fromWrite, at.Sub(t0))
	}
	res.P50FromAckMs = msOf(percentile(fromAck, 50))
	res.P99FromAckMs = msOf(percentile(fromAck, 99))
	res.MaxFromAckMs = msOf(percentile(fromAck, 100))
	res.P50FromWriteMs = msOf(percentile(fromWrite, 50))
	res.P99FromWriteMs = msOf(percentile(fromWrite, 99))
	return nil
}

// WriteHandoffText writes hand-off results as a table.
func WriteHandoffText(w io.Writer, rs []HandoffResult) error {
	fmt.Fprintf(w, "%5s %7s %6s %9s %6s %12s %12s %12s %14s %14s %11s\n",
		"mode", "backend", "fsync", "poll", "count", "p50 from ack", "p99 from ack", "max from ack", "p50 from write", "p99 from write", "before ack")
	for _, r := range rs {
		fmt.Fprintf(w, "%5s %7s %6s %7.0fms %6d %10.3fms %10.3fms %10.3fms %12.3fms %12.3fms %11d\n",
			r.Mode, r.Backend, r.Fsync, r.PollIntervalMs, r.Count, r.P50FromAckMs, r.P99FromAckMs, r.MaxFromAckMs,
			r.P50FromWriteMs, r.P99FromWriteMs, r.BeforeAck)
	}
	return nil
}
