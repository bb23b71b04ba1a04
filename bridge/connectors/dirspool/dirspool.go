// Package dirspool is the directory spool connector: a durable FIFO queue in
// a directory, one payload file (and one JSON metadata sidecar) per message.
//
//	dir-spool:///var/spool/orders?emit_done=success   (aliases spool://, dirspool://)
//	dir_spool: {path: /var/spool/orders, emit_done: success}
//
// Its options are Schema: core.SpoolSchema plus bridge.BackendFields. As a source it is a core.Consumer: it
// holds the CONSUMER claim while draining, deletes a chunk only when the
// route acknowledges it, ends when the route drains and the spool is empty
// or, with stop_on_done, when the producer's DONE sentinel is there and
// nothing is left. As a target it is a core.Producer: a batch is
// acknowledged once Producer.Write returned, that is once its chunks are
// committed (and durable, unless fsync=none), and DONE is written at the end
// of the route as emit_done says.
package dirspool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// Register adds the dir-spool connector (schemes dir-spool, spool,
// dirspool; YAML key dir_spool) to env.
func Register(env *bridge.Env) {
	env.Register(&bridge.Connector{
		Name:      Schema.Name,
		Schemes:   core.SpoolSchemes,
		Schema:    Schema,
		URLFields: urlFields,
		NewSource: NewSource,
		NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

func urlFields(u *url.URL) (map[string]any, error) {
	return option.FromURL(u, option.PathAbsolute, "/var/spool/orders")
}

// Schema is the option table of the connector: the protocol options of
// core.SpoolSchema, then the filesystem options of bridge.BackendFields.
var Schema = &option.Schema{
	Name:   core.SpoolSchema.Name,
	Fields: slices.Concat(core.SpoolSchema.Fields, bridge.BackendFields),
}

// Allowed describes, in Markdown, the allowed values of the connector's
// string fields, whose type alone says too little. The reference
// page and `mqb spool fields` show it; TestReferencePage checks the
// edges with settings that must be refused.
var Allowed = map[string]string{
	"path":               "an absolute directory path",
	"naming_pattern":     "`{seq:N}`, N from 1 to 19, then optional text without `/`, `\\`, `{`, `}` or `..`",
	"payload_extension":  "a suffix such as `.bin`: a dot and a name, not ending in `.tmp`",
	"metadata_extension": "empty (no sidecars), or a suffix such as `.json`: a dot and a name, not ending in `.tmp`; neither extension may end with the other",
	"backend":            "`os`, `memfs`, or a name a library user registered",
	"max_messages":       "1 or more; unset (0) for no limit",
	"max_bytes":          "1 or more bytes, with an optional unit: `B`, `kB`, `MB`, `GB`, `TB`, `KiB`, `MiB`, `GiB`, `TiB`; unset (0) for no limit",
	"min_free_bytes":     "as max_bytes",
}

// Config is a decoded dir_spool endpoint: what core reads, and what picks
// and configures its filesystem.
type Config struct {
	core.Options
	bridge.BackendOptions
}

// DefaultConfig returns the defaults of every field for the spool at path.
func DefaultConfig(path string) Config {
	v, err := Schema.DecodeMap(map[string]any{"path": path})
	if err != nil {
		panic(err)
	}
	return Config{Options: core.DefaultOptions(path), BackendOptions: bridge.BackendOptionsFromValues(v)}
}

// Decode decodes and checks the options of an endpoint: the core
// validation plus an absolute path and a registered backend.
func Decode(env *bridge.Env, v *option.Values) (Config, error) {
	o, err := core.OptionsFromValues(v)
	c := Config{Options: o, BackendOptions: bridge.BackendOptionsFromValues(v)}
	if err != nil {
		return c, err
	}
	if !filepath.IsAbs(c.Path) {
		return c, &option.Error{Field: "path", Value: c.Path, Msg: "must be an absolute path, such as /var/spool/orders"}
	}
	c.Path = filepath.Clean(c.Path)
	return c, env.CheckBackend(c.Backend)
}

// OpenFS opens the filesystem of the spool c describes (see
// bridge.Env.OpenSpoolFS).
func (c Config) OpenFS(env *bridge.Env, create bool) (core.FS, func() error, error) {
	return env.OpenSpoolFS(c.Path, c.BackendOptions, create)
}

// NewSource returns a spool consumer as a source.
func NewSource(env *bridge.Env, v *option.Values) (bridge.Source, error) {
	o, err := Decode(env, v)
	if err != nil {
		return nil, err
	}
	return &Source{env: env, opts: o, msgs: map[*core.Delivery]*bridge.Message{}}, nil
}

// Source reads a spool. It implements bridge.Drainer, bridge.Progresser and
// bridge.BacklogReporter.
type Source struct {
	env     *bridge.Env
	opts    Config
	fsys    core.FS
	release func() error
	c       *core.Consumer
	lent    *core.BufferPool // lends payload buffers (LendPayloads); nil: a new one per payload

	mu    sync.Mutex
	msgs  map[*core.Delivery]*bridge.Message // unsettled, so a redelivery is the same message
	total int64                              // chunks to drain, once counted (see countBacklog); -1: not draining
	ended bool                               // the drain found the spool empty: the total is what was acked
	acked int64
	begun core.SeqSet // while the count runs: chunks whose ack has begun

	stopCount context.CancelFunc // ends the background count (drain only)
	counted   chan struct{}      // closed when the background count has returned

	shared opened // for the metrics
}

var (
	_ bridge.Source           = (*Source)(nil)
	_ bridge.Drainer          = (*Source)(nil)
	_ bridge.Placed           = (*Source)(nil)
	_ bridge.MessageDirectory = (*Source)(nil)
	_ bridge.Progresser       = (*Source)(nil)
	_ bridge.BacklogReporter  = (*Source)(nil)
	_ bridge.SpoolStatter     = (*Source)(nil)
	_ bridge.PayloadLender    = (*Source)(nil)
)

// SetDrain makes the consumer end once the spool is empty (ExitWhenEmpty).
func (s *Source) SetDrain(drain bool) { s.opts.ExitWhenEmpty = drain }

// lentKeep bounds the idle payload buffers a lending source keeps: a
// batch of 256 payloads of 64 KiB (bridge.StreamAbove), the largest read
// into memory.
const lentKeep = 256 * bridge.StreamAbove

// LendPayloads makes the source read payloads into buffers it takes back
// once their batch is acknowledged, for the payloads of later batches,
// rather than into new memory each: a drain then allocates, zeroes and
// collects almost nothing (bridge.PayloadLender). The route calls it
// before Connect when nothing keeps a payload past its write.
func (s *Source) LendPayloads() { s.lent = core.NewBufferPool(lentKeep) }

// Connect opens the spool and takes the CONSUMER claim (when draining and
// claims are on). A spool directory that does not exist yet is waited for,
// unless the route drains: then it is an error.
func (s *Source) Connect(ctx context.Context) error {
	var err error
	logged := false
	for {
		s.fsys, s.release, err = s.opts.OpenFS(s.env, false)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || s.opts.ExitWhenEmpty {
			break
		}
		if !logged {
			s.env.Logger.Info("waiting for the spool directory to appear", "path", s.opts.Path)
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.opts.PollInterval):
		}
	}
	if errors.Is(err, fs.ErrNotExist) { // draining: nothing to wait for
		return bridge.Permanent(err)
	} else if err != nil {
		return err
	}
	s.c, err = core.OpenConsumer(s.fsys, s.opts.Options)
	if err != nil {
		s.release()
		return err
	}
	s.c.SetLogger(s.env.Logger)
	s.c.SetStreamAbove(bridge.StreamAbove)
	if s.lent != nil {
		s.c.LendPayloadBuffers(s.lent.Get)
	}
	if s.opts.ExitWhenEmpty {
		s.countBacklog()
	} else {
		s.mu.Lock()
		s.total = -1 // Progress is read from the display's goroutine
		s.mu.Unlock()
	}
	s.shared.set(s.fsys, nil)
	return nil
}

// countBacklog counts the chunks to drain, for Progress, while the drain
// runs: on a large spool the listing takes a while, and the first delivery
// need not wait for it. A chunk acked meanwhile may be deleted before the
// listing reaches it, so acks record their chunks until the count ends:
// the total is the chunks listed and those recorded that were not listed.
func (s *Source) countBacklog() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopCount, s.counted = cancel, make(chan struct{})
	s.begun = core.SeqSet{}
	go func() {
		defer close(s.counted)
		var listed core.SeqSet
		st, err := core.CountEach(ctx, s.fsys, s.opts.Options, listed.Add)
		s.mu.Lock()
		defer s.mu.Unlock()
		begun := s.begun
		s.begun = nil
		if err != nil {
			return // the total stays unknown; the drain does not need it
		}
		s.total = int64(st.Chunks + begun.Without(listed))
	}()
}

// ReadBatch returns the next chunks in order, nacked ones first.
func (s *Source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	ds, err := s.c.Read(ctx, limit)
	if err != nil {
		if errors.Is(err, core.ErrEnd) {
			s.mu.Lock()
			s.ended = true
			s.mu.Unlock()
			return nil, nil, bridge.ErrEndOfInput
		}
		return nil, nil, err
	}
	out := make([]*bridge.Message, len(ds))
	s.mu.Lock()
	for i, d := range ds {
		m, ok := s.msgs[d]
		if !ok {
			m = &bridge.Message{ID: d.MessageID, Metadata: d.Metadata, Payload: d.Payload}
			if d.Payload == nil && d.Size > 0 { // left on disk: streamed
				m.Body = &bridge.Body{Size: d.Size, Open: d.Open}
			}
			s.msgs[d] = m
		}
		out[i] = m
	}
	s.mu.Unlock()
	return out, func(_ context.Context, err error) error {
		if err != nil {
			return s.c.Nack(ds...)
		}
		s.mu.Lock()
		if s.begun != nil {
			for _, d := range ds {
				s.begun.Add(d.Seq)
			}
		}
		s.mu.Unlock()
		aerr := s.c.Ack(ds...)
		s.mu.Lock()
		for _, d := range ds {
			delete(s.msgs, d)
		}
		s.acked += int64(len(ds))
		s.mu.Unlock()
		if aerr == nil && s.lent != nil {
			for _, d := range ds {
				s.lent.Put(d.Payload) // nil for a streamed one: ignored
			}
		}
		return aerr
	}, nil
}

// Progress reports acknowledged chunks against the chunks to drain: 0
// (unknown) until they are counted, -1 when not draining, and the acked
// ones once the spool is drained.
func (s *Source) Progress() (done, total int64, unit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return s.acked, s.acked, "messages"
	}
	return s.acked, s.total, "messages"
}

