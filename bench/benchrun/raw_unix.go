//go:build linux || darwin || freebsd

package benchrun

import (
	"errors"
	"fmt"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func (t *Trial) rawArm(name, dir string, names rawNames, strategy string, side []byte) (*arm, error) {
	c := t.c
	if c.Op == OpProduce {
		p, err := newRawProducer(dir, names, c.Fsync, strategy, t.payload, side)
		if err != nil {
			return nil, err
		}
		return &arm{name: name, step: p.write, stop: p.close}, nil
	}
	a := &arm{name: name}
	a.openFill = func() (*armFill, error) {
		// The raw arm's backlog is written by the library too, then
		// drained with bare system calls.
		fsys, err := openFS(osfs.Name, dir)
		if err != nil {
			return nil, err
		}
		b, err := openBacklog(fsys.fs, spoolOptions(dir, c.Fsync, c.Layout, c.Sidecar), t.payload)
		if err != nil {
			fsys.close()
			return nil, err
		}
		ready := func() error {
			rc, err := newRawConsumer(dir, names, c.Fsync, c.PayloadBytes)
			if err != nil {
				return err
			}
			rc.hold = strategy == RawHeld
			a.step, a.stop = rc.consume, rc.close
			return nil
		}
		closeAll := func() error { return errors.Join(b.close(), fsys.close()) }
		return &armFill{write: b.write, close: closeAll, ready: ready}, nil
	}
	return a, nil
}

// rawDir is an open directory of the raw baseline.
type rawDir struct {
	name string
	fd   int
}

// rawProducer writes chunks with bare system calls: openat(O_EXCL) of a
// .tmp name, write, optional fsync, close, renameat2(RENAME_NOREPLACE) and
// optional directory fsync, sidecar first as the protocol orders it.
type rawProducer struct {
	root     string
	rootfd   int
	names    rawNames
	fsync    string // none, batch, chunk
	strategy string // for batch
	next     uint64
	dirs     map[string]int // open shard directories
	dirOrder []string
	sidecar  []byte
	payload  []byte
	fds      []int
}

func newRawProducer(root string, names rawNames, fsync, strategy string, payload, sidecar []byte) (*rawProducer, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	return &rawProducer{root: root, rootfd: fd, names: names, fsync: fsync, strategy: strategy,
		dirs: map[string]int{".": fd}, payload: payload, sidecar: sidecar}, nil
}

func (p *rawProducer) close() error {
	for name, fd := range p.dirs {
		if name != "." {
			unix.Close(fd)
		}
	}
	p.dirs = nil
	return unix.Close(p.rootfd)
}

// dir returns a descriptor of the leaf directory dir, making it (and
// syncing it with its parent, when syncing) the first time.
func (p *rawProducer) dir(dir string) (int, error) {
	if fd, ok := p.dirs[dir]; ok {
		return fd, nil
	}
	parent := p.rootfd
	cur := ""
	for _, part := range []string{dir[:3], dir[4:]} {
		if cur != "" {
			cur += "/"
		}
		cur += part
		if fd, ok := p.dirs[cur]; ok {
			parent = fd
			continue
		}
		made := true
		if err := unix.Mkdirat(p.rootfd, cur, 0o700); err != nil {
			if err != unix.EEXIST {
				return -1, fmt.Errorf("mkdir %s: %w", cur, err)
			}
			made = false
		}
		fd, err := unix.Openat(p.rootfd, cur, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", cur, err)
		}
		if made && p.fsync != "none" {
			if err := rawFsync(fd); err != nil {
				return -1, err
			}
			if err := rawFsync(parent); err != nil {
				return -1, err
			}
		}
		p.dirs[cur] = fd
		p.dirOrder = append(p.dirOrder, cur)
		parent = fd
	}
	// Keep only the directories in use, as the library does.
	for len(p.dirOrder) > 8 {
		old := p.dirOrder[0]
		p.dirOrder = p.dirOrder[1:]
		unix.Close(p.dirs[old])
		delete(p.dirs, old)
	}
	return parent, nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// writeTmp creates dirfd/name exclusively and writes data. It syncs and
// closes the file unless keep is set, in which case it returns the open
// descriptor.
func (p *rawProducer) writeTmp(dirfd int, name string, data []byte, sync, keep bool) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("create %s: %w", name, err)
	}
	if err := writeAll(fd, data); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("write %s: %w", name, err)
	}
	if sync {
		if err := rawFsync(fd); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if keep {
		return fd, nil
	}
	return -1, unix.Close(fd)
}

