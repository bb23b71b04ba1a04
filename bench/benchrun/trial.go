package benchrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// Case is one point of the benchmark matrix.
type Case struct {
	Op           string // OpProduce or OpConsume
	Fsync        string // none, batch or chunk
	BatchSize    int    // messages per Producer.Write or Consumer.Read+Ack
	PayloadBytes int
	Sidecar      bool
	Layout       string // LayoutFlat or LayoutSharded
	Backend      string // osfs.Name or memfs.Name
	// Bounded adds an arm (ArmBounded, before ArmSpool) that produces with
	// every spool bound set high enough never to be reached, to measure
	// what the accounting costs. Produce cases only.
	Bounded bool
	// Read is how a consume case reads payloads: ReadLent (into buffers the
	// caller lends, Consumer.LendPayloadBuffers), ReadBytes (a new
	// Delivery.Payload per message) or ReadStream (above 16 KiB left on
	// disk, then each read into one buffer with Delivery.ReadInto). Empty
	// for produce cases.
	Read string
	// RawHeld adds a raw arm (RawHeld, "raw/held") that keeps each payload
	// of a batch in memory until the batch is removed, next to the plain
	// one that reads them all into one buffer ("raw/one-buffer"). The
	// ratio is still to the faster of the two. Consume cases only.
	RawHeld bool
}

// Name returns the case as benchmark name elements, for example
// "fsync=chunk/batch=16/size=1KiB/sidecar=on/layout=flat/backend=os".
func (c Case) Name() string {
	side := "off"
	if c.Sidecar {
		side = "on"
	}
	name := fmt.Sprintf("fsync=%s/batch=%d/size=%s/sidecar=%s/layout=%s/backend=%s",
		c.Fsync, c.BatchSize, FormatSize(int64(c.PayloadBytes)), side, c.Layout, c.Backend)
	if c.Bounded {
		name += "/bound=on"
	}
	if c.Read != "" {
		name += "/read=" + c.Read
	}
	return name
}

func (c Case) validate() error {
	switch {
	case c.Op != OpProduce && c.Op != OpConsume:
		return fmt.Errorf("op %q: must be %s or %s", c.Op, OpProduce, OpConsume)
	case !core.FsyncPolicy(c.Fsync).Valid():
		return fmt.Errorf("fsync %q: must be none, batch or chunk", c.Fsync)
	case c.BatchSize < 1:
		return fmt.Errorf("batch size %d: must be at least 1", c.BatchSize)
	case c.PayloadBytes < 0:
		return fmt.Errorf("payload size %d: must not be negative", c.PayloadBytes)
	case c.Layout != LayoutFlat && c.Layout != LayoutSharded:
		return fmt.Errorf("layout %q: must be %s or %s", c.Layout, LayoutFlat, LayoutSharded)
	case c.Backend != osfs.Name && c.Backend != memfs.Name:
		return fmt.Errorf("backend %q: must be %s or %s", c.Backend, osfs.Name, memfs.Name)
	case c.Bounded && c.Op != OpProduce:
		return fmt.Errorf("bounded: only produce cases have a bounded arm")
	case c.Op == OpConsume && c.Read != ReadLent && c.Read != ReadBytes && c.Read != ReadStream:
		return fmt.Errorf("read %q: must be %s, %s or %s", c.Read, ReadLent, ReadBytes, ReadStream)
	case c.Op == OpProduce && c.Read != "":
		return fmt.Errorf("read %q: only consume cases read", c.Read)
	case c.Op == OpProduce && c.RawHeld:
		return fmt.Errorf("raw held: only consume cases hold payloads")
	}
	return nil
}

// ArmSpool is the name of the arm that runs the library.
const ArmSpool = "spool"

// ArmBounded is the name of the arm that produces into a bounded spool.
const ArmBounded = "spool/bounded"

// RawArmPrefix starts the name of every raw-baseline arm.
const RawArmPrefix = "raw"

