package dirspool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// The metrics server scrapes a route's spools, and the progress display
// reads the source's progress, from goroutines of their own, from before
// the route connects until after it closes. Run with -race: neither may
// race with Connect or Close.
func TestStatsWhileConnectingAndClosing(t *testing.T) {
	e := env()
	ctx := context.Background()
	url := "dir-spool://" + t.TempDir() + "/s?max_messages=100"
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	src, _, err := e.NewSource(bridge.Endpoint{URL: url})
	require.NoError(t, err)

	var stop atomic.Bool
	var wg sync.WaitGroup
	scrape := func(ep any) {
		for !stop.Load() {
			ep.(bridge.SpoolStatter).SpoolStats()
			ep.(bridge.BacklogReporter).Backlog()
			if p, ok := ep.(bridge.Progresser); ok {
				p.Progress()
			}
			if b, ok := ep.(bridge.BoundedSpool); ok {
				b.Dropped()
				b.FullWaits()
			}
		}
	}
	wg.Go(func() { scrape(tgt) })
	wg.Go(func() { scrape(src) })
	require.NoError(t, tgt.Connect(ctx))
	require.NoError(t, tgt.WriteBatch(ctx, []*bridge.Message{{ID: "a", Payload: []byte("x")}}))
	require.NoError(t, src.Connect(ctx))
	require.NoError(t, tgt.Close(ctx, nil))
	require.NoError(t, src.Close(ctx))
	stop.Store(true)
	wg.Wait()
}