type rawChunk struct {
	dirfd int
	base  string
}

// write stores n chunks and returns once they are as durable as the policy
// asks.
func (p *rawProducer) write(n int) error {
	if p.fsync == "chunk" {
		for range n {
			if err := p.writeBatch(1, RawPerFile); err != nil {
				return err
			}
		}
		return nil
	}
	return p.writeBatch(n, p.strategy)
}

func (p *rawProducer) writeBatch(n int, strategy string) error {
	syncing := p.fsync != "none"
	keep := syncing && strategy == RawConcurrent
	chunks, dirfds, err := p.writeTmps(n, syncing && strategy == RawPerFile, keep)
	if err != nil {
		return err
	}
	if keep {
		if err := fsyncConcurrently(p.fds); err != nil {
			return err
		}
	}
	if syncing && strategy == RawSyncfs {
		if err := rawSyncfs(p.rootfd); err != nil {
			return err
		}
	}
	if p.names.sidecar {
		if err := renameChunks(chunks, ".json"); err != nil {
			return err
		}
		if err := fsyncDirs(syncing, dirfds); err != nil {
			return err
		}
	}
	if err := renameChunks(chunks, ".bin"); err != nil {
		return err
	}
	return fsyncDirs(syncing, dirfds)
}

// writeTmps writes the .tmp files of the next n chunks, fsyncing each when
// perFile, keeping their descriptors open in p.fds when keep. It returns
// the chunks and the directories they are in, in order.
func (p *rawProducer) writeTmps(n int, perFile, keep bool) ([]rawChunk, []int, error) {
	chunks := make([]rawChunk, n)
	p.fds = p.fds[:0]
	var dirfds []int
	for i := range chunks {
		seq := p.next
		p.next++
		dir, base := p.names.split(seq)
		dirfd := p.rootfd
		if dir != "." {
			var err error
			if dirfd, err = p.dir(dir); err != nil {
				return nil, nil, err
			}
		}
		if len(dirfds) == 0 || dirfds[len(dirfds)-1] != dirfd {
			dirfds = append(dirfds, dirfd)
		}
		chunks[i] = rawChunk{dirfd: dirfd, base: base}
		if p.names.sidecar {
			if err := p.writeKept(dirfd, base+".json.tmp", p.sidecar, perFile, keep); err != nil {
				return nil, nil, err
			}
		}
		if err := p.writeKept(dirfd, base+".bin.tmp", p.payload, perFile, keep); err != nil {
			return nil, nil, err
		}
	}
	return chunks, dirfds, nil
}

// writeKept is writeTmp that keeps the descriptor in p.fds when keep.
func (p *rawProducer) writeKept(dirfd int, name string, data []byte, perFile, keep bool) error {
	fd, err := p.writeTmp(dirfd, name, data, perFile, keep)
	if err == nil && keep {
		p.fds = append(p.fds, fd)
	}
	return err
}

// renameChunks renames each chunk's base+ext+".tmp" to base+ext, never
// replacing.
func renameChunks(chunks []rawChunk, ext string) error {
	for _, c := range chunks {
		if err := rawRename(c.dirfd, c.base+ext+".tmp", c.base+ext); err != nil {
			return fmt.Errorf("rename %s: %w", c.base, err)
		}
	}
	return nil
}

// fsyncDirs fsyncs each directory when syncing.
func fsyncDirs(syncing bool, dirfds []int) error {
	if !syncing {
		return nil
	}
	for _, fd := range dirfds {
		if err := rawFsync(fd); err != nil {
			return err
		}
	}
	return nil
}

