// Package dirspool is the directory spool connector: a durable FIFO queue in
// a directory, one payload file (and one JSON metadata sidecar) per message.
//
//	dir-spool:///var/spool/orders?emit_done=success   (aliases spool://, dirspool://)
//	dir_spool: {path: /var/spool/orders, emit_done: success}
//
// Its options are core.SpoolSchema. As a source it is a core.Consumer: it
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
	"io/fs"
	"net/url"
	"path/filepath"
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
		Name:      core.SpoolSchema.Name,
		Schemes:   core.SpoolSchemes,
		Schema:    core.SpoolSchema,
		URLFields: urlFields,
		NewSource: NewSource,
		NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

func urlFields(u *url.URL) (map[string]any, error) {
	if u.Host != "" {
		return nil, &option.Error{Field: "path", Value: u.Host + u.Path,
			Msg: fmt.Sprintf("must be absolute: write three slashes, as in %s:///var/spool/orders", u.Scheme)}
	}
	if u.Opaque != "" || u.Path == "" || u.Path[0] != '/' {
		return nil, &option.Error{Field: "path", Value: u.Opaque + u.Path,
			Msg: fmt.Sprintf("must be an absolute path, as in %s:///var/spool/orders", u.Scheme)}
	}
	return bridge.PathFields(u)
}

// Options decodes and checks the spool options of an endpoint: the core
// validation plus an absolute path and a registered backend.
func Options(env *bridge.Env, v *option.Values) (core.Options, error) {
	o, err := core.OptionsFromValues(v)
	if err != nil {
		return o, err
	}
	if !filepath.IsAbs(o.Path) {
		return o, &option.Error{Field: "path", Value: o.Path, Msg: "must be an absolute path, such as /var/spool/orders"}
	}
	o.Path = filepath.Clean(o.Path)
	return o, env.CheckBackend(o.Backend)
}

// NewSource returns a spool consumer as a source.
func NewSource(env *bridge.Env, v *option.Values) (bridge.Source, error) {
	o, err := Options(env, v)
	if err != nil {
		return nil, err
	}
	return &Source{env: env, opts: o, msgs: map[*core.Delivery]*bridge.Message{}}, nil
}

// Source reads a spool. It implements bridge.Drainer, bridge.Progresser and
// bridge.BacklogReporter.
type Source struct {
	env     *bridge.Env
	opts    core.Options
	fsys    core.FS
	release func() error
	c       *core.Consumer

	mu    sync.Mutex
	msgs  map[*core.Delivery]*bridge.Message // unsettled, so a redelivery is the same message
	total int64                              // backlog when connected (drain only)
	acked int64
}

var (
	_ bridge.Source          = (*Source)(nil)
	_ bridge.Drainer         = (*Source)(nil)
	_ bridge.Progresser      = (*Source)(nil)
	_ bridge.BacklogReporter = (*Source)(nil)

	_ bridge.UnexpectedFilesReporter = (*Source)(nil)
)

// SetDrain makes the consumer end once the spool is empty (ExitWhenEmpty).
func (s *Source) SetDrain(drain bool) { s.opts.ExitWhenEmpty = drain }

