package dropzone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

// NewSource returns a drop-zone source.
func NewSource(env *bridge.Env, v *option.Values) (bridge.Source, error) {
	dir, err := records.AbsPath(v)
	if err != nil {
		return nil, err
	}
	d, err := records.Delimiter(v)
	if err != nil {
		return nil, err
	}
	pattern := v.String("pattern")
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, &option.Error{Field: "pattern", Value: pattern, Msg: "is not a valid glob pattern"}
	}
	poll := v.Duration("poll_interval")
	if poll <= 0 {
		return nil, &option.Error{Field: "poll_interval", Value: poll.String(), Msg: "must be positive"}
	}
	state := v.String("state_path")
	if state == "" {
		state = filepath.Join(dir, DefaultStateFile)
	} else if !filepath.IsAbs(state) {
		return nil, &option.Error{Field: "state_path", Value: state, Msg: "must be an absolute path"}
	}
	s := &Source{
		env: env, dir: dir, format: v.String("format"), delim: d, pattern: pattern, poll: poll,
		statePath: filepath.Clean(state), contentType: v.String("content_type"), source: v.String("source"),
		files: map[string]*progress{}, refs: map[*bridge.Message]ref{}, settled: make(chan struct{}),
		warned: map[string]bool{},
	}
	if s.contentType == "" {
		s.contentType = records.ContentType(s.format)
	}
	return s, nil
}

// Source reads a drop zone. It implements bridge.Drainer.
type Source struct {
	env                 *bridge.Env
	dir, format         string
	delim               rune
	pattern             string
	poll                time.Duration
	statePath           string
	contentType, source string
	drain               bool

	zone  zoneFS
	store *stateFile

	mu      sync.Mutex
	state   sourceState
	files   map[string]*progress // files being read or not yet fully acknowledged
	cur     *progress            // the file being read
	rd      *records.Reader
	spare   *records.Reader // the last file's reader, whose buffer the next file's reuses
	f       core.File
	pending []entry           // the last listing's files not opened yet, in name order
	retry   []*bridge.Message // nacked, delivered again first
	refs    map[*bridge.Message]ref
	err     error           // sticky read error
	settled chan struct{}   // closed and replaced on every ack or nack
	warned  map[string]bool // entries skipped with a warning already
}

type progress struct {
	name     string
	emitted  int64 // records handed out, from the start of the file
	acked    int64 // records acknowledged, from the start
	ackedSet map[int64]bool
	eof      bool
}

type ref struct {
	file *progress
	idx  int64
}

// entry is a listed file's name and type.
type entry struct {
	name string
	typ  fs.FileMode
}

var (
	_ bridge.Source           = (*Source)(nil)
	_ bridge.Drainer          = (*Source)(nil)
	_ bridge.Placed           = (*Source)(nil)
	_ bridge.MessageDirectory = (*Source)(nil)
	_ bridge.StateKeeper      = (*Source)(nil)
)

// SetDrain makes the source end once every file has been read and
// acknowledged.
func (s *Source) SetDrain(drain bool) { s.drain = drain }

// Place returns the drop-zone directory (see bridge.Placed).
func (s *Source) Place() (string, string) { return bridge.BackendOS, s.dir }

// StatePlace returns the state file (see bridge.StateKeeper).
func (s *Source) StatePlace() (string, string) { return bridge.BackendOS, s.statePath }

// Reads reports whether the source reads a file at this path in the zone:
// one directly in it that matches the pattern and is not hidden or
// unfinished (see bridge.MessageDirectory).
func (s *Source) Reads(rel string) bool {
	ok, _ := path.Match(s.pattern, rel)
	return ok && !strings.Contains(rel, "/") && !ignored(rel)
}

// Connect opens the zone, takes the reader lock (a second reader of the
// same state file fails at once) and loads the progress.
func (s *Source) Connect(ctx context.Context) error {
	zone, err := openDir("drop zone", s.dir, osfs.Options{})
	if errors.Is(err, fs.ErrNotExist) && s.drain { // nothing to wait for
		return bridge.Permanent(err)
	} else if err != nil {
		return err
	}
	store, err := openState(zone, s.dir, s.statePath)
	if err != nil {
		zone.Close()
		return err
	}
	if err := store.lock(); err != nil {
		store.close()
		zone.Close()
		return fmt.Errorf("drop zone %s: %w", s.dir, err)
	}
	state, err := store.load()
	if err != nil {
		store.close()
		zone.Close()
		return fmt.Errorf("drop zone %s: %w", s.dir, err)
	}
	if state.Partial == nil {
		state.Partial = map[string]int64{}
	}
	s.zone, s.store, s.state = zone, store, state
	return nil
}

