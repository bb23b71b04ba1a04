// Package file is the file connector: it reads the records of one named file
// and appends records to one.
//
//	file:///data/orders.jsonl?format=json
//	file: {path: /data/orders.csv, format: csv}
//
// Formats: json (one JSON document per line, validated and passed byte for
// byte), csv (a header row; each record becomes a JSON object of its named
// fields), lines (each line one message) and raw (the whole file one
// message). A record that cannot be parsed stops the route with an error
// naming the file and the line; nothing is skipped.
//
// As a source, every message carries content_type, source (the file name
// without extension), path and line metadata, and the input ends at the end
// of the file. As a target, each batch is appended and fsync'd before it is
// acknowledged; a failed batch is cut off again, so the file never keeps a
// partial record. A target is the file's only writer: it holds a lock on
// it (lock.go) and checks before each batch that nobody else changed it.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
	"github.com/mqb-project/mqb/core"
)

// Schema is the option table of the file connector.
var Schema = &option.Schema{
	Name: "file",
	Fields: []option.Field{
		{Name: "path", Type: option.TypeString, Required: true,
			Doc: "Absolute path of the file. In a URL it is the URL path (file:///data/orders.jsonl)."},
		records.FormatField(records.Lines),
		records.DelimiterField,
		records.ContentTypeField,
		records.SourceField(""),
		{Name: "append", Type: option.TypeBool, Default: "true",
			Doc: "Target: add to the end of an existing file. false empties the file when the route starts."},
		{Name: "file_mode", Type: option.TypeFileMode, Default: "0600",
			Doc: "Target: permission bits of a file it creates (less the umask)."},
	},
}

// Register adds the file connector (scheme file) to env.
func Register(env *bridge.Env) {
	env.Register(&bridge.Connector{
		Name:      "file",
		Schemes:   []string{"file"},
		Schema:    Schema,
		URLFields: func(u *url.URL) (map[string]any, error) { return option.FromURL(u, option.PathAbsolute, "/data/file") },
		NewSource: NewSource,
		NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

type config struct {
	path, format, contentType, source string
	delim                             rune
}

func configFrom(v *option.Values) (config, error) {
	p, err := records.AbsPath(v)
	if err != nil {
		return config{}, err
	}
	d, err := records.Delimiter(v)
	if err != nil {
		return config{}, err
	}
	c := config{path: p, format: v.String("format"), contentType: v.String("content_type"), source: v.String("source"), delim: d}
	if c.contentType == "" {
		c.contentType = records.ContentType(c.format)
	}
	if c.source == "" {
		c.source = records.SourceName(p)
	}
	return c, nil
}

// NewSource returns a source reading the records of the file v names.
func NewSource(env *bridge.Env, v *option.Values) (bridge.Source, error) {
	c, err := configFrom(v)
	if err != nil {
		return nil, err
	}
	return &source{config: c}, nil
}

type source struct {
	config
	mu    sync.Mutex
	f     *os.File
	fi    fs.FileInfo // of f, when connected
	rd    *records.Reader
	size  int64
	retry []*bridge.Message // nacked, delivered again first
	err   error             // sticky read error
	eof   bool
}

var (
	_ bridge.Source     = (*source)(nil)
	_ bridge.Progresser = (*source)(nil)
	_ bridge.FilePlaced = (*source)(nil)
	_ bridge.FilePlaced = (*target)(nil)
)

// Place returns the file (see bridge.Placed), so that a route reading and
// writing one file is refused.
func (c *config) Place() (string, string) { return bridge.BackendOS, c.path }

// PlaceIsFile says the place is a file (see bridge.FilePlaced).
func (c *config) PlaceIsFile() {}

func (s *source) Connect(ctx context.Context) error {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		// A misspelt path: waiting for the file to appear only delays the error.
		return bridge.Permanent(fmt.Errorf("open input: %w", err))
	} else if err != nil {
		return fmt.Errorf("open input: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open input: %w", err)
	}
	if !fi.Mode().IsRegular() && s.format == records.Raw {
		// raw reads to the end; a FIFO works, its size is just unknown
		s.size = -1
	} else {
		s.size = fi.Size()
	}
	if fi.IsDir() {
		f.Close()
		return fmt.Errorf("open input %s: is a directory", s.path)
	}
	s.f, s.fi, s.rd = f, fi, records.NewReader(f, s.format, s.path, s.delim)
	return nil
}

func (s *source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	n := min(limit, len(s.retry))
	out := append([]*bridge.Message(nil), s.retry[:n]...)
	s.retry = s.retry[n:]
	if len(out) < limit && s.streamed() {
		out = append(out, s.bodyMessage())
	}
	for len(out) < limit && s.err == nil && !s.eof {
		rec, err := s.rd.Next()
		if errors.Is(err, io.EOF) {
			s.eof = true
			break
		}
		if err != nil {
			s.err = err
			break
		}
		out = append(out, &bridge.Message{Payload: rec.Payload, Metadata: records.Meta(s.contentType, s.source, s.path, rec)})
	}
	if len(out) == 0 {
		if s.err != nil {
			return nil, nil, s.err
		}
		return nil, nil, bridge.ErrEndOfInput
	}
	return out, func(_ context.Context, err error) error {
		if err != nil {
			s.mu.Lock()
			s.retry = append(out, s.retry...)
			s.mu.Unlock()
		}
		return nil
	}, nil
}

// streamed reports whether the input is one raw payload larger than
// bridge.StreamAbove, which goes out as a Body rather than being read.
func (s *source) streamed() bool {
	return !s.eof && s.err == nil && s.format == records.Raw && s.size > bridge.StreamAbove
}

// bodyMessage is the message of a large raw input: a Body that opens the
// file again, checks it is the one connected, and reads exactly the size
// it had then.
func (s *source) bodyMessage() *bridge.Message {
	s.eof = true
	size, connected := s.size, s.fi
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(s.path)
		if err != nil {
			return nil, fmt.Errorf("open input: %w", err)
		}
		if fi, err := f.Stat(); err != nil || !os.SameFile(fi, connected) {
			f.Close()
			return nil, fmt.Errorf("open input %s: it was replaced since the route started", s.path)
		}
		return core.ExactReadCloser(f, size, s.path), nil
	}
	meta := records.Meta(s.contentType, s.source, s.path, records.Record{})
	return &bridge.Message{Body: &bridge.Body{Size: size, Open: open}, Metadata: meta}
}

func (s *source) Progress() (done, total int64, unit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rd == nil {
		return 0, -1, "bytes"
	}
	if s.eof && s.size >= 0 {
		return s.size, s.size, "bytes" // read to the end, or handed out as a Body
	}
	return s.rd.Offset(), s.size, "bytes"
}

func (s *source) Close(ctx context.Context) error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// NewTarget returns a target appending records to the file v names.
func NewTarget(env *bridge.Env, v *option.Values) (bridge.Target, error) {
	c, err := configFrom(v)
	if err != nil {
		return nil, err
	}
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	return &target{config: c, append: v.Bool("append"), mode: fs.FileMode(v.FileMode("file_mode")), log: log}, nil
}

type target struct {
	config
	log    *slog.Logger
	append bool
	mode   fs.FileMode
	mu     sync.Mutex
	f      *os.File
	enc    *records.Encoder
	size   int64 // bytes known to be durable in the file
	sep    bool  // the file does not end with a line break: add one first
	stream bool  // the output is no regular file (/dev/null, a pipe): written in turn, never synced
	failed error
}

var _ bridge.Target = (*target)(nil)

// Connect opens the output as its only writer, empties it with
// append=false, and learns how it ends (a missing final line break, a CSV
// header) so that appended records follow on.
func (t *target) Connect(ctx context.Context) error {
	f, err := t.openOutput(ctx)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open output: %w", err)
	}
	t.size = fi.Size()
	var header []string
	if t.stream {
		t.size = 0
	} else if err := t.cutTornTail(f); err != nil {
		f.Close()
		return err
	} else if t.size > 0 && t.format != records.Raw {
		if header, err = t.readTail(); err != nil {
			f.Close()
			return err
		}
	}
	t.f, t.enc = f, records.NewEncoder(t.format, t.delim, header)
	if !t.stream {
		writeMark(f, t.size) // what is there now stays, whatever happens next
	}
	return nil
}

