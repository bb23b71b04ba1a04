//go:build linux && !mqb_portable

package osfs_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// plainFS hides every optional ability of an FS: core then lists with
// ReadDir and stats entry by entry.
type plainFS struct{ core.FS }

// core.Scan and SurveyLayout count the same with the streamed listings
// (ScanDirInfo, ScanDir) as with ReadDir, on a spool holding payloads,
// sidecars, an orphan sidecar, a temporary file, foreign files, a link and
// chunks of another extension.
func TestStreamedScanCountsAsReadDir(t *testing.T) {
	msgs := make([]core.Message, 50)
	for i := range msgs {
		msgs[i] = core.Message{Payload: make([]byte, i), Metadata: map[string]string{"k": "v"}}
	}
	dir, fsys, o := spoolHolding(t, msgs)
	for name, data := range map[string]string{
		"000000100.json": `{}`, "000000060.bin.tmp": "x", "notes.bin": "x", "README": "x",
		"000000200.dat": "x", "000000200.json": `{}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
	}
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "000000300.bin")))

	streamed, err := core.Scan(context.Background(), fsys, o)
	require.NoError(t, err)
	listed, err := core.Scan(context.Background(), plainFS{fsys}, o)
	require.NoError(t, err)
	assert.Equal(t, listed, streamed)
	assert.Equal(t, 50, streamed.Chunks)
	assert.Equal(t, int64(49*50/2), streamed.Bytes)
	assert.Equal(t, 2, streamed.Orphans, "000000100.json and 000000200.json")

	sv, err := core.SurveyLayout(context.Background(), fsys, o)
	require.NoError(t, err)
	plain, err := core.SurveyLayout(context.Background(), plainFS{fsys}, o)
	require.NoError(t, err)
	assert.Equal(t, plain, sv)
	require.NotNil(t, sv.Mismatch, "000000200.dat beside its sidecar is a chunk of another extension")
	assert.Equal(t, []string{"000000300.bin"}, sv.Links)
	assert.Equal(t, []string{"notes.bin"}, sv.ForeignNames)

	// Count: the same counts without the bytes, and not one Stat where
	// the listing is streamed with types.
	noBytes := *streamed
	noBytes.Bytes, noBytes.MetaBytes = 0, 0
	names := &namesOnlyFS{FS: fsys, scan: fsys}
	counted, err := core.Count(context.Background(), names, o)
	require.NoError(t, err)
	assert.Equal(t, &noBytes, counted)
	assert.Zero(t, names.stats, "Count stat-ed files though the FS streams names and types")
	counted, err = core.Count(context.Background(), plainFS{fsys}, o)
	require.NoError(t, err)
	assert.Equal(t, &noBytes, counted, "Count through ReadDir")

	// CountEach: the same counts, and each payload's number once.
	seen := map[uint64]int{}
	counted, err = core.CountEach(context.Background(), fsys, o, func(seq uint64) { seen[seq]++ })
	require.NoError(t, err)
	assert.Equal(t, &noBytes, counted)
	want := map[uint64]int{}
	for seq := range uint64(50) {
		want[seq] = 1
	}
	assert.Equal(t, want, seen, "the 50 payloads, and not the orphan sidecars nor the link")
}

// namesOnlyFS streams listings with names and types only (core.DirScanner),
// and counts the Stat calls made through it.
type namesOnlyFS struct {
	core.FS
	scan  core.DirScanner
	stats int
}

func (f *namesOnlyFS) ScanDir(name string, fn func(string, fs.FileMode)) error {
	return f.scan.ScanDir(name, fn)
}

func (f *namesOnlyFS) Stat(name string) (fs.FileInfo, error) {
	f.stats++
	return f.FS.Stat(name)
}

// A consumer that streams large payloads keeps each one open from its
// measure (core's measureKept), at most 256 at a time: the descriptors go
// when a delivery's payload is read, when it is acked or nacked unread, and
// when the consumer closes with deliveries in flight.
func TestStreamedDeliveriesKeepNoDescriptor(t *testing.T) {
	const total, size, kept, read = 300, 8192, 256, 280
	msgs := make([]core.Message, total)
	for i := range msgs {
		msgs[i] = core.Message{Payload: make([]byte, size)}
	}
	dir, fsys, o := spoolHolding(t, msgs)

	ctx := context.Background()
	before := openFDs(t)
	c, err := core.OpenConsumer(fsys, o)
	require.NoError(t, err)
	c.SetStreamAbove(4096)
	opened := openFDs(t)         // the claim's lock and the directories backend-os keeps
	first, err := c.Read(ctx, 1) // measured by its read: the rest follow a large one
	require.NoError(t, err)
	require.NoError(t, c.Ack(first...))
	var ds []*core.Delivery
	for len(ds) < read {
		more, err := c.Read(ctx, read-len(ds))
		require.NoError(t, err)
		ds = append(ds, more...)
	}
	assert.Equal(t, opened+kept, openFDs(t), "280 deliveries left on disk keep 256 payloads open")
	_, err = ds[0].ReadInto(nil)
	require.NoError(t, err)
	r, err := ds[1].Open()
	require.NoError(t, err)
	assert.Equal(t, opened+kept-1, openFDs(t), "ReadInto closed what it read; Open handed its file over")
	require.NoError(t, r.Close())

	// Read through the kept descriptor, a payload cut or grown in place
	// since its measure is not its Size.
	require.NoError(t, os.Truncate(filepath.Join(dir, ds[2].Name), size-1))
	_, err = ds[2].ReadInto(make([]byte, 0, 2*size))
	assert.ErrorIs(t, err, core.ErrPayloadSize, "cut")
	f, err := os.OpenFile(filepath.Join(dir, ds[3].Name), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("more"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = ds[3].ReadInto(make([]byte, 0, 2*size))
	assert.ErrorIs(t, err, core.ErrPayloadSize, "grown")
	require.NoError(t, os.Truncate(filepath.Join(dir, ds[4].Name), 10))
	r, err = ds[4].Open()
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, r)
	assert.ErrorIs(t, err, core.ErrPayloadSize, "cut, as a stream")
	require.NoError(t, r.Close())
	assert.Equal(t, opened+kept-5, openFDs(t))

	require.NoError(t, c.Ack(ds[:200]...))
	require.NoError(t, c.Nack(ds[200:240]...))
	assert.Equal(t, opened+kept-240, openFDs(t), "settled deliveries keep nothing open; of the 40 in flight, the first 16 kept theirs")
	require.NoError(t, c.Close())
	assert.Equal(t, before, openFDs(t), "Close closes what deliveries in flight kept")
}

// spoolHolding returns a flat spool (fsync=none) in a scratch directory
// that holds msgs, through backend-os, closed when the test ends.
func spoolHolding(t *testing.T, msgs []core.Message) (string, *osfs.FS, core.Options) {
	t.Helper()
	dir := scratchDir(t)
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.Close() })
	o, err := core.ParseURL("dir-spool://" + dir + "?fsync=none")
	require.NoError(t, err)
	p, err := core.OpenProducer(fsys, o)
	require.NoError(t, err)
	_, err = p.Write(context.Background(), msgs)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	return dir, fsys, o
}
