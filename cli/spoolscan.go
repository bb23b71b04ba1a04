package cli

import (
	"sync"
	"time"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// The spool gauges come from a scan of the spool, which reads every name
// and sizes every file: milliseconds for a small spool, seconds for one of
// millions of chunks. Scanned on every scrape, a large spool would cost a
// core and outlast the scraper's timeout. So each spool keeps its last
// scan:
//
//   - a scrape starts a new scan once the last one ended scanRest times its
//     own duration ago (a small spool: every scrape; a spool whose scan takes
//     5 s: at most one scan per 50 s, a tenth of one core at most);
//   - only one scan of a spool runs at a time, whatever the scrapes;
//   - a scrape waits for a running scan up to scanWait, then answers with
//     the last finished one (or none yet: NaN), and the mqb_spool_scan_*
//     gauges say when that scan ended and how long it took.

const (
	scanRest = 9               // rest between scans, in units of the last scan's duration
	scanWait = 1 * time.Second // how long a scrape waits for a running scan
)

// spoolScan is the last scan of one spool end, and the one running.
type spoolScan struct {
	s bridge.SpoolStatter

	mu      sync.Mutex
	last    scanResult
	running chan struct{} // closed when the running scan ends; nil if none
}

// scanResult is one finished scan: its figures (nil when it failed or
// none has finished), when it ended and how long it took.
type scanResult struct {
	st    *core.Stats
	ended time.Time
	took  time.Duration
}

// start begins a scan unless one runs or the last is fresh enough, and
// returns a channel closed when the scan a caller may wait for ends (nil:
// nothing to wait for).
func (c *spoolScan) start(now time.Time) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		return c.running
	}
	if !c.last.ended.IsZero() && now.Sub(c.last.ended) < scanRest*c.last.took {
		return nil
	}
	done := make(chan struct{})
	c.running = done
	go c.scan(done)
	return done
}

func (c *spoolScan) scan(done chan struct{}) {
	begin := time.Now()
	st, err := c.s.SpoolStats()
	if err != nil {
		st = nil // not open yet, or the scan failed: the gauges read NaN
	}
	end := time.Now()
	c.mu.Lock()
	c.last = scanResult{st: st, ended: end, took: end.Sub(begin)}
	c.running = nil
	c.mu.Unlock()
	close(done)
}

// result returns the last finished scan.
func (c *spoolScan) result() scanResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// scanAll starts a scan of each spool that wants one, waits until they end
// or wait has passed, and returns each spool's last finished scan.
func scanAll(scans []*spoolScan, wait time.Duration) []scanResult {
	now := time.Now()
	running := make([]<-chan struct{}, len(scans))
	for i, c := range scans {
		running[i] = c.start(now)
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for _, done := range running {
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-timeout.C:
			return results(scans)
		}
	}
	return results(scans)
}

func results(scans []*spoolScan) []scanResult {
	out := make([]scanResult, len(scans))
	for i, c := range scans {
		out[i] = c.result()
	}
	return out
}