// cutTornTail cuts off the partial record that a writer killed in the
// middle of a batch left at the end of the output (see the committed mark),
// and says so.
func (t *target) cutTornTail(f *os.File) error {
	if t.format == records.Raw {
		return nil // raw payloads have no line to end at
	}
	size, cut, err := cutTornTail(f, t.size)
	if err != nil {
		return err
	}
	if cut > 0 {
		t.log.Warn("cut a partial record off the end of the output, left by a writer that stopped in the middle of a batch it never acknowledged; the source delivers that batch again",
			"path", t.path, "bytes", cut)
	}
	t.size = size
	return nil
}

// openOutput opens the output file, creating it, and takes its writer lock
// before append=false empties it; a new or emptied file is made durable.
// An output that is no regular file (/dev/null, a named pipe, a terminal)
// is opened as it is, and t.stream set.
func (t *target) openOutput(ctx context.Context) (*os.File, error) {
	fi, statErr := os.Stat(t.path)
	created := errors.Is(statErr, fs.ErrNotExist)
	var f *os.File
	var err error
	if statErr == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		f, err = openPipe(ctx, t.path)
	} else {
		f, err = os.OpenFile(t.path, os.O_WRONLY|os.O_CREATE, t.mode)
	}
	if errors.Is(err, fs.ErrNotExist) { // the directory is missing: mqb does not create it
		return nil, bridge.Permanent(fmt.Errorf("open output: %w", err))
	} else if err != nil {
		return nil, fmt.Errorf("open output: %w", err)
	}
	if t.stream, err = notRegular(f); err != nil || t.stream {
		return f, err // a device or a pipe: nothing to lock, empty or sync
	}
	if err := lockOutput(f, t.path); err != nil {
		f.Close()
		return nil, err
	}
	if !t.append {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("empty %s: %w", t.path, err)
		}
	}
	if created || !t.append {
		err := f.Sync() // its error names the file
		if err == nil {
			err = syncDir(filepath.Dir(t.path))
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// readTail notes whether the existing output lacks a final line break
// (t.sep) and returns its CSV header, for format=csv.
func (t *target) readTail() ([]string, error) {
	r, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("read existing %s: %w", t.path, err)
	}
	defer r.Close()
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, t.size-1); err == nil && last[0] != '\n' {
		t.sep = true
	}
	if t.format != records.CSV {
		return nil, nil
	}
	header, err := records.ReadCSVHeader(r, t.delim)
	if err != nil {
		return nil, fmt.Errorf("read the CSV header of %s to append to it: %w", t.path, err)
	}
	return header, nil
}