// Connect opens the spool and takes the CONSUMER claim (when draining and
// claims are on). A spool directory that does not exist yet is waited for,
// unless the route drains: then it is an error.
func (s *Source) Connect(ctx context.Context) error {
	var err error
	logged := false
	for {
		s.fsys, s.release, err = s.env.OpenSpoolFS(s.opts, false)
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
	if err != nil {
		return err
	}
	s.c, err = core.OpenConsumer(s.fsys, s.opts)
	if err != nil {
		s.release()
		return err
	}
	s.c.SetLogger(s.env.Logger)
	if s.opts.ExitWhenEmpty {
		if st, err := core.Scan(s.fsys, s.opts); err == nil {
			s.total = int64(st.Chunks)
		}
	} else {
		s.total = -1
	}
	return nil
}

// ReadBatch returns the next chunks in order, nacked ones first.
func (s *Source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	ds, err := s.c.Read(ctx, limit)
	if err != nil {
		if errors.Is(err, core.ErrEnd) {
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
			s.msgs[d] = m
		}
		out[i] = m
	}
	s.mu.Unlock()
	return out, func(_ context.Context, err error) error {
		if err != nil {
			return s.c.Nack(ds...)
		}
		aerr := s.c.Ack(ds...)
		s.mu.Lock()
		for _, d := range ds {
			delete(s.msgs, d)
		}
		s.acked += int64(len(ds))
		s.mu.Unlock()
		return aerr
	}, nil
}

// Progress reports acknowledged chunks against the backlog found at
// Connect (known only when draining).
func (s *Source) Progress() (done, total int64, unit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked, s.total, "messages"
}

// Backlog counts the chunks in the spool.
func (s *Source) Backlog() (int64, error) { return backlog(s.fsys, s.opts) }

// UnexpectedFiles counts the files with the payload extension that fit no
// chunk name, which the spool's consumers never deliver.
func (s *Source) UnexpectedFiles() (int64, error) { return unexpected(s.fsys, s.opts) }

// SpoolPath returns the spool directory.
func (s *Source) SpoolPath() string { return s.opts.Path }

// Close releases the CONSUMER claim; unacknowledged chunks stay on disk.
func (s *Source) Close(ctx context.Context) error {
	if s.c == nil {
		return nil
	}
	err := s.c.Close()
	return errors.Join(err, s.release())
}

func backlog(fsys core.FS, o core.Options) (int64, error) {
	if fsys == nil {
		return 0, errors.New("spool is not open")
	}
	st, err := core.Scan(fsys, o)
	if err != nil {
		return 0, err
	}
	return int64(st.Chunks), nil
}

func unexpected(fsys core.FS, o core.Options) (int64, error) {
	if fsys == nil {
		return 0, errors.New("spool is not open")
	}
	sv, err := core.SurveyLayout(fsys, o)
	if err != nil {
		return 0, err
	}
	return int64(sv.Foreign), nil
}

// NewTarget returns a spool producer as a target.
func NewTarget(env *bridge.Env, v *option.Values) (bridge.Target, error) {
	o, err := Options(env, v)
	if err != nil {
		return nil, err
	}
	return &Target{env: env, opts: o}, nil
}

// Target writes a spool. It implements bridge.BacklogReporter.
type Target struct {
	env     *bridge.Env
	opts    core.Options
	fsys    core.FS
	release func() error
	p       *core.Producer

	mu sync.Mutex
	// committed counts, per message id, the chunks written by batches that
	// then failed and that the route has not yet seen succeed: a retry
	// skips them instead of writing them again.
	committed map[string]int
}

var (
	_ bridge.Target          = (*Target)(nil)
	_ bridge.BacklogReporter = (*Target)(nil)
	_ bridge.HeldIDLister    = (*Target)(nil)
	_ bridge.BoundedSpool    = (*Target)(nil)

	_ bridge.UnexpectedFilesReporter = (*Target)(nil)
)

// Connect creates the spool directory when missing, takes the PRODUCER
// claim and recovers the spool (see core.OpenProducer).
func (t *Target) Connect(ctx context.Context) error {
	var err error
	t.fsys, t.release, err = t.env.OpenSpoolFS(t.opts, true)
	if err != nil {
		return err
	}
	t.p, err = core.OpenProducer(t.fsys, t.opts)
	if err != nil {
		t.release()
		return err
	}
	t.p.OnDrop(func(m core.Message) {
		t.env.Logger.Warn("spool full: message dropped (when_full=drop_newest)", "spool", t.opts.Path, "id", m.ID)
	})
	return nil
}

// HeldIDs returns the message ids of the chunks in the spool, so that a
// route using the spool as its dead-letter target writes each message once.
func (t *Target) HeldIDs(ctx context.Context) (map[string]bool, error) {
	return core.MessageIDs(t.fsys, t.opts)
}

// Dropped counts the messages when_full=drop_newest dropped.
func (t *Target) Dropped() uint64 { return t.p.Dropped() }

// FullWaits counts the writes that waited for room (when_full=block).
func (t *Target) FullWaits() uint64 { return t.p.FullWaits() }

// SpoolBytes returns the bytes of the spool's chunks: the producer's
// account when the spool is bounded, else a scan of payload sizes.
func (t *Target) SpoolBytes() (int64, error) {
	if _, b, ok := t.p.Usage(); ok {
		return b, nil
	}
	st, err := core.Scan(t.fsys, t.opts)
	if err != nil {
		return 0, err
	}
	return st.Bytes, nil
}

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
	for _, m := range msgs {
		if m.ID != "" && skipped[m.ID] < t.committed[m.ID] {
			skipped[m.ID]++
			continue
		}
		batch = append(batch, core.Message{ID: m.ID, Metadata: m.Metadata, Payload: m.Payload})
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

// Close writes DONE as emit_done says (status failure when cause is not
// nil) and releases the PRODUCER claim.
func (t *Target) Close(ctx context.Context, cause error) error {
	if t.p == nil {
		return nil
	}
	err := t.p.CloseWithError(cause)
	return errors.Join(err, t.release())
}

// Backlog counts the chunks in the spool.
func (t *Target) Backlog() (int64, error) { return backlog(t.fsys, t.opts) }

// UnexpectedFiles counts the files with the payload extension that fit no
// chunk name, which the spool's consumers never deliver.
func (t *Target) UnexpectedFiles() (int64, error) { return unexpected(t.fsys, t.opts) }

// SpoolPath returns the spool directory.
func (t *Target) SpoolPath() string { return t.opts.Path }