// Backlog counts the chunks in the spool.
func (s *Source) Backlog() (int64, error) { return s.shared.backlog(s.opts.Options) }

// SpoolPath returns the spool directory.
func (s *Source) SpoolPath() string { return s.opts.Path }

// Place returns the spool directory and its backend (see bridge.Placed).
func (s *Source) Place() (string, string) { return s.opts.place() }

// Reads reports true for every path: each file in a spool's directory or
// its shard directories is a chunk, a sidecar or a record of the spool's,
// so a route writing one there is refused (see bridge.MessageDirectory).
func (s *Source) Reads(string) bool { return true }

// SpoolStats scans the spool.
func (s *Source) SpoolStats() (*core.Stats, error) { return s.shared.stats(s.opts.Options) }

// Close releases the CONSUMER claim; unacknowledged chunks stay on disk.
func (s *Source) Close(ctx context.Context) error {
	if s.c == nil {
		return nil
	}
	s.shared.set(nil, nil)
	if s.stopCount != nil {
		s.stopCount()
		<-s.counted
	}
	err := s.c.Close()
	return errors.Join(err, s.release())
}

// opened is what an end's Connect opened, for the calls the metrics server
// makes from its own goroutine at any time, before Connect and after Close
// included (SpoolStats, Backlog, Dropped, FullWaits).
type opened struct {
	mu   sync.Mutex
	fsys core.FS        // nil when not open
	p    *core.Producer // a target's
}

