package bench

import (
	"context"
	"os"
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bench/benchrun"
	"github.com/mqb-project/mqb/core"
)

// aloneMetadata is the metadata of every message of BenchmarkSpoolAlone,
// the same shape as the matrix's.
var aloneMetadata = map[string]string{"content_type": "application/octet-stream", "source": "mqb-bench"}

// BenchmarkSpoolAlone produces, then drains, 1 KiB messages with sidecars
// through the spool on backend-os alone, without the raw arm the matrix
// runs beside it, so that -benchmem counts the spool's own allocations per
// message (B/op and allocs/op are per message). Those counts do not depend
// on the machine's load, unlike ns/op. Consume cases read payloads both
// ways: read=bytes takes a new Delivery.Payload per message, read=lent
// lends buffers from a core.BufferPool refilled at Ack.
func BenchmarkSpoolAlone(b *testing.B) {
	for _, layout := range []string{"flat", "sharded"} {
		for _, fsync := range []core.FsyncPolicy{core.FsyncNone, core.FsyncChunk} {
			for _, batch := range []int{1, 256} {
				name := "fsync=" + string(fsync) + "/batch=" + count(batch) + "/layout=" + layout
				b.Run("op=produce/"+name, func(b *testing.B) { aloneProduce(b, layout, fsync, batch) })
				for _, read := range []string{"bytes", "lent"} {
					b.Run("op=consume/"+name+"/read="+read, func(b *testing.B) { aloneConsume(b, layout, fsync, batch, 1<<10, read) })
				}
			}
		}
	}
}

// BenchmarkSpoolAloneLarge is BenchmarkSpoolAlone's drain of 64 KiB and
// 1 MiB payloads (fsync=none, batch 256, flat), where the payload buffer
// is most of what a delivery allocates. read=stream leaves each payload on
// disk (Consumer.SetStreamAbove) and reads it into one buffer
// (Delivery.ReadInto), as the matrix's --read stream does.
func BenchmarkSpoolAloneLarge(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		for _, read := range []string{"bytes", "lent", "stream"} {
			name := "op=consume/fsync=none/batch=256/layout=flat/size=" + benchrun.FormatSize(int64(size)) + "/read=" + read
			b.Run(name, func(b *testing.B) { aloneConsume(b, "flat", core.FsyncNone, 256, size, read) })
		}
	}
}

func aloneOptions(b *testing.B, layout string, fsync core.FsyncPolicy) (*osfs.FS, core.Options) {
	dir, err := os.MkdirTemp(benchDir(b), "alone-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	fsys, err := osfs.New(dir, osfs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fsys.Close() })
	o := core.DefaultOptions(dir)
	o.Fsync = fsync
	o.ExitWhenEmpty = true
	if layout == "sharded" {
		o.ShardDepth, o.ShardWidth = 2, 3
	}
	return fsys, o
}

// aloneWrite writes n messages in batches of batch.
func aloneWrite(b *testing.B, p *core.Producer, n, batch int, payload []byte) {
	msgs := make([]core.Message, batch)
	for done := 0; done < n; {
		k := min(batch, n-done)
		for i := range msgs[:k] {
			msgs[i] = core.Message{Metadata: aloneMetadata, Payload: payload}
		}
		if _, err := p.Write(context.Background(), msgs[:k]); err != nil {
			b.Fatal(err)
		}
		done += k
	}
}

func aloneProduce(b *testing.B, layout string, fsync core.FsyncPolicy, batch int) {
	fsys, o := aloneOptions(b, layout, fsync)
	p, err := core.OpenProducer(fsys, o)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, 1<<10)
	b.ReportAllocs()
	b.ResetTimer()
	aloneWrite(b, p, b.N, batch, payload)
}

func aloneConsume(b *testing.B, layout string, fsync core.FsyncPolicy, batch, size int, read string) {
	fsys, o := aloneOptions(b, layout, fsync)
	fill := o
	fill.Fsync = core.FsyncNone
	p, err := core.OpenProducer(fsys, fill)
	if err != nil {
		b.Fatal(err)
	}
	aloneWrite(b, p, b.N, 256, make([]byte, size))
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := core.OpenConsumer(fsys, o)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var pool *core.BufferPool
	if read == "lent" || read == "stream" {
		pool = core.NewBufferPool(1 << 62)
		c.LendPayloadBuffers(pool.Get)
	}
	var one []byte // read=stream: every payload left on disk is read into it
	if read == "stream" {
		c.SetStreamAbove(16 << 10)
		one = make([]byte, 0, size+4096)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		ds, err := c.Read(context.Background(), min(batch, b.N-done))
		if err != nil {
			b.Fatal(err)
		}
		if one, err = readLeftOnDisk(ds, one); err != nil {
			b.Fatal(err)
		}
		if err := c.Ack(ds...); err != nil {
			b.Fatal(err)
		}
		if pool != nil {
			for _, d := range ds {
				pool.Put(d.Payload)
			}
		}
		done += len(ds)
	}
}

// readLeftOnDisk reads the payload of each delivery left on disk into one,
// in turn, and returns one grown as needed.
func readLeftOnDisk(ds []*core.Delivery, one []byte) ([]byte, error) {
	for _, d := range ds {
		if d.Payload != nil || d.Size == 0 {
			continue
		}
		b, err := d.ReadInto(one)
		if err != nil {
			return one, err
		}
		one = b
	}
	return one, nil
}
