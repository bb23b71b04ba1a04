package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// model is what a workload knows at any instant about the messages it
// handed to the spool, by sequence number.
type model struct {
	sent     map[uint64]core.Message // Write was called for it
	acked    map[uint64]bool         // Write reported it durable (or, fsync=none, committed)
	consumed map[uint64]bool         // an Ack of it returned nil
	acking   map[uint64]bool         // an Ack of it is running or failed: its fate is unknown
	seen     map[uint64]bool         // delivered at least once
	next     uint64                  // the producer's NextSeq after its last Write
}

func newModel() *model {
	return &model{sent: map[uint64]core.Message{}, acked: map[uint64]bool{}, consumed: map[uint64]bool{},
		acking: map[uint64]bool{}, seen: map[uint64]bool{}}
}

func (m *model) clone() *model {
	return &model{sent: maps.Clone(m.sent), acked: maps.Clone(m.acked), consumed: maps.Clone(m.consumed),
		acking: maps.Clone(m.acking), seen: maps.Clone(m.seen), next: m.next}
}

// workload drives one producer and one consumer on the same FS from one
// goroutine, interleaving batches of writes with reads that ack or nack, so
// that its operations happen in the same order on every run with the same
// seed.
type workload struct {
	o     core.Options // the consumer gets ExitWhenEmpty
	total int
	rng   *rand.Rand
	m     *model
	p     *core.Producer
	c     *core.Consumer
	tag   string // message id prefix
}

func newWorkload(o core.Options, total int, seed int64, tag string) *workload {
	return &workload{o: o, total: total, rng: rand.New(rand.NewPCG(uint64(seed), 5)), m: newModel(), tag: tag}
}

// run writes total messages and consumes them all. It stops at the first
// error and returns it, with the step that failed.
func (w *workload) run(ctx context.Context, fsys core.FS) error {
	var err error
	if w.p, err = core.OpenProducer(fsys, w.o); err != nil {
		return fmt.Errorf("OpenProducer: %w", err)
	}
	co := w.o
	co.ExitWhenEmpty = true
	if w.c, err = core.OpenConsumer(fsys, co); err != nil {
		return fmt.Errorf("OpenConsumer: %w", err)
	}
	written := 0
	for written < w.total {
		n := min([]int{1, 1, 2, 3, 5, 8}[w.rng.IntN(6)], w.total-written)
		msgs := testMessages(w.tag, written, n)
		first := w.p.NextSeq()
		for i := range msgs {
			w.m.sent[first+uint64(i)] = msgs[i]
		}
		k, err := w.p.Write(ctx, msgs)
		for i := range k {
			w.m.acked[first+uint64(i)] = true
		}
		w.m.next = w.p.NextSeq()
		if err != nil {
			return fmt.Errorf("Write of %d from sequence %d (%d done): %w", n, first, k, err)
		}
		written += n
		if w.rng.IntN(2) == 0 {
			if err := w.consume(ctx, 1+w.rng.IntN(5)); err != nil {
				return err
			}
		}
	}
	for {
		if err := w.consume(ctx, 4); errors.Is(err, core.ErrEnd) {
			break
		} else if err != nil {
			return err
		}
	}
	if err := w.c.Close(); err != nil {
		return fmt.Errorf("Consumer.Close: %w", err)
	}
	w.c = nil
	if err := w.p.Close(); err != nil {
		return fmt.Errorf("Producer.Close: %w", err)
	}
	w.p = nil
	return nil
}

// consume reads up to limit deliveries and acks most of them, nacking a few.
// It returns core.ErrEnd when there was nothing to read.
func (w *workload) consume(ctx context.Context, limit int) error {
	ds, err := w.c.Read(ctx, limit)
	if errors.Is(err, core.ErrEnd) {
		return err
	}
	if err != nil {
		return fmt.Errorf("Read: %w", err)
	}
	for _, d := range ds {
		w.m.seen[d.Seq] = true
	}
	cut := len(ds)
	if w.rng.IntN(5) == 0 {
		cut = w.rng.IntN(len(ds) + 1)
	}
	if cut < len(ds) {
		if err := w.c.Nack(ds[cut:]...); err != nil {
			return fmt.Errorf("Nack: %w", err)
		}
	}
	for _, d := range ds[:cut] {
		w.m.acking[d.Seq] = true
	}
	if err := w.c.Ack(ds[:cut]...); err != nil {
		return fmt.Errorf("Ack: %w", err)
	}
	for _, d := range ds[:cut] {
		delete(w.m.acking, d.Seq)
		w.m.consumed[d.Seq] = true
	}
	return nil
}