func (o *opened) set(fsys core.FS, p *core.Producer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fsys, o.p = fsys, p
}

func (o *opened) get() (core.FS, *core.Producer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fsys, o.p
}

// stats scans the spool.
func (o *opened) stats(opts core.Options) (*core.Stats, error) {
	fsys, _ := o.get()
	if fsys == nil {
		return nil, errors.New("spool is not open")
	}
	return core.Scan(context.Background(), fsys, opts)
}

// backlog counts the chunks in the spool.
func (o *opened) backlog(opts core.Options) (int64, error) {
	fsys, _ := o.get()
	if fsys == nil {
		return 0, errors.New("spool is not open")
	}
	st, err := core.Count(context.Background(), fsys, opts)
	if err != nil {
		return 0, err
	}
	return int64(st.Chunks), nil
}

// NewTarget returns a spool producer as a target.
func NewTarget(env *bridge.Env, v *option.Values) (bridge.Target, error) {
	o, err := Decode(env, v)
	if err != nil {
		return nil, err
	}
	return &Target{env: env, opts: o}, nil
}

// Target writes a spool. It implements bridge.BacklogReporter.
type Target struct {
	env     *bridge.Env
	opts    Config
	fsys    core.FS
	release func() error
	p       *core.Producer

	mu sync.Mutex
	// committed counts, per message id, the chunks written by batches that
	// then failed and that the route has not yet seen succeed: a retry
	// skips them instead of writing them again.
	committed map[string]int

	shared opened // for the metrics
}

var (
	_ bridge.Target           = (*Target)(nil)
	_ bridge.BacklogReporter  = (*Target)(nil)
	_ bridge.HeldIDLister     = (*Target)(nil)
	_ bridge.BoundedSpool     = (*Target)(nil)
	_ bridge.MessageDirectory = (*Target)(nil)
	_ bridge.SpoolStatter     = (*Target)(nil)
	_ bridge.BodyStreamer     = (*Target)(nil)
)