// Trial runs one case side by side with its raw baselines: every Step runs
// one batch on each arm in turn, so that a machine that slows down or speeds
// up affects all of them alike. A Trial works in a
// directory of its own, removed by Close.
type Trial struct {
	c       Case
	dir     string
	arms    []*arm
	payload []byte
	closed  bool
	turns   *turns          // the arms' order from step to step (stepOrder)
	order   []int           // the arms' order in the current step
	cpu     []time.Duration // [arm] CPU time of the process during its steps
}

// turns is where a sequence of steps stands: how many have run, which sets
// the arms' order in the next (stepOrder).
type turns struct {
	steps int
}

// roundTurns returns the turns round r (from 0) of a case starts from,
// so that round r's first step runs in row r+1 of the arms' order
// (stepOrder) and each arm runs first, and last, in as many rounds, one
// block of rounds at a time. A round is a fresh trial of whole blocks of
// steps where the count allows (autoCount), so turns that ran on from
// round to round began every round in the same row: with two arms the same
// arm ran first and last in every round, and a cost that falls on a
// trial's first or last step fell on that arm alone. Turns started afresh
// in each trial did the same, even for rounds of one step (a disk run's
// --count 128 at batch 256).
func roundTurns(r int) *turns { return &turns{steps: r} }

type arm struct {
	name     string
	prep     func(n int) // untimed, before step
	step     func(n int) error
	openFill func() (*armFill, error) // consume arms: starts writing the backlog
	stop     func() error
}

// armFill writes the backlog of a consume arm in parts, which Trial.Fill
// interleaves with the other arms' parts, then readies the arm to drain it.
type armFill struct {
	write func(n int) error // appends n messages to the backlog
	close func() error      // makes the backlog durable; always called
	ready func() error      // sets the arm's step, once the backlog is closed
}

// NewTrial prepares c in a fresh directory below dir (which must exist and
// is where the raw baseline and, for backend os, the spool live).
func NewTrial(dir string, c Case) (*Trial, error) { return newTrial(dir, c, &turns{}) }

// newTrial is NewTrial for a trial whose steps take turns from start.
func newTrial(dir string, c Case, start *turns) (t *Trial, err error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(dir, "mqb-bench-")
	if err != nil {
		return nil, err
	}
	t = &Trial{c: c, dir: work, payload: makePayload(c.PayloadBytes), turns: start}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	names := rawNames{sharded: c.Layout == LayoutSharded, sidecar: c.Sidecar}
	var side []byte
	if c.Sidecar {
		side = sampleSidecar()
	}
	strategies := []string{RawPerFile}
	switch {
	case c.Op == OpProduce && c.Fsync == string(core.FsyncBatch):
		strategies = rawBatchStrategies
	case c.Op == OpConsume && c.RawHeld:
		strategies = []string{RawOneBuffer, RawHeld}
	}
	dirNames := make([]string, 0, len(strategies)+2)
	for i := range strategies {
		dirNames = append(dirNames, fmt.Sprintf("raw%d", i))
	}
	if c.Bounded {
		dirNames = append(dirNames, "bounded")
	}
	dirs, _, err := t.makeArmDirs(append(dirNames, "spool"))
	if err != nil {
		return nil, err
	}
	for i, s := range strategies {
		name := RawArmPrefix
		if len(strategies) > 1 {
			name += "/" + s
		}
		a, err := t.rawArm(name, dirs[i], names, s, side)
		if err != nil {
			return nil, err
		}
		t.arms = append(t.arms, a)
	}
	if c.Bounded {
		a, err := t.boundedArm(dirs[len(strategies)])
		if err != nil {
			return nil, err
		}
		t.arms = append(t.arms, a)
	}
	a, err := t.spoolArm(dirs[len(dirs)-1])
	if err != nil {
		return nil, err
	}
	t.arms = append(t.arms, a)
	return t, nil
}

