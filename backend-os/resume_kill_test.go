//go:build linux

package osfs_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
	"github.com/stretchr/testify/require"
)

// TestResumeAfterKill SIGKILLs a draining consumer that has acked 1000
// messages and holds more, some nacked and some in flight: its CONSUMER
// record must hold a frontier at or below the first message it did not
// ack, and the next consumer, starting from that frontier, must deliver
// every message left, in order, skipping none.
func TestResumeAfterKill(t *testing.T) {
	for _, layout := range []string{"", "naming_pattern={seq:06}&shard_depth=2&shard_width=2"} {
		t.Run("layout="+layout, func(t *testing.T) {
			dir := scratchDir(t)
			query := "fsync=none&" + layout
			o, err := core.ParseURL("dir-spool://" + dir + "?" + query)
			require.NoError(t, err)
			fsys, err := osfs.New(dir, osfs.Options{CreateRoot: true})
			require.NoError(t, err)
			defer fsys.Close()
			end := produce(t, fsys, o, 1, 2000)

			h := startHelper(t, "holder", helperParams{dir: dir, query: query, count: 1000, batch: 7})
			require.NoError(t, h.opened(30*time.Second))
			deadline := time.Now().Add(time.Minute)
			for h.tail() != "holding" {
				require.True(t, time.Now().Before(deadline), "holder did not get to hold: %q", h.tail())
				time.Sleep(10 * time.Millisecond)
			}
			h.kill()
			firstUnacked := uint64(0)
			for _, ev := range h.events() {
				if ev[0] == "done" && ev[1] == formatSeq(firstUnacked) {
					firstUnacked++
				}
			}
			require.Equal(t, uint64(1000), firstUnacked, "the holder acked 0..999 in order")
			rec, _, err := core.ReadHolder(fsys, core.ConsumerFile)
			require.NoError(t, err)
			require.NotNil(t, rec)
			require.NotNil(t, rec.AckedBelow, "the killed consumer recorded no frontier")
			require.LessOrEqual(t, *rec.AckedBelow, firstUnacked, "the frontier is above a message not acked")
			require.Positive(t, *rec.AckedBelow, "the killed consumer recorded no frontier before it was killed")

			o.ExitWhenEmpty = true
			c, err := core.OpenConsumer(fsys, o)
			require.NoError(t, err)
			defer c.Close()
			want := firstUnacked
			for {
				ds, err := c.Read(context.Background(), 16)
				if errors.Is(err, core.ErrEnd) {
					break
				}
				require.NoError(t, err)
				for _, d := range ds {
					require.Equal(t, want, d.Seq, "the next consumer delivered out of order or skipped")
					want++
				}
				require.NoError(t, c.Ack(ds...))
			}
			require.Equal(t, end, want, "the next consumer stopped before the end")
		})
	}
}

func formatSeq(s uint64) string { return strconv.FormatUint(s, 10) }