func (t *target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	if t.format == records.Raw {
		return t.writeRaw(msgs)
	}
	payloads, ids := make([][]byte, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		payloads[i], ids[i] = m.Payload, m.ID
	}
	b, err := t.enc.Encode(payloads, ids)
	if err != nil {
		return err
	}
	data := b.Data
	if t.sep {
		data = append([]byte{'\n'}, data...)
	}
	if t.stream {
		return t.writeStream(data, b)
	}
	if err := t.checkSize(); err != nil {
		return err
	}
	if _, err := t.f.WriteAt(data, t.size); err != nil {
		return t.cutBack(err)
	}
	if err := t.commit(int64(len(data))); err != nil {
		return err
	}
	t.sep = false
	b.Commit()
	return nil
}

// writeRaw appends the payloads of msgs one after the other, streaming
// each Body (file to file in the kernel where the system can).
func (t *target) writeRaw(msgs []*bridge.Message) error {
	if t.stream {
		for _, m := range msgs {
			if _, err := m.CopyPayload(t.f); err != nil {
				return t.streamFailed(err)
			}
		}
		return nil
	}
	if err := t.checkSize(); err != nil {
		return err
	}
	if _, err := t.f.Seek(t.size, io.SeekStart); err != nil {
		return fmt.Errorf("append to %s: %w", t.path, err)
	}
	var n int64
	for _, m := range msgs {
		k, err := m.CopyPayload(t.f)
		n += k
		if err != nil {
			return t.cutBack(err)
		}
	}
	return t.commit(n)
}

// writeStream writes the records of b to an output that is no regular
// file. What is written there is gone from mqb's hands once write returns:
// there is no end to come back to and nothing to sync.
func (t *target) writeStream(data []byte, b *records.Batch) error {
	if _, err := t.f.Write(data); err != nil {
		return t.streamFailed(err)
	}
	t.sep = false
	b.Commit()
	return nil
}

// streamFailed stops the target after a failed write to an output that is
// no regular file: part of a batch may have gone out, and cannot be taken
// back.
func (t *target) streamFailed(err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Path == t.path {
		err = pe.Err // named below
	}
	t.failed = bridge.Permanent(fmt.Errorf("write to %s: %w", t.path, err))
	return t.failed
}

// checkSize stops the target, before it writes at the end it knows, when
// the file is no longer that size: a program that takes no writer lock
// appended to it (the batch would land on top of those bytes) or cut it
// (the batch would leave a hole of zeros).
func (t *target) checkSize() error {
	fi, err := t.f.Stat()
	if err != nil {
		return fmt.Errorf("append to %s: %w", t.path, err)
	}
	if fi.Size() != t.size {
		t.failed = bridge.Permanent(fmt.Errorf("append to %s: it holds %d bytes where this route left %d: another program wrote to it or cut it; give the route a file of its own",
			t.path, fi.Size(), t.size))
		return t.failed
	}
	return nil
}

// cutBack cuts off a batch whose append failed with err.
func (t *target) cutBack(err error) error {
	if terr := t.f.Truncate(t.size); terr != nil {
		t.failed = bridge.Permanent(fmt.Errorf("append to %s: %w; then cutting off the partial batch failed: %w", t.path, err, terr))
		return t.failed
	}
	return fmt.Errorf("append to %s: %w", t.path, err)
}

// commit makes the n bytes appended durable.
func (t *target) commit(n int64) error {
	if err := t.f.Sync(); err != nil {
		// What reached the disk is unknown: do not write on top of it.
		t.failed = bridge.Permanent(err) // "sync PATH: ..."
		return t.failed
	}
	t.size += n
	writeMark(t.f, t.size)
	return nil
}

// StreamsBodies says that with format=raw the target copies a message's
// Body itself (see bridge.BodyStreamer).
func (t *target) StreamsBodies() bool { return t.format == records.Raw }

// ForgetsPayloads says that WriteBatch has written every payload to the
// file, or into the encoder's output, when it returns, and keeps none
// (bridge.PayloadForgetter).
func (t *target) ForgetsPayloads() bool { return true }

func (t *target) Close(ctx context.Context, cause error) error {
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// notRegular reports whether f is something other than a regular file.
func notRegular(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return false, fmt.Errorf("open output: %w", err)
	}
	return !fi.Mode().IsRegular(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
