package core

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"
)

// Payloads as streams. A consumer that calls SetStreamAbove leaves payloads
// larger than its threshold on disk: the Delivery carries their Size, and
// Open reads them. A producer writes a Message whose Body is set by copying
// exactly Size bytes from it. Between two FS whose files can move bytes in
// the kernel (backend-os on Linux: copy_file_range), the copy never passes
// through user memory: exactReader hands the writing file an
// *io.LimitedReader of the reading file, which it recognises.

// ErrPayloadSize is matched by the error of a payload stream that ends
// before its stated size, or goes on past it: the file was cut or grew
// while it was read (chunks are immutable), or a Message.Body did not hold
// Message.Size bytes.
var ErrPayloadSize = errors.New("payload is not the size it was stated to be")

// ExactReader returns a reader of exactly size bytes of r: it fails with an
// error matching ErrPayloadSize when r ends sooner or has more. Its WriteTo
// gives a writer that implements io.ReaderFrom an *io.LimitedReader of r
// itself, so that a file can copy from a file in the kernel. name appears
// in errors. An ExactReader of an ExactReader (or ExactReadCloser) of the
// same size is that reader.
func ExactReader(r io.Reader, size int64, name string) io.Reader {
	if p, ok := r.(*payloadFile); ok {
		r = p.Reader // an ExactReadCloser: its reader, which checks the size
	}
	if e, ok := r.(*exactReader); ok && e.left == size {
		return e
	}
	return &exactReader{r: r, left: size, size: size, name: name}
}

type exactReader struct {
	r          io.Reader
	left, size int64
	name       string
	err        error // sticky once the end was checked or a size error seen
	done       bool
}