// ReadBatch returns up to max records, nacked ones first, then from the
// file being read, then from the next new file.
func (s *Source) ReadBatch(ctx context.Context, max int) ([]*bridge.Message, bridge.AckFunc, error) {
	for {
		s.mu.Lock()
		out, err := s.fill(max)
		if len(out) > 0 {
			s.mu.Unlock()
			return out, s.ackFunc(out), nil
		}
		if err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		if s.drain && len(s.refs) == 0 && len(s.retry) == 0 {
			s.mu.Unlock()
			return nil, nil, bridge.ErrEndOfInput
		}
		settled := s.settled
		s.mu.Unlock()
		t := time.NewTimer(s.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-settled:
			t.Stop()
		case <-t.C:
		}
	}
}

func (s *Source) fill(max int) ([]*bridge.Message, error) {
	n := min(max, len(s.retry))
	out := append([]*bridge.Message(nil), s.retry[:n]...)
	s.retry = s.retry[n:]
	for len(out) < max && s.err == nil {
		if s.cur == nil {
			ok, err := s.openNext()
			if err != nil {
				s.err = err
				break
			}
			if !ok {
				break
			}
		}
		if m := s.bodyMessage(); m != nil {
			out = append(out, m)
			s.endOfFile()
			continue
		}
		rec, err := s.rd.Next()
		if errors.Is(err, io.EOF) {
			s.endOfFile()
			continue
		}
		if err != nil {
			s.err = err
			break
		}
		m := &bridge.Message{Payload: rec.Payload, Metadata: records.Meta(s.contentType, s.sourceOf(s.cur.name), filepath.Join(s.dir, s.cur.name), rec)}
		s.refs[m] = ref{s.cur, s.cur.emitted}
		s.cur.emitted++
		out = append(out, m)
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, s.err
}

// bodyMessage returns, for a raw file larger than bridge.StreamAbove that
// was not read yet, its message with a Body that opens the file again
// (through the confined zone), checks it is the same file and reads
// exactly the size it has now. It returns nil for any other file.
func (s *Source) bodyMessage() *bridge.Message {
	if s.format != records.Raw || s.cur.emitted > 0 {
		return nil
	}
	fi, err := s.f.Stat()
	if err != nil || fi.Size() <= bridge.StreamAbove {
		return nil // read as usual; a Stat error shows there
	}
	zone, name, size := s.zone, s.cur.name, fi.Size()
	full := filepath.Join(s.dir, name)
	open := func() (io.ReadCloser, error) {
		f, err := zone.Open(name)
		if err != nil {
			return nil, fmt.Errorf("drop zone: open %s: %w", full, err)
		}
		if now, err := f.Stat(); err != nil || !osfs.SameFile(now, fi) {
			f.Close()
			return nil, fmt.Errorf("drop zone: %s was replaced while it was being read", full)
		}
		return core.ExactReadCloser(f, size, full), nil
	}
	m := &bridge.Message{Body: &bridge.Body{Size: size, Open: open},
		Metadata: records.Meta(s.contentType, s.sourceOf(name), full, records.Record{})}
	s.refs[m] = ref{s.cur, s.cur.emitted}
	s.cur.emitted++
	return m
}

// endOfFile closes the file being read, finishing it when every record of
// it is acknowledged already.
func (s *Source) endOfFile() {
	s.cur.eof = true
	s.f.Close()
	cur := s.cur
	s.cur, s.rd, s.spare, s.f = nil, nil, s.rd, nil
	if cur.acked == cur.emitted {
		if err := s.finish([]*progress{cur}, sourceState{}); err != nil {
			s.err = err
		}
	}
}

func (s *Source) sourceOf(name string) string {
	if s.source != "" {
		return s.source
	}
	return records.SourceName(name)
}

// openNext opens the first file, in name order, that is neither finished
// nor being read. It takes the next name of the last listing, and lists the
// zone again once those are used up, so that reading N files costs a few
// listings, not N. It reports false when there is none.
func (s *Source) openNext() (bool, error) {
	for listed := false; ; listed = true {
		for len(s.pending) > 0 {
			e := s.pending[0]
			s.pending = s.pending[1:]
			if !e.typ.IsRegular() {
				s.skip(e.name, kind(e.typ))
				continue
			}
			ok, err := s.open(e.name)
			if ok || err != nil {
				return ok, err
			}
		}
		if listed {
			return false, nil
		}
		if err := s.list(); err != nil {
			return false, err
		}
	}
}

// list sets pending to the files of the zone, in name order, that match the
// pattern and are neither finished nor being read. It also forgets the
// finished files that are gone, so that the state stays small. The listing
// is streamed where the zone can (core.DirScanner): it holds the new files
// and one bit per finished one, not every name of the zone.
func (s *Source) list() error {
	done := s.state.Done // sorted
	present := make([]bool, len(done))
	s.pending = s.pending[:0]
	err := scanDir(s.zone, func(name string, typ fs.FileMode) {
		if i, ok := slices.BinarySearch(done, name); ok {
			present[i] = true
			return
		}
		if ignored(name) || s.files[name] != nil || s.store.owns(name) {
			return
		}
		if ok, _ := path.Match(s.pattern, name); ok {
			s.pending = append(s.pending, entry{name, typ})
		}
	})
	if err != nil {
		return fmt.Errorf("drop zone: list %s: %w", s.dir, err)
	}
	slices.SortFunc(s.pending, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	kept := done[:0]
	for i, name := range done {
		if present[i] {
			kept = append(kept, name)
		}
	}
	s.state.Done = kept
	return nil
}

// scanDir calls fn for every entry of the zone, streamed where the zone can.
func scanDir(zone core.FS, fn func(name string, typ fs.FileMode)) error {
	if sc, ok := zone.(core.DirScanner); ok {
		return sc.ScanDir(".", fn)
	}
	entries, err := zone.ReadDir(".")
	for _, e := range entries {
		fn(e.Name(), e.Type())
	}
	return err
}

// skip warns, once per name, that an entry is not read.
func (s *Source) skip(name, why string) {
	if s.warned[name] {
		return
	}
	s.warned[name] = true
	s.env.Logger.Warn("drop zone: not reading an entry that is not a regular file (a symbolic link is never followed)",
		"path", filepath.Join(s.dir, name), "reason", why)
}

// open starts reading name, skipping the records acknowledged before a
// restart. It reports false, with no error, when name went away or turned
// out not to be a regular file.
func (s *Source) open(name string) (bool, error) {
	full := filepath.Join(s.dir, name)
	f, err := s.zone.Open(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case notRegular(err):
		s.skip(name, err.Error())
		return false, nil
	case err != nil:
		return false, fmt.Errorf("drop zone: open %s: %w", full, err)
	}
	p := &progress{name: name, acked: s.state.Partial[name], ackedSet: map[int64]bool{}}
	rd := s.readerOf(f, full)
	for p.emitted < p.acked { // acknowledged before a restart: do not emit again
		if _, err := rd.Next(); err != nil {
			f.Close()
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("has fewer records than the %d the state file says were acknowledged: was it changed?", p.acked)
			}
			return false, fmt.Errorf("drop zone: %s: %w", full, err)
		}
		p.emitted++
	}
	s.files[name], s.cur, s.rd, s.f = p, p, rd, f
	s.env.Logger.Debug("drop zone: reading file", "path", full, "resume_at_record", p.acked)
	return true, nil
}

// readerOf returns a reader of the records of f, named full in errors,
// with the buffer of the last file's reader when there is one.
func (s *Source) readerOf(f io.Reader, full string) *records.Reader {
	rd := s.spare
	if rd == nil {
		return records.NewReader(f, s.format, full, s.delim)
	}
	s.spare = nil
	rd.Reset(f, full)
	return rd
}

func (s *Source) ackFunc(out []*bridge.Message) bridge.AckFunc {
	return func(_ context.Context, err error) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		defer func() {
			close(s.settled)
			s.settled = make(chan struct{})
		}()
		if err != nil {
			s.retry = append(append([]*bridge.Message(nil), out...), s.retry...)
			return nil
		}
		return s.acked(out)
	}
}