// fsyncConcurrently fsyncs and closes every descriptor, many at a time, so
// that the filesystem can group the flushes.
func fsyncConcurrently(fds []int) error {
	workers := min(len(fds), 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for fd := range next {
				err := rawFsync(fd)
				if cerr := unix.Close(fd); err == nil {
					err = cerr
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, fd := range fds {
		next <- fd
	}
	close(next)
	wg.Wait()
	return first
}

// rawConsumer drains chunks with bare system calls: a listing of the leaf
// directory, then for each payload in name order openat, read, close (and
// the same for its sidecar), then unlinkat both in the protocol's order
// with, per policy, an fsync of the directory between (see remove). With
// hold (RawHeld) the payloads of a batch each go to a buffer of their own,
// taken from heldBuffers and given back once the batch is removed, as the
// spool arm takes and gives back its lent buffers.
type rawConsumer struct {
	rootfd  int
	names   rawNames
	fsync   string
	dir     string // current leaf directory
	dirfd   int
	pending []string // payload base names left in dir
	buf     []byte   // every payload without hold, and every sidecar
	hold    bool
	payload int      // payload bytes: the size of a held buffer
	held    [][]byte // with hold: payload i of the batch being read goes to held[i]
	dirBuf  []byte
}

func newRawConsumer(root string, names rawNames, fsync string, payloadBytes int) (*rawConsumer, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	return &rawConsumer{rootfd: fd, names: names, fsync: fsync, dir: ".", dirfd: fd,
		buf: make([]byte, payloadBytes+4096), payload: payloadBytes, dirBuf: make([]byte, 32<<10)}, nil
}

func (c *rawConsumer) close() error {
	c.giveBack()
	if c.dirfd != c.rootfd {
		unix.Close(c.dirfd)
	}
	return unix.Close(c.rootfd)
}

// list returns the sorted entry names of the directory fd.
func (c *rawConsumer) list(fd int) ([]string, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, err
	}
	names, err := rawReadNames(fd, c.dirBuf)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// refill lists the next leaf directory that has payloads.
func (c *rawConsumer) refill() error {
	if !c.names.sharded {
		names, err := c.list(c.rootfd)
		if err != nil {
			return err
		}
		c.pending = payloadBases(names)
		return nil
	}
	// Leave the drained leaf, remove it, and find the next one.
	if c.dirfd != c.rootfd {
		unix.Close(c.dirfd)
		c.dirfd = c.rootfd
		_ = unix.Unlinkat(c.rootfd, c.dir, unix.AT_REMOVEDIR)
	}
	tops, err := c.list(c.rootfd)
	if err != nil {
		return err
	}
	for _, top := range tops {
		if len(top) != 3 {
			continue
		}
		tfd, err := unix.Openat(c.rootfd, top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		mids, err := c.list(tfd)
		unix.Close(tfd)
		if err != nil {
			return err
		}
		for _, mid := range mids {
			leaf := top + "/" + mid
			lfd, err := unix.Openat(c.rootfd, leaf, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			names, err := c.list(lfd)
			if err != nil {
				unix.Close(lfd)
				return err
			}
			if p := payloadBases(names); len(p) > 0 {
				c.dir, c.dirfd, c.pending = leaf, lfd, p
				return nil
			}
			unix.Close(lfd)
		}
	}
	return nil
}

func payloadBases(names []string) []string {
	var out []string
	for _, n := range names {
		if len(n) > 4 && n[len(n)-4:] == ".bin" {
			out = append(out, n[:len(n)-4])
		}
	}
	return out
}

// heldBuffers lends the buffers of every held raw arm of the process, kept
// from round to round as the spool arm's lentBuffers are: both arms pay
// for making their buffers in a case's first round only.
var heldBuffers = core.NewBufferPool(1 << 62)

// giveBack returns the last batch's held buffers, its chunks removed.
func (c *rawConsumer) giveBack() {
	for i, b := range c.held {
		heldBuffers.Put(b)
		c.held[i] = nil
	}
	c.held = c.held[:0]
}

// payloadBuf returns the buffer for payload i of a batch.
func (c *rawConsumer) payloadBuf(i int) []byte {
	if !c.hold {
		return c.buf
	}
	for len(c.held) <= i {
		c.held = append(c.held, heldBuffers.Get(c.payload))
	}
	return c.held[i]
}

// readFile reads name into buf, from its start each time, until a read
// finds the end of the file.
func (c *rawConsumer) readFile(name string, buf []byte) error {
	fd, err := unix.Openat(c.dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return err
		}
		if n == 0 {
			break
		}
	}
	return unix.Close(fd)
}

// consume reads and deletes n chunks.
func (c *rawConsumer) consume(n int) error {
	for n > 0 {
		if len(c.pending) == 0 {
			if err := c.refill(); err != nil {
				return err
			}
			if len(c.pending) == 0 {
				return fmt.Errorf("raw consumer: backlog empty with %d chunk(s) to go", n)
			}
		}
		take := c.pending[:min(n, len(c.pending))]
		c.pending = c.pending[len(take):]
		n -= len(take)
		c.giveBack()
		for i, base := range take {
			if err := c.readFile(base+".bin", c.payloadBuf(i)); err != nil {
				return err
			}
			if c.names.sidecar {
				if err := c.readFile(base+".json", c.buf); err != nil {
					return err
				}
			}
		}
		if err := c.remove(take); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the chunks in take in the protocol's order: payloads
// first, their removal made durable (fsync=chunk: per chunk, batch: once)
// before any sidecar is deleted, so that a power cut never leaves a payload
// without its sidecar; the sidecars' removal is not synced.
func (c *rawConsumer) remove(take []string) error {
	for _, base := range take {
		if err := unix.Unlinkat(c.dirfd, base+".bin", 0); err != nil {
			return err
		}
		if c.fsync == "chunk" {
			if err := rawFsync(c.dirfd); err != nil {
				return err
			}
		}
		if c.names.sidecar && c.fsync != "batch" {
			if err := unix.Unlinkat(c.dirfd, base+".json", 0); err != nil {
				return err
			}
		}
	}
	if c.fsync != "batch" {
		return nil
	}
	if err := rawFsync(c.dirfd); err != nil {
		return err
	}
	for _, base := range take {
		if c.names.sidecar {
			if err := unix.Unlinkat(c.dirfd, base+".json", 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawScale fills a backlog of n chunks in dir with the raw producer, in
// batches, then drains it with the raw consumer, and returns the cost per
// message of each: the raw loop's own growth with the backlog.
func rawScale(dir string, n, batch int, fsync string, sharded bool, payload, side []byte) (rawScaleCost, error) {
	var rc rawScaleCost
	names := rawNames{sharded: sharded, sidecar: side != nil}
	p, err := newRawProducer(dir, names, fsync, RawPerFile, payload, side)
	if err != nil {
		return rc, err
	}
	start, cpu := time.Now(), cpuNow()
	for left := n; left > 0 && err == nil; left -= min(left, batch) {
		err = p.write(min(left, batch))
	}
	rc.produceUs, rc.produceCPUUs = perMsg(time.Since(start), n), perMsg(cpuNow()-cpu, n)
	if cerr := p.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rc, err
	}
	c, err := newRawConsumer(dir, names, fsync, len(payload))
	if err != nil {
		return rc, err
	}
	defer c.close()
	start, cpu = time.Now(), cpuNow()
	for left := n; left > 0 && err == nil; left -= min(left, batch) {
		err = c.consume(min(left, batch))
	}
	rc.drainUs, rc.drainCPUUs = perMsg(time.Since(start), n), perMsg(cpuNow()-cpu, n)
	return rc, err
}

// rawListMs times one streamed listing of dir that only counts its
// entries, as `ls -f | wc -l` does: the floor of any listing.
func rawListMs(dir string) (float64, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 32<<10)
	start := time.Now()
	_, err = rawCountNames(fd, buf)
	return msOf(time.Since(start)), err
}

// cpuNow returns the CPU time (user and system) this process has used:
// on a machine shared with other work, the cost of a phase is told better
// by it than by the wall clock.
func cpuNow() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