func (e *exactReader) sizeErr(got string) error {
	return fmt.Errorf("%s: %w: stated %d bytes, %s", e.name, ErrPayloadSize, e.size, got)
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.done {
		return 0, e.err
	}
	if e.left == 0 {
		return 0, e.finish()
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF {
		if e.left > 0 {
			e.done, e.err = true, e.sizeErr(fmt.Sprintf("ended after %d", e.size-e.left))
			return n, e.err
		}
		err = nil
	}
	return n, err
}

// finish checks that r ends where the size says, once all of it was read.
func (e *exactReader) finish() error {
	var one [1]byte
	for range 100 {
		n, err := e.r.Read(one[:])
		switch {
		case n > 0:
			e.done, e.err = true, e.sizeErr("and it has more")
		case err == io.EOF:
			e.done, e.err = true, io.EOF
		case err != nil:
			return err
		default:
			continue // (0, nil): ask again, a bounded number of times
		}
		return e.err
	}
	return io.ErrNoProgress
}

// WriteTo copies what is left to w, through w's ReadFrom when it has one.
func (e *exactReader) WriteTo(w io.Writer) (int64, error) {
	rf, ok := w.(io.ReaderFrom)
	if !ok || e.done {
		return io.Copy(w, struct{ io.Reader }{e})
	}
	n, err := rf.ReadFrom(&io.LimitedReader{R: e.r, N: e.left})
	e.left -= n
	if err != nil {
		return n, err
	}
	if e.left > 0 {
		e.done, e.err = true, e.sizeErr(fmt.Sprintf("ended after %d", e.size-e.left))
		return n, e.err
	}
	if err := e.finish(); err != io.EOF {
		return n, err
	}
	return n, nil
}

// SetStreamAbove makes the consumer leave payloads larger than n bytes on
// disk: their Delivery has Payload nil and Size set, and Open or ReadInto
// reads them. 0, the default, reads every payload into Payload. Through an
// FS that reads whole files (WholeFileReader) a payload costs no more than
// without it: the read finds a large one large and leaves it. A payload
// that follows a large one is opened and sized instead, and a large one
// stays open in its Delivery until the first Open or ReadInto takes the
// file, or the delivery is settled (at most 256 files at a time; past
// that, a Stat sizes it). Each payload through any other FS costs a Stat.
func (c *Consumer) SetStreamAbove(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streamAbove = max(n, 0)
}

// loadPayload reads the payload of r, or only measures it when it is large
// and the consumer streams large payloads (onDisk). Through a
// WholeFileReader a payload is measured only when the last one was large,
// by opening it (measureKept), and the file is kept open for the delivery;
// else the whole read leaves a large one unread (WholeRead.LeaveAbove), so
// that small payloads cost nothing more than without streaming.
func (c *Consumer) loadPayload(r *chunkRead) (err error) {
	wr, whole := c.fsys.(WholeFileReader)
	switch {
	case c.streamAbove > 0 && whole && c.expectLarge() && c.keptFiles.Load() < maxKeptFiles:
		return c.measureKept(wr, r)
	case c.streamAbove > 0 && (!whole || c.expectLarge()):
		if r.size, r.onDisk, err = c.measure(r.name); err != nil || r.onDisk {
			return err
		}
	}
	if whole {
		w := c.readOne(wr, c.payloadRead(r.name))
		if w.Err == nil && w.Left > 0 {
			r.size, r.onDisk = w.Left, true
			return nil
		}
		r.payload, err = w.Data, w.Err
	} else if c.lend != nil {
		r.payload, err = readLent(c.fsys, r.name, c.payHint, c.lend)
	} else {
		r.payload, err = readFile(c.fsys, r.name, c.payHint)
	}
	r.size = int64(len(r.payload))
	return err
}

// maxKeptFiles bounds the payload files a consumer keeps open in its
// deliveries (measureKept): a batch of 256 large payloads, well inside the
// descriptors a process may open. Beyond it, a payload is measured by name.
const maxKeptFiles = 256

// measureKept measures the payload of r by opening it, when the last one
// was left on disk: a large one stays open in r.kept, so that Open and
// ReadInto read it with no second open and no lookup of its name, the
// cost of a Stat; a small one is read whole, without a probe.
func (c *Consumer) measureKept(wr WholeFileReader, r *chunkRead) error {
	w := c.readOne(wr, WholeRead{Name: r.name, Lend: c.lend, LeaveAbove: c.streamAbove, Keep: true})
	switch {
	case w.Err != nil:
		return w.Err
	case w.Left > 0:
		r.size, r.onDisk = w.Left, true
		if w.Kept != nil {
			c.keptFiles.Add(1)
			r.kept = &keptPayload{f: w.Kept, count: &c.keptFiles}
		}
	default:
		r.payload, r.size = w.Data, int64(len(w.Data))
	}
	return nil
}

// keptPayload is the open file of a payload left on disk, kept from the
// read that measured it (measureKept). The first Open or ReadInto of its
// Delivery takes it; Ack, Nack and Close close it when none did.
type keptPayload struct {
	f     File
	count *atomic.Int32 // the consumer's keptFiles
}

// release hands over the kept file, no longer counted; nil for none.
func (k *keptPayload) release() File {
	if k == nil {
		return nil
	}
	k.count.Add(-1)
	return k.f
}

// close closes the kept file, if any.
func (k *keptPayload) close() {
	if f := k.release(); f != nil {
		_ = f.Close() // only read from: nothing to lose
	}
}

// takeKept returns the delivery's kept payload file, which the caller now
// owns, or nil when there is none (any more).
func (d *Delivery) takeKept() File { return d.kept.Swap(nil).release() }

// closeKept closes the delivery's kept payload file, if nobody took it.
func (d *Delivery) closeKept() { d.kept.Swap(nil).close() }

// measure stats a payload for a consumer that streams large ones: it
// reports its size and whether it stays on disk. A name that is not a
// regular file is left to readFile, which says why.
func (c *Consumer) measure(name string) (size int64, onDisk bool, err error) {
	fi, err := c.fsys.Stat(name)
	if err != nil {
		return 0, false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() <= c.streamAbove {
		return 0, false, nil
	}
	return fi.Size(), true, nil
}

// ExactReadCloser is ExactReader of rc that closes rc. Its WriteTo is the
// ExactReader's, so io.Copy from it to a file of backend-os still reaches
// the kernel copy when rc is a file.
func ExactReadCloser(rc io.ReadCloser, size int64, name string) io.ReadCloser {
	return &payloadFile{Reader: ExactReader(rc, size, name), c: rc}
}

// payloadFile is the stream of ExactReadCloser.
type payloadFile struct {
	io.Reader
	c io.Closer
}

func (p *payloadFile) Close() error { return p.c.Close() }

// WriteTo lets io.Copy reach the exact reader's WriteTo, and through it
// the kernel copy.
func (p *payloadFile) WriteTo(w io.Writer) (int64, error) {
	return p.Reader.(io.WriterTo).WriteTo(w)
}

// Open returns a stream of the payload: of Payload when it was read, else
// of the payload file, which fails with an error matching ErrPayloadSize
// when the file no longer holds exactly Size bytes. Close it before acking
// the delivery (a draining consumer then deletes the file). Several streams
// may be open at once; each reads from the start.
func (d *Delivery) Open() (io.ReadCloser, error) {
	if d.fsys == nil || d.Payload != nil || d.Size == 0 {
		return io.NopCloser(bytes.NewReader(d.Payload)), nil
	}
	if f := d.takeKept(); f != nil {
		return ExactReadCloser(f, d.Size, d.Name), nil
	}
	f, err := d.fsys.Open(d.Name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open payload %s: %w (it was removed while in flight)", d.Name, err)
		}
		return nil, fmt.Errorf("open payload %s: %w", d.Name, err)
	}
	return ExactReadCloser(f, d.Size, d.Name), nil
}

// ReadInto reads the payload into buf, which the caller lends, growing it
// only when it is too small, and returns buf[:Size]. It fails like Open.
// Through an FS that reads whole files (WholeFileReader) a payload left on
// disk costs what a raw loop's read into one buffer costs: one read and a
// close of the file its measure kept open, or, when none was kept, open,
// read, close, and the fstat that sizes a file that fills buf.
func (d *Delivery) ReadInto(buf []byte) ([]byte, error) {
	if d.Payload != nil || d.fsys == nil || d.Size == 0 {
		if int64(cap(buf)) < d.Size {
			buf = make([]byte, d.Size)
		}
		return buf[:copy(buf[:d.Size], d.Payload)], nil
	}
	if f := d.takeKept(); f != nil {
		return d.readKept(f, buf)
	}
	if wr, ok := d.fsys.(WholeFileReader); ok {
		return d.readWholeInto(wr, buf)
	}
	if int64(cap(buf)) < d.Size {
		buf = make([]byte, d.Size)
	}
	buf = buf[:d.Size]
	r, err := d.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		return nil, err // more bytes than Size: ErrPayloadSize
	}
	return buf, nil
}

