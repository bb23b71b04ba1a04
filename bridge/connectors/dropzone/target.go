package dropzone

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

// zoneDirMode is the permission of a zone directory the target creates:
// only its owner, as for a spool (the files default to 0600 too). Make the
// directory yourself beforehand to share it.
const zoneDirMode fs.FileMode = 0o700

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
	if t.mode == 0 {
		// The confined FS reads a zero mode as its default (0600): refuse
		// it rather than write files with other bits than asked.
		return nil, &option.Error{Field: "file_mode", Value: "0000", Msg: "would make files nobody can read: give at least the owner's bits, e.g. 0600"}
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

	zone zoneFS
	lock core.Claim
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
	f         core.File
	committed int64
	count     int
	opened    time.Time
	// torn is set when bytes past committed may have been written (a
	// write or the length's rename failed): the file is cut back to
	// committed before anything else is appended.
	torn bool
}

// partialName is the hidden name of final while its first n bytes are
// acknowledged.
func partialName(final string, n int64) string {
	return "." + final + "." + strconv.FormatInt(n, 10) + partialSuffix
}

var (
	_ bridge.Target           = (*Target)(nil)
	_ bridge.MessageDirectory = (*Target)(nil)
)

// Place returns the drop-zone directory (see bridge.Placed).
func (t *Target) Place() (string, string) { return bridge.BackendOS, t.dir }

// Reads reports whether a reader of the zone takes a file at this path:
// one directly in the zone, not hidden or unfinished, since a reader's
// pattern is not known here (see bridge.MessageDirectory).
func (t *Target) Reads(rel string) bool { return !strings.Contains(rel, "/") && !ignored(rel) }

// Connect creates the directory when missing, takes the writer lock and
// publishes what a previous writer left acknowledged in hidden files.
func (t *Target) Connect(ctx context.Context) error {
	zone, err := openDir("drop zone", t.dir, osfs.Options{FileMode: t.mode, DirMode: zoneDirMode, CreateRoot: true})
	if err != nil {
		return err
	}
	claim, err := lock(zone, WriterLockFile, filepath.Join(t.dir, WriterLockFile))
	if err != nil {
		zone.Close()
		return fmt.Errorf("drop zone %s: %w", t.dir, err)
	}
	t.zone, t.lock = zone, claim
	if err := t.recover(ctx); err != nil {
		t.lock.Release()
		t.zone.Close()
		t.lock, t.zone = nil, nil
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

// publish renames a hidden file to its final name, choosing another one if
// that is taken: the rename itself refuses to replace a file, so one that
// appears at any moment is never overwritten. The caller syncs the
// directory.
func (t *Target) publish(from, final string) (string, error) {
	for {
		err := t.zone.Rename(from, final)
		if err == nil {
			return final, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("drop zone: publish %s: %w", filepath.Join(t.dir, final), err)
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
	o.onDisk = partialName(o.final, 0)
	f, err := t.zone.CreateExcl(o.onDisk)
	if err != nil {
		return fmt.Errorf("drop zone: create %s: %w", filepath.Join(t.dir, o.onDisk), err)
	}
	o.f = f
	t.cur = o
	t.enc.Reset()
	return nil
}

// append writes msgs after the committed content of the open file, makes
// them durable and records the new length in the hidden name (or publishes
// the file when it is full).
func (t *Target) append(msgs []*bridge.Message) error {
	o := t.cur
	if o.torn {
		if err := t.cutOpen(); err != nil {
			return err
		}
	}
	old := filepath.Join(t.dir, o.onDisk)
	n, commit, err := t.write(o.f, msgs)
	if err != nil && n == 0 && errors.Is(err, bridge.ErrRejected) {
		return err // a payload the format cannot hold: nothing was written
	}
	if err != nil {
		o.torn = true // cut back to committed on the next attempt
		return fmt.Errorf("drop zone: write %s: %w", old, err)
	}
	if err := o.f.Sync(); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: sync %s: %w", old, err))
		return t.failed
	}
	if o.count+len(msgs) >= t.rollCount {
		o.committed += n
		o.count += len(msgs)
		commit()
		return t.roll()
	}
	// Record the acknowledged length in the name, durably.
	next := partialName(o.final, o.committed+n)
	if err := t.zone.Rename(o.onDisk, next); err != nil {
		o.torn = true
		return fmt.Errorf("drop zone: record length of %s: %w", old, err)
	}
	o.onDisk = next
	o.committed += n
	o.count += len(msgs)
	commit()
	if err := t.zone.SyncDir("."); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: %w", err))
		return t.failed
	}
	return nil
}

// write writes the records of msgs to f and returns how many bytes it
// wrote and what to call once they are acknowledged. With format=raw the
// payloads are copied one after the other, a Body streamed (in the kernel,
// file to file, where the system can); a payload another format cannot
// hold is an error matching bridge.ErrRejected.
func (t *Target) write(f core.File, msgs []*bridge.Message) (int64, func(), error) {
	if t.format == records.Raw {
		var n int64
		for _, m := range msgs {
			k, err := m.CopyPayload(f)
			n += k
			if err != nil {
				return n, nil, err
			}
		}
		return n, func() {}, nil
	}
	payloads, ids := make([][]byte, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		payloads[i], ids[i] = m.Payload, m.ID
	}
	b, err := t.enc.Encode(payloads, ids)
	if err != nil {
		return 0, nil, err
	}
	n, err := f.Write(b.Data)
	return int64(n), b.Commit, err
}

// StreamsBodies says that with format=raw the target copies a message's
// Body itself (see bridge.BodyStreamer).
func (t *Target) StreamsBodies() bool { return t.format == records.Raw }

// ForgetsPayloads says that WriteBatch has copied every payload to the
// file, or into the encoder's output, when it returns (the encoder keeps
// only a csv header of its own strings), and keeps none
// (bridge.PayloadForgetter).
func (t *Target) ForgetsPayloads() bool { return true }

// cutOpen replaces the open file, which may hold bytes past its committed
// length, by a copy of its committed content, and appends to that from
// then on. A failure that leaves the file as it was can be retried; one
// that does not is permanent, and the next Connect finishes the cut.
func (t *Target) cutOpen() error {
	o := t.cur
	if o.f != nil {
		o.f.Close() // its writes failed already; the cut reads by name
		o.f = nil
	}
	f, err := t.cut(o.onDisk, o.final, o.committed)
	if err != nil {
		if errors.Is(err, bridge.ErrPermanent) {
			t.cur, t.failed = nil, err
		}
		return err
	}
	o.f, o.torn = f, false
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
		if o.f != nil {
			o.f.Close()
		}
		t.cur = nil
		if _, err := removeIfPresent(t.zone, o.onDisk); err != nil {
			return fmt.Errorf("drop zone: remove empty %s: %w", from, err)
		}
		return nil
	}
	if o.torn { // a write failed, and was not retried: drop its bytes
		if err := t.cutOpen(); err != nil {
			return err
		}
	}
	if err := o.f.Close(); err != nil {
		t.failed = bridge.Permanent(fmt.Errorf("drop zone: close %s: %w", from, err))
		return t.failed
	}
	t.cur = nil
	if _, err := t.publish(o.onDisk, o.final); err != nil {
		t.failed = bridge.Permanent(err) // the next Connect publishes it
		return t.failed
	}
	if err := t.zone.SyncDir("."); err != nil {
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
	} else if t.cur != nil && t.cur.f != nil {
		t.cur.f.Close()
	}
	t.lock.Release()
	t.zone.Close()
	t.lock, t.zone = nil, nil
	return err
}