// makeArmDirs makes the arms' directories, named in the order of the
// arms, in the order in which the arms run the trial's first step, and
// returns their paths in the order of the arms and the order it made them
// in. Where the files of an arm go can depend on when its directory was
// made. On ext4, once the block group of the trial's directory is full,
// each arm's files go on into a group found from its directory's inode
// number, so the directory made last spills one group further; and
// without a journal, creating files in a group where many were deleted in
// the last minute costs up to a millisecond each (recently_deleted, see
// spreadTrials). In 24 trials in a row of a 64 KiB flat produce case on
// the development machine's disk, with the spool's directory made last,
// seven ran into such groups: in two both arms paid, and in five the
// spool alone, taking four times as long as in the others, with 5,000 to
// 5,500 profile samples in recently_deleted under its creates against
// under 10 under the raw arm's. With it made first, the raw arm alone
// paid in five trials and the spool alone in three. Made in the round's
// turn, each arm is made last in as many rounds.
func (t *Trial) makeArmDirs(names []string) (dirs []string, made []int, err error) {
	made = make([]int, len(names))
	(&turns{steps: t.turns.steps + 1}).stepOrder(made) // the first step's order
	dirs = make([]string, len(names))
	for _, i := range made {
		dirs[i] = filepath.Join(t.dir, names[i])
		if err := os.Mkdir(dirs[i], 0o700); err != nil {
			return nil, nil, err
		}
	}
	return dirs, made, nil
}

// boundedArm produces with max_messages, max_bytes and min_free_bytes all
// set but never reached: the cost of the account and of statfs.
func (t *Trial) boundedArm(dir string) (*arm, error) {
	c := t.c
	o := spoolOptions(dir, c.Fsync, c.Layout, c.Sidecar)
	o.Bounds = core.Bounds{MaxMessages: 1 << 40, MaxBytes: 1 << 60, WhenFull: core.WhenFullFail}
	if c.Backend == osfs.Name {
		o.Bounds.MinFreeBytes = 1
	}
	p, err := newSpoolProducer(c.Backend, dir, o, t.payload)
	if err != nil {
		return nil, err
	}
	return &arm{name: ArmBounded, prep: p.prepare, step: func(int) error { return p.write() }, stop: p.close}, nil
}

func (t *Trial) spoolArm(dir string) (*arm, error) {
	c := t.c
	o := spoolOptions(dir, c.Fsync, c.Layout, c.Sidecar)
	if c.Op == OpProduce {
		p, err := newSpoolProducer(c.Backend, dir, o, t.payload)
		if err != nil {
			return nil, err
		}
		return &arm{name: ArmSpool, prep: p.prepare, step: func(int) error { return p.write() }, stop: p.close}, nil
	}
	fsys, err := openFS(c.Backend, dir)
	if err != nil {
		return nil, err
	}
	a := &arm{name: ArmSpool, stop: fsys.close}
	a.openFill = func() (*armFill, error) {
		b, err := openBacklog(fsys.fs, o, t.payload)
		if err != nil {
			return nil, err
		}
		ready := func() error {
			sc, err := newSpoolConsumer(fsys, o, c.Read, c.PayloadBytes)
			if err != nil {
				return err
			}
			a.step, a.stop = sc.consume, sc.close
			return nil
		}
		return &armFill{write: b.write, close: b.close, ready: ready}, nil
	}
	return a, nil
}

// Arms returns the names of the arms in the order Step runs them: the raw
// baselines ("raw", or "raw/<strategy>" for fsync=batch produce cases and
// for consume cases with RawHeld), then "spool".
func (t *Trial) Arms() []string {
	out := make([]string, len(t.arms))
	for i, a := range t.arms {
		out[i] = a.name
	}
	return out
}

// Dir returns the trial's own directory.
func (t *Trial) Dir() string { return t.dir }

// fillPart is how many messages an arm's backlog grows by before the next
// arm's does.
const fillPart = 256

// Fill puts a backlog of n messages in front of every arm of a consume
// case, made durable before it returns. It is not timed and must be called
// once, before Step. The arms' backlogs are written in turns of fillPart
// messages, each turn starting with the next arm: a backlog written
// whole before the others drained a quarter slower at 1 MiB payloads on
// tmpfs, whichever arm it was, so no arm may have its files written first.
func (t *Trial) Fill(n int) error {
	if t.c.Op != OpConsume {
		return nil
	}
	fills := make([]*armFill, 0, len(t.arms))
	err := t.writeBacklogs(n, &fills)
	for _, f := range fills {
		err = errors.Join(err, f.close())
	}
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	for i, f := range fills {
		if err := f.ready(); err != nil {
			return fmt.Errorf("fill %s: %w", t.arms[i].name, err)
		}
	}
	return nil
}

