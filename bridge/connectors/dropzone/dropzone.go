// Package dropzone is local object storage: a drop-zone directory of
// immutable, multi-record files, the usual hand-off of CSV and JSON Lines
// ETL jobs.
//
//	dropzone:///data/incoming?format=csv
//	dropzone: {path: /data/incoming, format: json, pattern: "*.jsonl"}
//
// As a source it picks files up as they appear (in name order, polling
// every poll_interval), reads each once and emits one message per record,
// with content_type, source, path and line metadata. Its progress — which
// files are finished, and how many records of a file being read were
// acknowledged — is kept in a state file (state_path, by default
// .mqb-dropzone-state.json in the directory), replaced atomically and
// fsync'd on every acknowledgement, so a restart neither reads a finished
// file again nor skips one. Files must be complete when their name appears:
// write them under a name starting with "." or ending in .tmp, .part or
// .partial (never picked up) and rename them into place. Names must not be
// reused. With the route's drain flag the source ends once every file there
// is has been read and acknowledged.
//
// As a target it writes files of up to roll_count records, published
// after roll_interval at the latest: a file is filled under a hidden name
// and renamed into place when it is rolled, so readers only ever see whole
// files. Each batch is fsync'd, and its length recorded in the hidden
// name, before it is acknowledged; after a crash the next writer cuts the
// hidden file back to its last acknowledged batch and publishes it. format
// raw writes one file per message.
package dropzone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
)

// Schema is the option table of the drop-zone connector.
var Schema = &option.Schema{
	Name: "dropzone",
	Fields: []option.Field{
		{Name: "path", Type: option.TypeString, Required: true,
			Doc: "Absolute path of the drop-zone directory. In a URL it is the URL path (dropzone:///data/incoming)."},
		records.FormatField(records.Lines),
		records.DelimiterField,
		records.ContentTypeField,
		records.SourceField(""),
		{Name: "pattern", Type: option.TypeString, Default: "*",
			Doc: "Source: glob (path.Match) that file names must match to be read. Hidden names and names ending in .tmp, .part or .partial are never read."},
		{Name: "poll_interval", Type: option.TypeDuration, Default: "1s",
			Doc: "Source: how often the directory is listed for new files."},
		{Name: "state_path", Type: option.TypeString,
			Doc: "Source: absolute path of the progress file (default: .mqb-dropzone-state.json in the directory)."},
		{Name: "roll_count", Type: option.TypeInt, Default: "1000", Min: 1,
			Doc: "Target: most records per file."},
		{Name: "roll_interval", Type: option.TypeDuration, Default: "10s",
			Doc: "Target: a file is published at most this long after its first record (0: only when roll_count is reached or the route ends)."},
		{Name: "prefix", Type: option.TypeString,
			Doc: "Target: text at the start of each file name; names then carry a UTC timestamp and a counter, so they sort in write order."},
		{Name: "extension", Type: option.TypeString,
			Doc: "Target: file name extension (default by format: .jsonl, .csv, .txt, .bin)."},
		{Name: "file_mode", Type: option.TypeFileMode, Default: "0600",
			Doc: "Target: permission bits of the files it writes (less the umask)."},
	},
}