// acked records out as acknowledged and saves the progress.
func (s *Source) acked(out []*bridge.Message) error {
	touched := map[*progress]bool{}
	for _, m := range out {
		r, ok := s.refs[m]
		if !ok {
			continue
		}
		delete(s.refs, m)
		p := r.file
		p.ackedSet[r.idx] = true
		for p.ackedSet[p.acked] {
			delete(p.ackedSet, p.acked)
			p.acked++
		}
		touched[p] = true
	}
	var finished []*progress
	change := sourceState{Partial: map[string]int64{}}
	for p := range touched {
		if p.eof && p.acked == p.emitted {
			finished = append(finished, p)
		} else {
			s.state.Partial[p.name] = p.acked
			change.Partial[p.name] = p.acked
		}
	}
	return s.finish(finished, change)
}

// finish records files as done and saves the state with change, the
// counts this save moved, and those files.
func (s *Source) finish(ps []*progress, change sourceState) error {
	// Files finish mostly in name order: Done, sorted, is sorted again only
	// when a name comes before the last one.
	slices.SortFunc(ps, func(a, b *progress) int { return strings.Compare(a.name, b.name) })
	sorted := true
	for _, p := range ps {
		delete(s.files, p.name)
		delete(s.state.Partial, p.name)
		if n := len(s.state.Done); n > 0 && s.state.Done[n-1] > p.name {
			sorted = false
		}
		s.state.Done = append(s.state.Done, p.name)
		change.Done = append(change.Done, p.name)
	}
	if !sorted {
		slices.Sort(s.state.Done)
	}
	if err := s.store.record(s.state, change); err != nil {
		return fmt.Errorf("drop zone: %w", err)
	}
	return nil
}

// Close releases the reader lock. Records not acknowledged are read again
// by the next reader.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.store != nil {
		if err := s.store.flush(s.state); err != nil {
			s.env.Logger.Warn("drop zone: could not write the whole state on close; the next reader replays its journal", "error", err)
		}
		s.store.close()
		s.store = nil
	}
	if s.zone != nil {
		s.zone.Close()
		s.zone = nil
	}
	return nil
}