// writeBacklogs opens every arm's backlog into fills and writes n messages
// to each, in turns.
func (t *Trial) writeBacklogs(n int, fills *[]*armFill) error {
	for _, a := range t.arms {
		f, err := a.openFill()
		if err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		*fills = append(*fills, f)
	}
	for turn := 0; n > 0; turn++ {
		k := min(n, fillPart)
		for j := range *fills {
			i := (j + turn) % len(*fills)
			if err := (*fills)[i].write(k); err != nil {
				return fmt.Errorf("%s: %w", t.arms[i].name, err)
			}
		}
		n -= k
	}
	return nil
}

// Step produces or consumes n messages on each arm in turn, in the order
// stepOrder gives, and returns how long each took, in the order of Arms.
func (t *Trial) Step(n int, out []time.Duration) ([]time.Duration, error) {
	if cap(out) < len(t.arms) {
		out = make([]time.Duration, len(t.arms))
	}
	out = out[:len(t.arms)]
	if len(t.cpu) < len(t.arms) {
		t.cpu = make([]time.Duration, len(t.arms))
	}
	t.turns.steps++
	t.order = slices.Grow(t.order[:0], len(t.arms))[:len(t.arms)]
	t.turns.stepOrder(t.order)
	for _, i := range t.order {
		a := t.arms[i]
		if a.step == nil {
			return nil, errors.New("benchrun: Fill must be called before Step in a consume case")
		}
		if a.prep != nil {
			a.prep(n)
		}
		cpu := cpuNow() // outside the timed span: a system call of its own
		start := time.Now()
		err := a.step(n)
		d := time.Since(start)
		t.cpu[i] += cpuNow() - cpu
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.name, err)
		}
		out[i] = d
	}
	return out, nil
}

// Warm runs one step of n messages through every arm of a consume case,
// untimed and outside the arms' turns and CPU times, in the order the next
// timed step will run them; Fill must have put n messages beyond the timed
// ones in each backlog. Memory an arm has not touched for minutes can cost
// it again. bench/coldmem measures it: on this virtual machine 2 to 3 µs
// a page after one to five minutes, against 0.02 µs for a page in use; a
// lent drain of 1 MiB payloads at batch 256 that came minutes after the
// last one ran at 0.80 to 0.89 of the raw loop, for 1.68 times its CPU,
// against 1.03 alone. A produce case is not warmed: an untimed batch of
// 1 MiB payloads written without fsync left dirty pages that the disk's
// writeback made the next arm pay for, and the produce cells of one disk
// run fell from about 1.0 to 0.51.
func (t *Trial) Warm(n int) error {
	if t.c.Op != OpConsume {
		return nil
	}
	order := make([]int, len(t.arms))
	(&turns{steps: t.turns.steps + 1}).stepOrder(order) // exactly the next order
	for _, i := range order {
		a := t.arms[i]
		if a.step == nil {
			return errors.New("benchrun: Fill must be called before Warm in a consume case")
		}
		if a.prep != nil {
			a.prep(n)
		}
		if err := a.step(n); err != nil {
			return fmt.Errorf("%s: warm-up: %w", a.name, err)
		}
	}
	return nil
}

// touchPages touches as much fresh memory as count messages will take on
// every arm of a produce trial, before its steps (touchMemory says why). A
// consume trial writes its backlog before its steps and reads into
// buffers it reuses, so it has nothing to touch.
func (t *Trial) touchPages(count int) error {
	if t.c.Op != OpProduce {
		return nil
	}
	return touchMemory(t.pageBytes(count))
}