// abandon closes what the workload still has open, as a process giving up
// after an error would; errors are expected and ignored.
func (w *workload) abandon() {
	if w.c != nil {
		_ = w.c.Close()
		w.c = nil
	}
	if w.p != nil {
		_ = w.p.CloseWithError(errors.New("abandoned"))
		w.p = nil
	}
}

// rules says what a reopened spool may show, compared with the model.
type rules struct {
	mayLose      bool // acknowledged messages may be missing (fsync=none power cut)
	mayTear      bool // any payload or sidecar may be torn (fsync=none power cut)
	tearUnacked  bool // payloads that were not acknowledged may be torn (atomic=false)
	mayResurrect bool // consumed messages may come back (fsync=none power cut)

	// unackedGone: a message whose Write did not acknowledge it must not
	// be delivered. True after a failed Write without a crash, which
	// undoes what it did not acknowledge.
	unackedGone bool
}

// reopenReport counts what verifyReopen saw that the rules allowed.
type reopenReport struct {
	delivered, lost, torn, tornSidecars, resurrected int
}

// reopen is one verifyReopen: what it checks against and what it found.
type reopen struct {
	ctx  context.Context
	fsys core.FS
	o    core.Options
	l    *core.Layout
	m    *model
	r    rules
	rep  reopenReport
	errs []string
	got  map[uint64]int // deliveries per sequence number
	last uint64         // the last sequence number delivered
}

func (v *reopen) bad(format string, args ...any) {
	v.errs = append(v.errs, fmt.Sprintf(format, args...))
}

// verifyReopen opens a producer and a consumer on fsys, after a failure or a
// crash described by m, drains the spool and checks it against m and r. It
// returns a description of every violation.
func verifyReopen(ctx context.Context, fsys core.FS, o core.Options, m *model, r rules) (reopenReport, []string) {
	l, _ := o.Layout()
	v := &reopen{ctx: ctx, fsys: fsys, o: o, l: l, m: m, r: r, got: map[uint64]int{}}
	// Every number that may have been seen must stay used.
	var onDisk []uint64
	_ = walkAll(fsys, func(name string) {
		if seq, _, ok := l.Parse(name); ok {
			onDisk = append(onDisk, seq)
		}
	})
	p, err := core.OpenProducer(fsys, o)
	if err != nil {
		v.bad("OpenProducer after the failure: %v", err)
		return v.rep, v.errs
	}
	defer func() { _ = p.Close() }()
	v.producerResumes(p.NextSeq(), onDisk)
	if st, err := core.Scan(context.Background(), fsys, o); err != nil {
		v.bad("Scan: %v", err)
	} else if st.Tmp != 0 || st.Orphans != 0 {
		v.bad("after recovery the spool still has %d .tmp files and %d sidecars without payload", st.Tmp, st.Orphans)
	}
	co := o
	co.ExitWhenEmpty = true
	if r.mayTear {
		co.BadSidecar = core.BadSidecarDeliver
	}
	c, err := core.OpenConsumer(fsys, co)
	if err != nil {
		v.bad("OpenConsumer after the failure: %v", err)
		return v.rep, v.errs
	}
	c.SetLogger(slog.New(slog.DiscardHandler)) // torn sidecars are expected here; do not warn about each
	defer func() { _ = c.Close() }()
	if v.drain(c) {
		v.nothingLost()
		v.worksOn(p, c)
	}
	return v.rep, v.errs
}

// producerResumes checks that the reopened producer, starting at next,
// reuses no number on disk, delivered or acknowledged before.
func (v *reopen) producerResumes(next uint64, onDisk []uint64) {
	for _, s := range onDisk {
		if s >= next {
			v.bad("the reopened producer starts at %d, but a file of %d exists", next, s)
			break
		}
	}
	for s := range v.m.seen {
		if s >= next {
			v.bad("the reopened producer starts at %d, but %d was delivered before: a number would be reused", next, s)
			break
		}
	}
	for s := range v.m.acked {
		if s >= next {
			v.bad("the reopened producer starts at %d, but %d was acknowledged before", next, s)
			break
		}
	}
}