// Connect creates the spool directory when missing, takes the PRODUCER
// claim and recovers the spool (see core.OpenProducer).
func (t *Target) Connect(ctx context.Context) error {
	var err error
	t.fsys, t.release, err = t.opts.OpenFS(t.env, true)
	if err != nil {
		return err
	}
	t.p, err = core.OpenProducerContext(ctx, t.fsys, t.opts.Options)
	if err != nil {
		t.release()
		return err
	}
	t.p.OnDrop(func(m core.Message) {
		t.env.Logger.Warn("spool full: message dropped (when_full=drop_newest)", "spool", t.opts.Path, "id", m.ID)
	})
	t.shared.set(t.fsys, t.p)
	return nil
}

// RecentIDs returns the message ids of the spool's newest n chunks, oldest
// first, so that a route using the spool as its dead-letter target writes
// each message once.
func (t *Target) RecentIDs(ctx context.Context, n int) ([]string, error) {
	return core.RecentMessageIDs(ctx, t.fsys, t.opts.Options, n)
}

// Dropped counts the messages when_full=drop_newest dropped.
func (t *Target) Dropped() uint64 {
	_, p := t.shared.get()
	if p == nil {
		return 0
	}
	return p.Dropped()
}

// FullWaits counts the writes that waited for room (when_full=block).
func (t *Target) FullWaits() uint64 {
	_, p := t.shared.get()
	if p == nil {
		return 0
	}
	return p.FullWaits()
}

// Bounded reports whether the spool has a bound (max_messages, max_bytes,
// min_free_bytes).
func (t *Target) Bounded() bool { return t.opts.Bounds.Set() }

// WriteBatch writes one chunk per message and returns once they are
// committed. When a batch fails part way (fsync=chunk), the chunks already
// committed are remembered by message id until a write of a batch holding
// them succeeds, and every retry in between skips them: only a crash can
// make a chunk twice. A message id that occurs k times is skipped at most k
// times per batch, so repeated ids in the input are all written.
func (t *Target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	batch := make([]core.Message, 0, len(msgs))
	skipped := map[string]int{}
	var bodies []io.Closer
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	for _, m := range msgs {
		if m.ID != "" && skipped[m.ID] < t.committed[m.ID] {
			skipped[m.ID]++
			continue
		}
		cm := core.Message{ID: m.ID, Metadata: m.Metadata, Payload: m.Payload}
		if m.Body != nil {
			r, err := m.Body.Open()
			if err != nil {
				return fmt.Errorf("message %s: open its payload: %w", m.ID, err)
			}
			bodies = append(bodies, r)
			cm.Body, cm.Size = r, m.Body.Size
		}
		batch = append(batch, cm)
	}
	n, err := t.p.Write(ctx, batch)
	if errors.Is(err, core.ErrSpoolFull) {
		err = bridge.Permanent(err) // when_full=fail asked to stop, not to wait
	}
	if err != nil {
		for _, m := range batch[:n] {
			if m.ID != "" {
				if t.committed == nil {
					t.committed = map[string]int{}
				}
				t.committed[m.ID]++
			}
		}
		return err
	}
	for _, m := range msgs { // the route acknowledges all of them now
		delete(t.committed, m.ID)
	}
	return nil
}

// StreamsBodies says that the target copies a message's Body into the
// spool itself (see bridge.BodyStreamer), file to file in the kernel when
// both ends are backend-os on Linux.
func (t *Target) StreamsBodies() bool { return true }

// ForgetsPayloads says that WriteBatch has written every payload to its
// file when it returns, and keeps none (bridge.PayloadForgetter).
func (t *Target) ForgetsPayloads() bool { return true }

// Close writes DONE as emit_done says (status failure when cause is not
// nil) and releases the PRODUCER claim.
func (t *Target) Close(ctx context.Context, cause error) error {
	if t.p == nil {
		return nil
	}
	t.shared.set(nil, nil)
	err := t.p.CloseWithError(cause)
	return errors.Join(err, t.release())
}

// Backlog counts the chunks in the spool.
func (t *Target) Backlog() (int64, error) { return t.shared.backlog(t.opts.Options) }

// SpoolPath returns the spool directory.
func (t *Target) SpoolPath() string { return t.opts.Path }

// Place returns the spool directory and its backend (see bridge.Placed).
func (t *Target) Place() (string, string) { return t.opts.place() }

// Reads reports true for every name, as the Source's Reads does: a file
// written into the spool would be taken by its consumers for a chunk, or
// be reported by them as foreign.
func (t *Target) Reads(string) bool { return true }

func (c Config) place() (string, string) {
	if c.Backend == "" {
		return bridge.BackendOS, c.Path
	}
	return c.Backend, c.Path
}

// SpoolStats scans the spool.
func (t *Target) SpoolStats() (*core.Stats, error) { return t.shared.stats(t.opts.Options) }
