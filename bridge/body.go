package bridge

import (
	"bytes"
	"fmt"
	"io"
	"slices"
)

// StreamAbove is the payload size above which the sources that can stream
// (a dir-spool, a drop zone and a file read with format=raw) leave a
// payload where it is and give the message a Body instead of a Payload:
// 64 KiB. Smaller payloads are read into memory, which is cheaper for them.
// Above it a streaming target copies in the kernel what would otherwise be
// allocated, copied twice and collected: a spool-to-spool copy of 256 KiB
// payloads ran 2.2 times as fast with a third of the memory as with a
// threshold of 1 MiB (docs/guide/benchmarks.md, "Large payloads").
const StreamAbove = 64 << 10

// Body is a payload left where it is until a target reads it, so that a
// payload of any size moves without being held in memory: between files of
// backend-os, in the kernel (copy_file_range) where the system can.
type Body struct {
	// Size is the exact length of the payload.
	Size int64
	// Open returns a stream of exactly Size bytes from the start of the
	// payload, failing with an error matching core.ErrPayloadSize when
	// what it reads is not Size bytes long. It may be called again (after
	// a failed write, for a retry); the caller closes each stream.
	Open func() (io.ReadCloser, error)
}

// BodyStreamer is implemented by a target that reads the Body of a message
// itself rather than its Payload. For any other target, and for a
// pipeline, the route first reads each Body into Payload (Message.Load).
type BodyStreamer interface {
	StreamsBodies() bool
}

// PayloadForgetter is implemented by a target, or a processor, that holds
// no reference to a message's Payload once its call has returned, whatever
// it returned: it copies the bytes where they go (a file, a spool) before
// it returns. A client library that may resend a payload later from its
// own queue (MQTT's, NATS's) does not forget it.
type PayloadForgetter interface {
	ForgetsPayloads() bool
}

// PayloadLender is implemented by a source that can read payloads into
// buffers it takes back, for the payloads of later batches, once a batch
// is acknowledged (a dir-spool). The route calls LendPayloads before
// Connect, and only when whatever a payload passes through forgets it
// (lendable): a buffer taken back while a target still held it would
// change a payload already written.
type PayloadLender interface {
	LendPayloads()
}

// forgets reports whether x is a PayloadForgetter that forgets payloads.
func forgets(x any) bool {
	f, ok := x.(PayloadForgetter)
	return ok && f.ForgetsPayloads()
}

// streams reports whether t reads message bodies itself.
func streams(t Target) bool {
	s, ok := t.(BodyStreamer)
	return ok && s.StreamsBodies()
}

// Len is the length of the payload, whether it is in Payload or a Body.
func (m *Message) Len() int64 {
	if m.Body != nil {
		return m.Body.Size
	}
	return int64(len(m.Payload))
}

// OpenPayload returns a stream of the payload: of the Body when there is
// one, else of Payload.
func (m *Message) OpenPayload() (io.ReadCloser, error) {
	if m.Body == nil {
		return io.NopCloser(bytes.NewReader(m.Payload)), nil
	}
	return m.Body.Open()
}

// CopyPayload writes the payload to w, streaming a Body, and returns how
// many bytes it wrote.
func (m *Message) CopyPayload(w io.Writer) (int64, error) {
	if m.Body == nil {
		n, err := w.Write(m.Payload)
		return int64(n), err
	}
	r, err := m.Body.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return io.Copy(w, r)
}

// Load reads a Body into Payload and drops the Body, for the targets and
// processors that need the bytes. A message without a Body is left as it
// is.
func (m *Message) Load() error {
	if m.Body == nil {
		return nil
	}
	b := make([]byte, m.Body.Size)
	r, err := m.Body.Open()
	if err != nil {
		return fmt.Errorf("message %s: read its payload: %w", m.ID, err)
	}
	defer r.Close()
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("message %s: read its payload: %w", m.ID, err)
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		return fmt.Errorf("message %s: read its payload: %w", m.ID, err)
	}
	m.Payload, m.Body = b, nil
	return nil
}

// loadBodies returns batch with each message that has a Body replaced by a
// copy that holds the payload as bytes, for the targets and processors
// that need bytes. The messages of batch keep their Body, so the loaded
// bytes can be collected as soon as the route lets go of the copies.
func loadBodies(batch []*Message) ([]*Message, error) {
	out, cloned := batch, false
	for i, m := range batch {
		if m.Body == nil {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(batch), true // the caller's slice stays as it was
		}
		loaded := *m
		if err := loaded.Load(); err != nil {
			return nil, err
		}
		out[i] = &loaded
	}
	return out, nil
}