// pageBytes returns the memory count messages take on every arm once
// written: whole pages of page cache or tmpfs for each payload and sidecar.
func (t *Trial) pageBytes(count int) int64 {
	page := int64(os.Getpagesize())
	perMsg := (int64(t.c.PayloadBytes) + page - 1) / page * page
	if t.c.Sidecar {
		perMsg += page
	}
	return perMsg * int64(count) * int64(len(t.arms))
}

// CPU returns, in the order of Arms, the CPU time (user and system, every
// thread of the process) spent during each arm's steps so far; zeros where
// it is not measured. An arm that reads on several threads can take less
// time than another and more CPU.
func (t *Trial) CPU() []time.Duration { return t.cpu }

// stepOrder sets order to the order in which the arms run in step
// t.steps. Two things about an arm's turn change what it measures. The arm
// just before it can leave the machine slower (threads still spinning,
// dirty pages to flush, its data filling the CPU cache: the raw arm after
// the spool ran a quarter slower than its twin at 1 MiB). And so can its
// place in the step: on the disk, producing 1 MiB payloads in batches of
// 256 with fsync=batch, the spool made 830 messages a second in the round
// in which it ran first in both steps and 495 in one in which it ran last
// in both. So the steps follow a Williams design: in every blockSteps(n)
// steps in a row, each arm runs once in each place (twice when n is odd),
// and right after each other arm as often, within the steps. Two arms take
// turns: B A, A B, B A... The one pair not balanced is across the steps'
// boundaries, the last arm of a step and the first of the next.
func (t *turns) stepOrder(order []int) {
	n := len(order)
	row := t.steps % blockSteps(n)
	for j := range order {
		if row < n {
			order[j] = (williamsBase(n, j) + row) % n
		} else { // odd n: the rows again, reversed
			order[j] = (williamsBase(n, n-1-j) + row - n) % n
		}
	}
}

// blockSteps returns the steps over which stepOrder balances n arms: n
// when n is even, 2n when it is odd.
func blockSteps(n int) int {
	if n%2 == 1 {
		return 2 * n
	}
	return n
}

// williamsBase returns place j of the first row of a Williams square of n:
// 0, 1, n-1, 2, n-2, 3... Row r adds r to each, modulo n.
func williamsBase(n, j int) int {
	switch {
	case j == 0:
		return 0
	case j%2 == 1:
		return (j + 1) / 2
	default:
		return n - j/2
	}
}

// Close stops every arm and removes the trial's directory, then flushes the
// filesystem so that the next trial does not pay for this one's writes.
func (t *Trial) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for _, a := range t.arms {
		if a.stop != nil {
			errs = append(errs, a.stop())
		}
	}
	t.arms = nil
	errs = append(errs, os.RemoveAll(t.dir), syncfsPath(filepath.Dir(t.dir)))
	return errors.Join(errs...)
}

// makePayload returns n bytes that do not compress to nothing.
func makePayload(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// FormatSize writes a byte count in binary units: a whole number of a unit
// the way the size flags take it (100B, 1KiB, 64KiB, 1MiB), anything else
// with one decimal in the largest unit it reaches (1.5KiB, 12.3MiB). It is
// the one byte formatter of the mqb command (bench tables, spool stat).
func FormatSize(n int64) string {
	const units = "KMGTPE"
	if n < 1<<10 {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(1<<10), 0
	for m := n >> 10; m >= 1<<10 && exp < len(units)-1; m >>= 10 {
		div <<= 10
		exp++
	}
	if n%div == 0 {
		return fmt.Sprintf("%d%ciB", n/div, units[exp])
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), units[exp])
}

// ParseSize reads a byte count: a number with an optional unit B, KiB, MiB,
// GiB (K, M, G and KB, MB, GB are taken as the same binary units).
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (100B, 1KiB, 64KiB, 1MiB)", s)
	}
	var n int
	if _, err := fmt.Sscan(t[:i], &n); err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	mult := 0
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
		mult = 1
	case "k", "kb", "kib":
		mult = 1 << 10
	case "m", "mb", "mib":
		mult = 1 << 20
	case "g", "gb", "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("size %q: unknown unit (use B, KiB, MiB or GiB)", s)
	}
	if n > (1<<31)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}
