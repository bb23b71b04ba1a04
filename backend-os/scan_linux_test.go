//go:build linux && !mqb_portable

package osfs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// A flat backlog larger than the page one streamed listing keeps (4096
// names) drains in FIFO order with nothing lost or repeated, across holes
// that force a new listing after the cursor (at the page boundary and
// beyond it), in both a draining and a non-destructive pass.
func TestLargeFlatBacklogDrainsInOrder(t *testing.T) {
	const total = 5000
	holes := map[uint64]bool{10: true, 4095: true, 4096: true, 4500: true, 4501: true}
	for _, query := range []string{"", "drain_on_read=false"} {
		t.Run("query="+query, func(t *testing.T) {
			dir := scratchDir(t)
			fsys, err := osfs.New(dir, osfs.Options{})
			require.NoError(t, err)
			defer fsys.Close()
			_, ok := any(fsys).(core.DirScanner)
			require.True(t, ok, "backend os streams listings")
			o, err := core.ParseURL("dir-spool://" + dir + "?fsync=none&" + query)
			require.NoError(t, err)
			p, err := core.OpenProducer(fsys, o)
			require.NoError(t, err)
			msgs := make([]core.Message, total)
			for i := range msgs {
				msgs[i] = core.Message{Payload: []byte{byte(i), byte(i >> 8)}}
			}
			n, err := p.Write(context.Background(), msgs)
			require.NoError(t, err)
			require.Equal(t, total, n)
			require.NoError(t, p.Close())
			l, err := o.Layout()
			require.NoError(t, err)
			for s := range holes {
				require.NoError(t, fsys.Remove(l.Payload(s)))
				require.NoError(t, fsys.Remove(l.Sidecar(s)))
			}

			o.ExitWhenEmpty = true
			c, err := core.OpenConsumer(fsys, o)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rng := rand.New(rand.NewPCG(1, 2))
			var got []uint64
			for {
				ds, err := c.Read(ctx, 1+rng.IntN(300))
				if errors.Is(err, core.ErrEnd) {
					break
				}
				require.NoError(t, err)
				for _, d := range ds {
					got = append(got, d.Seq)
					require.Equal(t, []byte{byte(d.Seq), byte(d.Seq >> 8)}, d.Payload, d.Name)
				}
				require.NoError(t, c.Ack(ds...))
			}
			var want []uint64
			for s := range uint64(total) {
				if !holes[s] {
					want = append(want, s)
				}
			}
			assert.Equal(t, want, got)
		})
	}
}