// Register adds the drop-zone connector (scheme dropzone) to env.
func Register(env *bridge.Env) {
	env.Register(&bridge.Connector{
		Name:      "dropzone",
		Schemes:   []string{"dropzone"},
		Schema:    Schema,
		URLFields: bridge.PathFields,
		NewSource: NewSource,
		NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

// Names of the connector's own files in the directory.
const (
	DefaultStateFile = ".mqb-dropzone-state.json"
	WriterLockFile   = ".mqb-dropzone-writer.lock"
	partialSuffix    = ".partial"
)

// ignored reports whether a name is never read: hidden, or a file still
// being written by the usual conventions.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") ||
		strings.HasSuffix(name, ".part") || strings.HasSuffix(name, partialSuffix)
}

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

	lock *os.File

	mu      sync.Mutex
	state   sourceState
	files   map[string]*progress // files being read or not yet fully acknowledged
	cur     *progress            // the file being read
	rd      *records.Reader
	f       *os.File
	retry   []*bridge.Message // nacked, delivered again first
	refs    map[*bridge.Message]ref
	err     error         // sticky read error
	settled chan struct{} // closed and replaced on every ack or nack
}

// sourceState is the progress file's content.
type sourceState struct {
	// Done lists the files read and acknowledged completely (only those
	// still in the directory).
	Done []string `json:"done"`
	// Partial maps a file being read to how many of its records, from the
	// start, were acknowledged.
	Partial map[string]int64 `json:"partial,omitempty"`
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

var (
	_ bridge.Source  = (*Source)(nil)
	_ bridge.Drainer = (*Source)(nil)
)

// SetDrain makes the source end once every file has been read and
// acknowledged.
func (s *Source) SetDrain(drain bool) { s.drain = drain }

// Connect takes the reader lock (a second reader of the same state file
// fails at once) and loads the progress.
func (s *Source) Connect(ctx context.Context) error {
	if fi, err := os.Stat(s.dir); err != nil {
		return fmt.Errorf("drop zone: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("drop zone %s: not a directory", s.dir)
	}
	lock, err := tryLock(s.statePath + ".lock")
	if err != nil {
		return fmt.Errorf("drop zone %s: %w", s.dir, err)
	}
	s.lock = lock
	b, err := os.ReadFile(s.statePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		s.unlock()
		return fmt.Errorf("drop zone %s: read state: %w", s.dir, err)
	default:
		if err := json.Unmarshal(b, &s.state); err != nil {
			s.unlock()
			return fmt.Errorf("drop zone %s: state file %s is not valid: %w", s.dir, s.statePath, err)
		}
	}
	if s.state.Partial == nil {
		s.state.Partial = map[string]int64{}
	}
	return nil
}

func (s *Source) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
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
		rec, err := s.rd.Next()
		if errors.Is(err, io.EOF) {
			s.cur.eof = true
			s.f.Close()
			cur := s.cur
			s.cur, s.rd, s.f = nil, nil, nil
			if cur.acked == cur.emitted {
				if err := s.finish([]*progress{cur}); err != nil {
					s.err = err
				}
			}
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

func (s *Source) sourceOf(name string) string {
	if s.source != "" {
		return s.source
	}
	return records.SourceName(name)
}

// openNext opens the first file, in name order, that is neither finished
// nor being read. It reports false when there is none.
func (s *Source) openNext() (bool, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return false, fmt.Errorf("drop zone: list %s: %w", s.dir, err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	done := make(map[string]bool, len(s.state.Done))
	kept := s.state.Done[:0]
	for _, n := range s.state.Done {
		if present[n] { // forget files that are gone, so the state stays small
			done[n] = true
			kept = append(kept, n)
		}
	}
	s.state.Done = kept
	for _, e := range entries { // sorted by name
		name := e.Name()
		if ignored(name) || done[name] || s.files[name] != nil || !e.Type().IsRegular() {
			continue
		}
		if ok, _ := path.Match(s.pattern, name); !ok {
			continue
		}
		full := filepath.Join(s.dir, name)
		f, err := os.Open(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("drop zone: open %w", err)
		}
		p := &progress{name: name, acked: s.state.Partial[name], ackedSet: map[int64]bool{}}
		rd := records.NewReader(f, s.format, full, s.delim)
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
	return false, nil
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
		for p := range touched {
			if p.eof && p.acked == p.emitted {
				finished = append(finished, p)
			} else {
				s.state.Partial[p.name] = p.acked
			}
		}
		return s.finish(finished)
	}
}

// finish records files as done and saves the state.
func (s *Source) finish(ps []*progress) error {
	for _, p := range ps {
		delete(s.files, p.name)
		delete(s.state.Partial, p.name)
		s.state.Done = append(s.state.Done, p.name)
	}
	sort.Strings(s.state.Done)
	return s.save()
}

// save replaces the state file atomically and durably.
func (s *Source) save() error {
	b, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.statePath, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("drop zone: save progress: %w", err)
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
	s.unlock()
	return nil
}

// tryLock takes a non-blocking exclusive flock on name, creating it.
func tryLock(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is held by another process", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}

// writeFileAtomic writes data under a temporary name, syncs it, renames it
// over name and syncs the directory.
func writeFileAtomic(name string, data []byte, mode fs.FileMode) (err error) {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// NewTarget returns a drop-zone target.
func NewTarget(env *bridge.Env, v *option.Values) (bridge.Target, error) {
	dir, err := records.AbsPath(v)
	if err != nil {
		return nil, err
	}
	d, err := records.Delimiter(v)
	if err != nil {
		return nil, err
	}
	t := &Target{
		env: env, dir: dir, format: v.String("format"), delim: d,
		rollCount: v.Int("roll_count"), rollInterval: v.Duration("roll_interval"),
		prefix: v.String("prefix"), ext: v.String("extension"), mode: fs.FileMode(v.FileMode("file_mode")),
	}
	if strings.ContainsAny(t.prefix, "/\x00") || strings.HasPrefix(t.prefix, ".") {
		return nil, &option.Error{Field: "prefix", Value: t.prefix, Msg: "must not contain '/' or start with '.'"}
	}
	if t.ext == "" {
		t.ext = records.Extension(t.format)
	}
	if strings.ContainsAny(t.ext, "/\x00") || ignored("x"+t.ext) {
		return nil, &option.Error{Field: "extension", Value: t.ext, Msg: "must not contain '/' nor be .tmp, .part or .partial"}
	}
	if t.format == records.Raw {
		t.rollCount = 1
	}
	return t, nil
}

// Target writes multi-record files into a drop zone.
type Target struct {
	env          *bridge.Env
	dir, format  string
	delim        rune
	rollCount    int
	rollInterval time.Duration
	prefix, ext  string
	mode         fs.FileMode

	lock *os.File
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	cur    *outFile
	enc    *records.Encoder
	seq    int
	failed error
}

// outFile is a file being filled under a hidden name that records the
// length of its acknowledged content: .NAME.LENGTH.partial.
type outFile struct {
	final     string
	onDisk    string // the hidden name it has now
	f         *os.File
	committed int64
	count     int
	opened    time.Time
}

func (o *outFile) partial() string {
	return "." + o.final + "." + strconv.FormatInt(o.committed, 10) + partialSuffix
}

var _ bridge.Target = (*Target)(nil)

// Connect creates the directory when missing, takes the writer lock and
// publishes what a previous writer left acknowledged in hidden files.
func (t *Target) Connect(ctx context.Context) error {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return fmt.Errorf("drop zone: %w", err)
	}
	lock, err := tryLock(filepath.Join(t.dir, WriterLockFile))
	if err != nil {
		return fmt.Errorf("drop zone %s: %w", t.dir, err)
	}
	t.lock = lock
	if err := t.recover(); err != nil {
		t.lock.Close()
		return err
	}
	t.enc = records.NewEncoder(t.format, t.delim, nil)
	t.stop = make(chan struct{})
	if t.rollInterval > 0 {
		t.wg.Add(1)
		go t.roller()
	}
	return nil
}

func (t *Target) recover() error {
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return fmt.Errorf("drop zone: %w", err)
	}
	changed := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, partialSuffix) {
			continue
		}
		body := strings.TrimSuffix(name[1:], partialSuffix)
		i := strings.LastIndexByte(body, '.')
		if i < 0 {
			continue
		}
		final := body[:i]
		n, err := strconv.ParseInt(body[i+1:], 10, 64)
		if err != nil || final == "" {
			continue
		}
		full := filepath.Join(t.dir, name)
		changed = true
		if n == 0 {
			if err := os.Remove(full); err != nil {
				return fmt.Errorf("drop zone: remove empty leftover: %w", err)
			}
			continue
		}
		if err := truncateSync(full, n); err != nil {
			return fmt.Errorf("drop zone: cut leftover back to its acknowledged length: %w", err)
		}
		if _, err := t.publish(full, final); err != nil {
			return err
		}
		t.env.Logger.Info("drop zone: published a file left by an interrupted writer", "path", filepath.Join(t.dir, final))
	}
	if changed {
		return syncDir(t.dir)
	}
	return nil
}

func truncateSync(name string, n int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(n); err != nil {
		return err
	}
	return f.Sync()
}

// publish renames a hidden file to its final name, choosing another one if
// that is taken (never replacing a file). The caller syncs the directory.
func (t *Target) publish(from, final string) (string, error) {
	for {
		to := filepath.Join(t.dir, final)
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(from, to); err != nil {
				return "", fmt.Errorf("drop zone: publish %s: %w", to, err)
			}
			return to, nil
		}
		final = t.newName()
	}
}

func (t *Target) newName() string {
	t.seq++
	return fmt.Sprintf("%s%s-%06d%s", t.prefix, time.Now().UTC().Format("20060102T150405.000Z"), t.seq, t.ext)
}

func (t *Target) roller() {
	defer t.wg.Done()
	tick := time.NewTicker(min(t.rollInterval/4+time.Millisecond, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		t.mu.Lock()
		if t.cur != nil && t.failed == nil && time.Since(t.cur.opened) >= t.rollInterval {
			if err := t.roll(); err != nil {
				t.env.Logger.Error("drop zone: publish file", "error", err)
			}
		}
		t.mu.Unlock()
	}
}

// WriteBatch appends msgs to the open file (opening new ones as roll_count
// requires), fsyncs, and records the new length before returning.
func (t *Target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	for len(msgs) > 0 {
		if t.cur == nil {
			if err := t.open(); err != nil {
				return err
			}
		}
		k := min(len(msgs), t.rollCount-t.cur.count)
		if err := t.append(msgs[:k]); err != nil {
			return err
		}
		msgs = msgs[k:]
	}
	return nil
}

func (t *Target) open() error {
	o := &outFile{final: t.newName(), opened: time.Now()}
	o.onDisk = o.partial()
	f, err := os.OpenFile(filepath.Join(t.dir, o.onDisk), os.O_CREATE|os.O_EXCL|os.O_WRONLY, t.mode)
	if err != nil {
		return fmt.Errorf("drop zone: create: %w", err)
	}
	o.f = f
	t.cur = o
	t.enc.Reset()
	return nil
}

func (t *Target) append(msgs []*bridge.Message) error {
	o := t.cur
	payloads, ids := make([][]byte, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		payloads[i], ids[i] = m.Payload, m.ID
	}
	b, err := t.enc.Encode(payloads, ids)
	if err != nil {
		return err
	}
	old := filepath.Join(t.dir, o.onDisk)
	if _, err := o.f.WriteAt(b.Data, o.committed); err != nil {
		if terr := o.f.Truncate(o.committed); terr != nil {
			t.failed = bridge.Permanent(fmt.Errorf("drop zone: write %s: %w; then cutting it back failed: %w", old, err, terr))
			return t.failed
		}
		return fmt.Errorf("drop zone: write %s: %w", old, err)
	}
	if err := o.f.Sync(); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: sync %s: %w", old, err))
		return t.failed
	}
	prev, prevCount := o.committed, o.count
	o.committed += int64(len(b.Data))
	o.count += len(msgs)
	b.Commit()
	if o.count >= t.rollCount {
		return t.roll()
	}
	// Record the acknowledged length in the name, durably.
	next := o.partial()
	if err := os.Rename(old, filepath.Join(t.dir, next)); err != nil {
		o.committed, o.count = prev, prevCount
		if terr := o.f.Truncate(prev); terr != nil {
			t.failed = bridge.Permanent(fmt.Errorf("drop zone: record length of %s: %w; then cutting it back failed: %w", old, err, terr))
			return t.failed
		}
		return fmt.Errorf("drop zone: record length of %s: %w", old, err)
	}
	o.onDisk = next
	if err := syncDir(t.dir); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: %w", err))
		return t.failed
	}
	return nil
}

// roll publishes the open file under its final name.
func (t *Target) roll() error {
	o := t.cur
	if o == nil {
		return nil
	}
	from := filepath.Join(t.dir, o.onDisk)
	if o.count == 0 {
		o.f.Close()
		t.cur = nil
		if err := os.Remove(from); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("drop zone: remove empty %s: %w", from, err)
		}
		return nil
	}
	if err := o.f.Close(); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: close %s: %w", from, err))
		return t.failed
	}
	t.cur = nil
	if _, err := t.publish(from, o.final); err != nil {
		t.failed = bridge.Permanent(err) // the next Connect publishes it
		return t.failed
	}
	if err := syncDir(t.dir); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: %w", err))
		return t.failed
	}
	return nil
}

// Close publishes the open file and releases the writer lock.
func (t *Target) Close(ctx context.Context, cause error) error {
	if t.lock == nil {
		return nil
	}
	close(t.stop)
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	var err error
	if t.failed == nil {
		err = t.roll()
	} else if t.cur != nil {
		t.cur.f.Close()
	}
	t.lock.Close()
	t.lock = nil
	return err
}