// readKept is ReadInto from the payload's kept file (measureKept). Given
// room for more than Size bytes, one read does: a read of a file comes
// back with all the file has, up to the room, so a file that grew since it
// was measured shows more.
func (d *Delivery) readKept(f File, buf []byte) ([]byte, error) {
	defer f.Close()
	if int64(cap(buf)) < d.Size {
		buf = make([]byte, d.Size)
	}
	n, err := io.ReadAtLeast(f, buf[:cap(buf)], int(d.Size))
	switch {
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: %w: stated %d bytes, has %d", d.Name, ErrPayloadSize, d.Size, n)
	case err != nil:
		return nil, fmt.Errorf("read payload %s: %w", d.Name, err)
	case int64(n) > d.Size:
		return nil, fmt.Errorf("%s: %w: stated %d bytes, has more", d.Name, ErrPayloadSize, d.Size)
	}
	return buf[:n], nil
}

// readWholeInto is ReadInto of a payload on disk through wr: buf serves as
// the file's probe, so a file that ends inside it needs no fstat.
func (d *Delivery) readWholeInto(wr WholeFileReader, buf []byte) ([]byte, error) {
	r := []WholeRead{{Name: d.Name, Into: buf[:0]}}
	wr.ReadWholeFiles(r)
	data, err := r[0].Data, r[0].Err
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read payload %s: %w (it was removed while in flight)", d.Name, err)
	case err != nil:
		return nil, fmt.Errorf("read payload %s: %w", d.Name, err)
	case int64(len(data)) != d.Size:
		return nil, fmt.Errorf("%s: %w: stated %d bytes, has %d", d.Name, ErrPayloadSize, d.Size, len(data))
	}
	return data, nil
}

// writePayload writes the payload of m to f: Payload, or exactly Size
// bytes of Body.
func writePayload(f File, m *Message, name string) error {
	if m.Body == nil {
		_, err := f.Write(m.Payload)
		return err
	}
	_, err := io.Copy(f, ExactReader(m.Body, m.Size, name))
	return err
}

// payloadSize is the length of m's payload.
func payloadSize(m *Message) int64 {
	if m.Body != nil {
		return m.Size
	}
	return int64(len(m.Payload))
}

// checkBodies refuses messages whose Body and Payload are both set, or
// whose Size is negative.
func checkBodies(msgs []Message) error {
	for i := range msgs {
		m := &msgs[i]
		if m.Body != nil && (m.Payload != nil || m.Size < 0) {
			return fmt.Errorf("message %d (%s): a Body needs Payload nil and Size >= 0 (got %d payload bytes, size %d)", i, m.ID, len(m.Payload), m.Size)
		}
	}
	return nil
}