// drain reads and acks until the spool is empty, judging each delivery. It
// reports whether the consumer worked to the end.
func (v *reopen) drain(c *core.Consumer) bool {
	for {
		rctx, cancel := context.WithTimeout(v.ctx, 20*time.Second)
		ds, err := c.Read(rctx, 8)
		cancel()
		if errors.Is(err, core.ErrEnd) {
			return true
		}
		if err != nil {
			v.bad("Read after the failure: %v", err)
			return false
		}
		for _, d := range ds {
			v.judge(d)
		}
		if err := c.Ack(ds...); err != nil {
			v.bad("Ack after the failure: %v", err)
			return false
		}
	}
}

// judge checks one delivery: once, in order, written, whole unless the
// rules allow tearing, and not back after its Ack unless they allow that.
func (v *reopen) judge(d *core.Delivery) {
	v.rep.delivered++
	if v.got[d.Seq] > 0 {
		v.bad("%s delivered twice", d.Name)
	}
	v.got[d.Seq]++
	if v.rep.delivered > 1 && d.Seq <= v.last {
		v.bad("%s (%d) delivered after %d: FIFO order broken", d.Name, d.Seq, v.last)
	}
	v.last = d.Seq
	msg, ok := v.m.sent[d.Seq]
	if !ok {
		v.bad("%s delivered, but no message was ever written with sequence %d", d.Name, d.Seq)
		return
	}
	acked := v.m.acked[d.Seq]
	if v.r.unackedGone && !acked {
		v.bad("%s (%s) delivered, but its Write failed and did not acknowledge it", d.Name, msg.ID)
	}
	mayTear := v.r.mayTear || (v.r.tearUnacked && !acked)
	if !bytes.Equal(d.Payload, msg.Payload) {
		if bytes.HasPrefix(msg.Payload, d.Payload) && mayTear {
			v.rep.torn++
		} else {
			v.bad("%s: payload of %d bytes is not the %d written for %s (torn or foreign)", d.Name, len(d.Payload), len(msg.Payload), msg.ID)
		}
		return
	}
	if v.l.Sidecars() && (d.MessageID != msg.ID || !equalMaps(d.Metadata, msg.Metadata)) {
		if mayTear {
			v.rep.tornSidecars++
		} else {
			v.bad("%s: sidecar gives id %q metadata %v, want %q %v", d.Name, d.MessageID, d.Metadata, msg.ID, msg.Metadata)
		}
	}
	if v.m.consumed[d.Seq] {
		if v.r.mayResurrect {
			v.rep.resurrected++
		} else {
			v.bad("%s (%s) came back after its Ack returned", d.Name, msg.ID)
		}
	}
}

// nothingLost checks that every acknowledged message was delivered, unless
// it was consumed before or the rules allow losing it.
func (v *reopen) nothingLost() {
	var missing []string
	for _, s := range slices.Sorted(maps.Keys(v.m.acked)) {
		if v.got[s] == 0 && !v.m.consumed[s] && !v.m.acking[s] {
			if v.r.mayLose {
				v.rep.lost++
			} else {
				missing = append(missing, fmt.Sprint(s))
			}
		}
	}
	if len(missing) > 0 {
		v.bad("acknowledged messages lost: sequence %s", strings.Join(missing, ", "))
	}
}

// worksOn checks that the reopened pair goes on: three new messages come
// through in order, and the producer closes cleanly.
func (v *reopen) worksOn(p *core.Producer, c *core.Consumer) {
	after := testMessages("after", 0, 3)
	first := p.NextSeq()
	if n, err := p.Write(v.ctx, after); err != nil || n != 3 {
		v.bad("Write after reopening: %d, %v", n, err)
		return
	}
	var ds []*core.Delivery
	for len(ds) < 3 {
		rctx, cancel := context.WithTimeout(v.ctx, 20*time.Second)
		more, err := c.Read(rctx, 3)
		cancel()
		if err != nil {
			v.bad("Read of new messages after reopening: %v", err)
			return
		}
		ds = append(ds, more...)
		_ = c.Ack(more...)
	}
	for i, d := range ds {
		if d.Seq != first+uint64(i) || !bytes.Equal(d.Payload, after[i].Payload) {
			v.bad("after reopening, new message %d came back as %s", i, d.Name)
		}
	}
	if err := p.Close(); err != nil {
		v.bad("Producer.Close after reopening: %v", err)
	}
}

// walkAll calls fn with every regular file name below the root.
func walkAll(fsys core.FS, fn func(name string)) error {
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			switch {
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case e.Type().IsRegular():
				fn(p)
			}
		}
		return nil
	}
	return walk(".")
}
