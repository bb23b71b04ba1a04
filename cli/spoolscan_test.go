package cli

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/core"
)

// fakeStatter is a spool whose scans count themselves and, when gate is
// set, last until the test sends on it.
type fakeStatter struct {
	calls   atomic.Int64
	running atomic.Int64 // scans in progress now
	most    atomic.Int64 // the most that ever ran at once
	gate    chan struct{}
}

func (f *fakeStatter) SpoolStats() (*core.Stats, error) {
	n := f.calls.Add(1)
	r := f.running.Add(1)
	defer f.running.Add(-1)
	for m := f.most.Load(); r > m && !f.most.CompareAndSwap(m, r); m = f.most.Load() {
	}
	if f.gate != nil {
		<-f.gate
	}
	return &core.Stats{Chunks: int(n)}, nil
}

func (f *fakeStatter) SpoolPath() string { return "/spool" }

func TestSpoolScanQuickScansEveryScrape(t *testing.T) {
	f := &fakeStatter{}
	scans := []*spoolScan{{s: f}}
	for want := 1; want <= 5; want++ {
		time.Sleep(2 * time.Millisecond) // well past nine times a scan of no work
		r := scanAll(scans, time.Second)[0]
		require.NotNil(t, r.st)
		assert.Equal(t, want, r.st.Chunks, "each scrape of a quick spool sees a scan of its own")
	}
}

func TestSpoolScanSlowAnswersWithTheLastScan(t *testing.T) {
	f := &fakeStatter{gate: make(chan struct{})}
	c := &spoolScan{s: f}
	scans := []*spoolScan{c}

	// The first scrape finds nothing finished and does not wait past its budget.
	begin := time.Now()
	r := scanAll(scans, 50*time.Millisecond)[0]
	assert.Nil(t, r.st, "no scan has finished")
	assert.Less(t, time.Since(begin), time.Second)

	// Scrapes while the scan runs share it.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { scanAll(scans, 20*time.Millisecond) })
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond) // the scan has now taken over 100 ms
	f.gate <- struct{}{}
	require.Eventually(t, func() bool { return c.result().st != nil }, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 1, f.calls.Load(), "one scan for five scrapes")
	assert.EqualValues(t, 1, f.most.Load())
	first := c.result()
	assert.GreaterOrEqual(t, first.took, 150*time.Millisecond)

	// Within nine times its duration the next scrapes get that scan at once.
	r = scanAll(scans, time.Second)[0]
	assert.Equal(t, 1, r.st.Chunks)
	assert.Equal(t, first.ended, r.ended)
	assert.EqualValues(t, 1, f.calls.Load())

	// After the rest, a scrape starts the next scan, and waits for it.
	time.Sleep(time.Until(first.ended.Add(scanRest * first.took)))
	go func() { f.gate <- struct{}{} }()
	r = scanAll(scans, 5*time.Second)[0]
	assert.Equal(t, 2, r.st.Chunks)
	assert.True(t, r.ended.After(first.ended))
}

func TestSpoolGaugesReportTheScan(t *testing.T) {
	f := &fakeStatter{}
	c := &spoolCollector{}
	c.add(spoolEnd{scan: &spoolScan{s: f}, connector: "dir_spool", route: "copy"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	before := time.Now()
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range families {
		require.Len(t, mf.GetMetric(), 1, mf.GetName())
		got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	assert.Equal(t, 1.0, got["mqb_spool_backlog_messages"])
	assert.Equal(t, 0.0, got["mqb_spool_unexpected_files"])
	stamp := got["mqb_spool_scan_timestamp_seconds"]
	assert.InDelta(t, float64(before.UnixNano())/1e9, stamp, 5, "the scan's end, in Unix seconds")
	assert.False(t, math.IsNaN(got["mqb_spool_scan_duration_seconds"]))
	assert.GreaterOrEqual(t, got["mqb_spool_scan_duration_seconds"], 0.0)
}
