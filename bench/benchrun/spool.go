package benchrun

import (
	"context"
	"errors"
	"fmt"
	"os"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// Layouts a case can use.
const (
	LayoutFlat    = "flat"    // every chunk in the spool root
	LayoutSharded = "sharded" // shard_depth=2, shard_width=3: 1000 chunks per leaf directory
)

// Operations.
const (
	OpProduce = "produce"
	OpConsume = "consume"
)

// How a consume case reads payloads.
const (
	// ReadLent reads each payload into a buffer from a pool the consumer
	// refills at Ack (Consumer.LendPayloadBuffers with a core.BufferPool):
	// like the raw loop, which reads into one reused buffer.
	ReadLent = "lent"
	// ReadBytes takes each payload as the new []byte the consumer
	// allocates for Delivery.Payload: what the plain API costs.
	ReadBytes = "bytes"
	// ReadStream has the consumer leave payloads above streamAbove on
	// disk (Consumer.SetStreamAbove) and reads each one, after Read returns
	// the batch, into one buffer the caller keeps (Delivery.ReadInto): the
	// raw loop's pattern, for a consumer that handles a batch one payload
	// at a time and need not hold it whole. Smaller payloads are read into
	// lent buffers, as with ReadLent.
	ReadStream = "stream"
)

// streamAbove is the payload size above which a ReadStream consumer leaves
// payloads on disk: twice the consumer's probe, so that a small payload
// found whole by the probe is never one to leave.
const streamAbove = 16 << 10

// spoolFS is an open spool filesystem and how to let it go.
type spoolFS struct {
	fs    core.FS
	close func() error
}

// openFS opens the spool filesystem of a case: backend-os on dir
// (osfs.Name, the default) or backend-memfs in process memory (memfs.Name).
func openFS(backend, dir string) (*spoolFS, error) {
	switch backend {
	case osfs.Name, "":
		fsys, err := osfs.New(dir, osfs.Options{CreateRoot: true})
		if err != nil {
			return nil, err
		}
		return &spoolFS{fs: fsys, close: fsys.Close}, nil
	case memfs.Name:
		return &spoolFS{fs: memfs.New(), close: func() error { return nil }}, nil
	}
	return nil, fmt.Errorf("unknown backend %q (valid: %s, %s)", backend, osfs.Name, memfs.Name)
}

// spoolOptions returns the options of a case's spool at dir.
func spoolOptions(dir, fsync, layout string, sidecar bool) core.Options {
	o := core.DefaultOptions(dir)
	o.Fsync = core.FsyncPolicy(fsync)
	if !sidecar {
		o.MetadataExt = ""
	}
	if layout == LayoutSharded {
		o.ShardDepth, o.ShardWidth = 2, 3
	}
	o.ExitWhenEmpty = true
	return o
}

// benchMetadata is the metadata of every benchmark message, the shape of a
// typical sidecar.
var benchMetadata = map[string]string{"content_type": "application/octet-stream", "source": "mqb-bench"}

// sampleSidecar returns bytes of the size the library writes for one
// message's sidecar, for the raw baseline.
func sampleSidecar() []byte {
	dir, err := os.MkdirTemp("", "mqb-sidecar-")
	if err != nil {
		return []byte(`{"message_id": "0195f4a0c7d77801a2b3c4d5e6f78901", "metadata": {}}` + "\n")
	}
	defer os.RemoveAll(dir)
	fsys := memfs.New()
	o := spoolOptions(dir, string(core.FsyncNone), LayoutFlat, true)
	o.Claims = false
	p, err := core.OpenProducer(fsys, o)
	if err == nil {
		_, err = p.Write(context.Background(), []core.Message{{Metadata: benchMetadata, Payload: []byte("x")}})
		p.Close()
	}
	if err == nil {
		var f core.File
		if f, err = fsys.Open("000000000.json"); err == nil {
			defer f.Close()
			b := make([]byte, 4096)
			n, _ := f.Read(b)
			return b[:n]
		}
	}
	return []byte(`{"message_id": "0195f4a0c7d77801a2b3c4d5e6f78901", "metadata": {}}` + "\n")
}

// spoolProducer is the spool arm of a produce case.
type spoolProducer struct {
	fsys *spoolFS
	p    *core.Producer
	msgs []core.Message
	pay  []byte
}

func newSpoolProducer(backend, dir string, o core.Options, payload []byte) (*spoolProducer, error) {
	fsys, err := openFS(backend, dir)
	if err != nil {
		return nil, err
	}
	p, err := core.OpenProducer(fsys.fs, o)
	if err != nil {
		fsys.close()
		return nil, err
	}
	return &spoolProducer{fsys: fsys, p: p, pay: payload}, nil
}

// prepare readies n fresh messages (no ids: the producer assigns them).
func (s *spoolProducer) prepare(n int) {
	if cap(s.msgs) < n {
		s.msgs = make([]core.Message, n)
	}
	s.msgs = s.msgs[:n]
	for i := range s.msgs {
		s.msgs[i] = core.Message{Metadata: benchMetadata, Payload: s.pay}
	}
}

func (s *spoolProducer) write() error {
	_, err := s.p.Write(context.Background(), s.msgs)
	return err
}

func (s *spoolProducer) close() error {
	return errors.Join(s.p.Close(), s.fsys.close())
}

// spoolConsumer is the spool arm of a consume case.
type spoolConsumer struct {
	fsys   *spoolFS
	c      *core.Consumer
	pool   *core.BufferPool // lends payload buffers (ReadLent, ReadStream); nil for ReadBytes
	stream bool             // payloads stay on disk and are read into one (ReadStream)
	one    []byte
}

// newSpoolConsumer opens the spool arm of a consume case whose payloads
// are payloadBytes long. With ReadStream its one buffer has the raw loop's
// room: the payload and 4 KiB more.
func newSpoolConsumer(fsys *spoolFS, o core.Options, read string, payloadBytes int) (*spoolConsumer, error) {
	c, err := core.OpenConsumer(fsys.fs, o)
	if err != nil {
		return nil, err
	}
	s := &spoolConsumer{fsys: fsys, c: c}
	if read == ReadLent || read == ReadStream {
		s.pool = lentBuffers
		c.LendPayloadBuffers(s.pool.Get)
	}
	if read == ReadStream {
		s.stream, s.one = true, make([]byte, 0, payloadBytes+4096)
		c.SetStreamAbove(streamAbove)
	}
	return s, nil
}

// lentBuffers lends the payload buffers of every ReadLent case of the
// process, one after the other, and keeps every idle one: a batch of 256
// payloads of 1 MiB has 256 in flight, allocated in a case's first round
// and reused after, as the raw loop reuses its one buffer.
var lentBuffers = core.NewBufferPool(1 << 62)

// consume reads n chunks, in batches of up to n, and acks them.
func (s *spoolConsumer) consume(n int) error {
	for n > 0 {
		ds, err := s.c.Read(context.Background(), n)
		if err != nil {
			return err
		}
		if err := s.readEach(ds); err != nil {
			return err
		}
		if err := s.c.Ack(ds...); err != nil {
			return err
		}
		if s.pool != nil {
			for _, d := range ds {
				s.pool.Put(d.Payload)
			}
		}
		n -= len(ds)
	}
	return nil
}

// readEach reads, for ReadStream, the payload of each delivery left on
// disk in turn into the one buffer.
func (s *spoolConsumer) readEach(ds []*core.Delivery) error {
	if !s.stream {
		return nil
	}
	for _, d := range ds {
		if d.Payload != nil {
			continue
		}
		b, err := d.ReadInto(s.one)
		if err != nil {
			return err
		}
		s.one = b
	}
	return nil
}

func (s *spoolConsumer) close() error {
	return errors.Join(s.c.Close(), s.fsys.close())
}

// backlog writes the backlog of a consume case's arm through the library
// with fsync=none, in as many parts as its caller likes (Trial.Fill
// interleaves the arms' parts), and flushes the filesystem at close, so that
// the arm starts from a durable backlog.
type backlog struct {
	fsys    core.FS
	p       *core.Producer
	payload []byte
	msgs    []core.Message
}

func openBacklog(fsys core.FS, o core.Options, payload []byte) (*backlog, error) {
	o.Fsync = core.FsyncNone
	p, err := core.OpenProducer(fsys, o)
	if err != nil {
		return nil, err
	}
	return &backlog{fsys: fsys, p: p, payload: payload}, nil
}

// write appends n messages in one Write.
func (b *backlog) write(n int) error {
	b.msgs = b.msgs[:0]
	for range n {
		b.msgs = append(b.msgs, core.Message{Metadata: benchMetadata, Payload: b.payload})
	}
	_, err := b.p.Write(context.Background(), b.msgs)
	return err
}

func (b *backlog) close() error {
	if err := b.p.Close(); err != nil {
		return err
	}
	if s, ok := b.fsys.(core.FSSyncer); ok {
		return s.SyncAll()
	}
	return nil
}
