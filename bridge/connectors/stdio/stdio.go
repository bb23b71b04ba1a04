// Package stdio is the stdin source and the stdout target, with the record
// formats of the file connector:
//
//	stdin://?format=json      stdin: {format: json}
//	stdout://?format=lines    stdout: {format: lines}
//
// stdin ends at end of input; its messages carry content_type, source
// (stdin) and line metadata. stdout writes each batch and, when standard
// output is a regular file, fsyncs it before the batch is acknowledged.
package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
)

// StdinSchema is the option table of the stdin source.
var StdinSchema = &option.Schema{
	Name: "stdin",
	Fields: []option.Field{
		records.FormatField(records.Lines),
		records.DelimiterField,
		records.ContentTypeField,
		records.SourceField("stdin"),
	},
}

// StdoutSchema is the option table of the stdout target.
var StdoutSchema = &option.Schema{
	Name: "stdout",
	Fields: []option.Field{
		records.FormatField(records.Lines),
		records.DelimiterField,
	},
}

// Register adds the stdin and stdout connectors to env.
func Register(env *bridge.Env) {
	env.Register(&bridge.Connector{
		Name: "stdin", Schemes: []string{"stdin"}, Schema: StdinSchema,
		URLFields: noPath, NewSource: NewSource,
	})
	env.Register(&bridge.Connector{
		Name: "stdout", Schemes: []string{"stdout"}, Schema: StdoutSchema,
		URLFields: noPath, NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

// NewSource returns a source reading env.Stdin (os.Stdin when nil).
func NewSource(env *bridge.Env, v *option.Values) (bridge.Source, error) {
	d, err := records.Delimiter(v)
	if err != nil {
		return nil, err
	}
	s := &source{env: env, format: v.String("format"), contentType: v.String("content_type"), name: v.String("source"), delim: d}
	if s.contentType == "" {
		s.contentType = records.ContentType(s.format)
	}
	return s, nil
}

type item struct {
	rec records.Record
	err error
}

type source struct {
	env                       *bridge.Env
	format, contentType, name string
	delim                     rune

	items chan item
	stop  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	retry []*bridge.Message
	err   error // sticky: end of input or a read error
}

var (
	_ bridge.Source = (*source)(nil)
	_ bridge.Placed = (*source)(nil)
)

// Place names standard input, so that two routes of one run that would
// split it between them are refused (see bridge.RoutesApart).
func (s *source) Place() (string, string) { return "stdio", "standard input" }

// Connect starts reading standard input in the background, so that a read
// can be abandoned when the route stops.
func (s *source) Connect(ctx context.Context) error {
	in := s.env.Stdin
	if in == nil {
		in = os.Stdin
	}
	rd := records.NewReader(in, s.format, "stdin", s.delim)
	s.items, s.stop = make(chan item, 256), make(chan struct{})
	go func() {
		defer close(s.items)
		for {
			rec, err := rd.Next()
			select {
			case s.items <- item{rec, err}:
			case <-s.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return nil
}

func (s *source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(limit, len(s.retry))
	out := append([]*bridge.Message(nil), s.retry[:n]...)
	s.retry = s.retry[n:]
	take := func(it item) bool {
		if it.err != nil {
			s.err = it.err
			return false
		}
		out = append(out, &bridge.Message{Payload: it.rec.Payload, Metadata: records.Meta(s.contentType, s.name, "", it.rec)})
		return true
	}
	if len(out) == 0 && s.err == nil {
		select { // wait for the first record
		case it, ok := <-s.items:
			if !ok {
				s.err = io.EOF
			} else {
				take(it)
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	for len(out) < limit && s.err == nil {
		select {
		case it, ok := <-s.items:
			if !ok {
				s.err = io.EOF
			} else {
				take(it)
			}
			continue
		default:
		}
		break
	}
	if len(out) == 0 {
		if errors.Is(s.err, io.EOF) {
			return nil, nil, bridge.ErrEndOfInput
		}
		return nil, nil, s.err
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

func (s *source) Close(ctx context.Context) error {
	if s.stop != nil {
		s.once.Do(func() { close(s.stop) })
	}
	return nil
}

// NewTarget returns a target writing to env.Stdout (os.Stdout when nil).
func NewTarget(env *bridge.Env, v *option.Values) (bridge.Target, error) {
	d, err := records.Delimiter(v)
	if err != nil {
		return nil, err
	}
	format := v.String("format")
	return &target{env: env, raw: format == records.Raw, enc: records.NewEncoder(format, d, nil)}, nil
}

type target struct {
	env *bridge.Env
	raw bool // format=raw: payloads are copied as they are, a Body streamed
	mu  sync.Mutex
	out io.Writer
	enc *records.Encoder
}

// StreamsBodies says that with format=raw the target copies a message's
// Body itself (see bridge.BodyStreamer).
func (t *target) StreamsBodies() bool { return t.raw }

// ForgetsPayloads says that WriteBatch has written every payload out
// (io.Writer must not keep what it is given) when it returns, and keeps
// none (bridge.PayloadForgetter).
func (t *target) ForgetsPayloads() bool { return true }

var (
	_ bridge.Target       = (*target)(nil)
	_ bridge.SharedOutput = (*target)(nil)
)

// Place names standard output, so that a route whose output and dead
// letter both write there, mixing refused messages with the delivered
// ones, is refused (see bridge.Placed).
func (t *target) Place() (string, string) { return "stdio", "standard output" }

// SharedByRoutes says that routes of one run may all write to standard
// output: a batch of records goes out in one Write, which os.File does not
// interleave with another goroutine's, so their batches alternate whole.
// (With format=raw a large streamed payload takes several writes.) See
// bridge.SharedOutput.
func (t *target) SharedByRoutes() {}

func (t *target) Connect(ctx context.Context) error {
	t.out = t.env.Stdout
	if t.out == nil {
		t.out = os.Stdout
	}
	return nil
}

func (t *target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.write(msgs); err != nil {
		return err
	}
	if f, ok := t.out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if err := f.Sync(); err != nil {
				return bridge.Permanent(fmt.Errorf("sync stdout: %w", err))
			}
		}
	}
	return nil
}

// write writes the records of msgs; with format=raw each payload as it is,
// a Body streamed.
func (t *target) write(msgs []*bridge.Message) error {
	if t.raw {
		for _, m := range msgs {
			if _, err := m.CopyPayload(t.out); err != nil {
				// Part of the batch may be out already and cannot be taken back.
				return bridge.Permanent(fmt.Errorf("write to stdout: %w", err))
			}
		}
		return nil
	}
	payloads, ids := make([][]byte, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		payloads[i], ids[i] = m.Payload, m.ID
	}
	b, err := t.enc.Encode(payloads, ids)
	if err != nil {
		return err
	}
	if _, err := t.out.Write(b.Data); err != nil {
		// Part of the batch may be out already and cannot be taken back.
		return bridge.Permanent(fmt.Errorf("write to stdout: %w", err))
	}
	b.Commit()
	return nil
}

func (t *target) Close(ctx context.Context, cause error) error { return nil }

func noPath(u *url.URL) (map[string]any, error) { return option.FromURL(u, option.PathNone, "") }
