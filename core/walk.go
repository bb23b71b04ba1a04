package core

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
)

// checkEvery is how many directory entries a walk handles between two
// looks at its context, so that cancelling one over a large spool stops it
// within milliseconds.
const checkEvery = 1024

// cancelled returns ctx's error every checkEvery calls (i counts them).
func cancelled(ctx context.Context, i int) error {
	if i%checkEvery != 0 {
		return nil
	}
	return ctx.Err()
}

// Stats summarizes the chunks in a spool.
type Stats struct {
	Chunks     int    // committed payloads
	Bytes      int64  // their payload bytes
	MetaBytes  int64  // their sidecars' bytes
	Oldest     string // name of the first payload, "" when empty
	Newest     string // name of the last payload
	OldestSeq  uint64
	NewestSeq  uint64
	Tmp        int // .tmp files (writes in progress or leftovers)
	Orphans    int // sidecars without a payload
	ShardDirs  int // shard directories seen
	Unexpected int // regular files in leaf directories that match nothing
}

// Scan walks the whole spool and counts what it holds, without changing
// anything. Where the FS streams listings with sizes (DirInfoScanner) it
// holds counts, not the listing: a spool of millions of chunks costs it
// little memory. It stops with ctx's error once ctx is done.
func Scan(ctx context.Context, fsys FS, o Options) (*Stats, error) {
	return scan(ctx, fsys, o, true, nil)
}

// Count is Scan without the byte counts: Bytes and MetaBytes stay 0, and
// where the FS streams listings with types (DirScanner) no file is
// stat-ed, so counting a backlog costs its listings alone.
func Count(ctx context.Context, fsys FS, o Options) (*Stats, error) {
	return scan(ctx, fsys, o, false, nil)
}

// CountEach is Count, also calling visit with the sequence number of each
// payload it finds, a leaf directory at a time, in no particular order.
func CountEach(ctx context.Context, fsys FS, o Options, visit func(seq uint64)) (*Stats, error) {
	return scan(ctx, fsys, o, false, visit)
}

// scan is Scan, with the byte counts when sizes is set, calling visit (when
// not nil) with each payload's sequence number.
func scan(ctx context.Context, fsys FS, o Options, sizes bool, visit func(seq uint64)) (*Stats, error) {
	l, err := o.Layout()
	if err != nil {
		return nil, err
	}
	st := &Stats{}
	err = walkLeafDirs(ctx, fsys, l, func(dir string) error {
		if dir != "." {
			st.ShardDirs++
		}
		var payloads, sidecars SeqSet
		err := listInfo(ctx, fsys, dir, sizes, func(name string, typ fs.FileMode, size func() int64) {
			st.entry(l, dir, name, typ, size, &payloads, &sidecars)
		})
		st.Orphans += sidecars.Without(payloads)
		if visit != nil {
			payloads.Each(visit)
		}
		return err
	})
	return st, err
}

// entry counts one entry of the leaf directory dir.
func (st *Stats) entry(l *Layout, dir, name string, typ fs.FileMode, size func() int64, payloads, sidecars *SeqSet) {
	if !typ.IsRegular() {
		return
	}
	seq, kind, ok := l.ParseLeaf(dir, name)
	switch {
	case !ok:
		if dir != "." || !isControlFile(name) {
			st.Unexpected++
		}
	case kind == KindPayload:
		payloads.Add(seq)
		if st.Chunks == 0 || seq < st.OldestSeq {
			st.Oldest, st.OldestSeq = joinPath(dir, name), seq
		}
		if st.Chunks == 0 || seq > st.NewestSeq {
			st.Newest, st.NewestSeq = joinPath(dir, name), seq
		}
		st.Chunks++
		st.Bytes += size()
	case kind == KindSidecar:
		sidecars.Add(seq)
		st.MetaBytes += size()
	default:
		st.Tmp++
	}
}

// walkLeafDirs calls fn for every leaf directory of the spool (the root
// when it is not sharded) in lexical order, which is the order of their
// sequence numbers. Directories that are not shard directories, symbolic
// links, and directories that vanish while walking are skipped. It stops
// with ctx's error once ctx is done, and with fn's first error.
func walkLeafDirs(ctx context.Context, fsys FS, l *Layout, fn func(dir string) error) error {
	return walkLeaves(ctx, fsys, l, false, fn)
}

// walkLeaves is walkLeafDirs, newest directory first when newestFirst.
func walkLeaves(ctx context.Context, fsys FS, l *Layout, newestFirst bool, fn func(dir string) error) error {
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if level == l.Depth() {
			err := fn(dir)
			if dir != "." && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		entries, err := fsys.ReadDir(dir) // shard directories: a few hundred at most
		if err != nil {
			if dir != "." && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if newestFirst {
			slices.Reverse(entries)
		}
		for _, e := range entries {
			if e.IsDir() && e.Type()&fs.ModeSymlink == 0 && l.IsShardDir(e.Name()) {
				if err := walk(joinPath(dir, e.Name()), level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(".", 0)
}

// listInfo calls fn for every entry of dir with its type and a function
// that returns its size (0 when it cannot be had, and always without
// sizes): streamed where the FS can. Once ctx is done it calls fn no more
// and returns ctx's error.
func listInfo(ctx context.Context, fsys FS, dir string, sizes bool, fn func(name string, typ fs.FileMode, size func() int64)) error {
	if sc, ok := fsys.(DirScanner); ok && !sizes {
		g := &ctxGate{ctx: ctx}
		return g.done(sc.ScanDir(dir, func(name string, typ fs.FileMode) {
			if g.pass() {
				fn(name, typ, noSize)
			}
		}))
	}
	if sc, ok := fsys.(DirInfoScanner); ok {
		g := &ctxGate{ctx: ctx}
		return g.done(sc.ScanDirInfo(dir, func(fi fs.FileInfo) {
			if g.pass() {
				fn(fi.Name(), fi.Mode().Type(), fi.Size)
			}
		}))
	}
	entries, err := fsys.ReadDir(dir)
	for i, e := range entries {
		if err := cancelled(ctx, i); err != nil {
			return err
		}
		size := noSize
		if sizes {
			size = func() int64 {
				if fi, err := e.Info(); err == nil {
					return fi.Size()
				}
				return 0
			}
		}
		fn(e.Name(), e.Type(), size)
	}
	return err
}

func noSize() int64 { return 0 }

// ctxGate stops a streamed listing's callbacks once ctx is done, checking
// it every checkEvery entries.
type ctxGate struct {
	ctx     context.Context
	i       int
	stopped bool
}

// pass reports whether the next entry is to be handled.
func (g *ctxGate) pass() bool {
	if g.i++; g.stopped || cancelled(g.ctx, g.i) != nil {
		g.stopped = true
		return false
	}
	return true
}

// done returns the listing's error, else ctx's.
func (g *ctxGate) done(err error) error {
	if err == nil {
		err = g.ctx.Err()
	}
	return err
}

func isControlFile(name string) bool {
	switch name {
	case ProducerFile, ConsumerFile, DoneFile, DoneFile + TmpSuffix:
		return true
	}
	return false
}

// RecentMessageIDs returns the message ids recorded in the sidecars of
// the n committed chunks with the highest sequence numbers, oldest first.
// Chunks written without a sidecar, or consumed meanwhile, give none. It
// reads at most n sidecars and, in a sharded spool, lists the newest shard
// directories only, so what it costs does not grow with the spool (a flat
// spool's one directory is listed whole, keeping at most 2n numbers). A
// dead-letter route reads them once, to dead-letter a message at most once.
// It stops with ctx's error once ctx is done.
func RecentMessageIDs(ctx context.Context, fsys FS, o Options, n int) ([]string, error) {
	l, err := o.Layout()
	if err != nil || !l.Sidecars() || n <= 0 {
		return nil, err
	}
	var newestFirst []string
	left := n
	err = walkLeaves(ctx, fsys, l, true, func(dir string) error {
		seqs, err := highestPayloadSeqs(ctx, fsys, l, dir, left)
		if err != nil {
			return err
		}
		left -= len(seqs)
		if newestFirst, err = appendMessageIDs(ctx, fsys, l, seqs, newestFirst); err == nil && left == 0 {
			err = errWalkDone
		}
		return err
	})
	if errors.Is(err, errWalkDone) {
		err = nil
	}
	slices.Reverse(newestFirst)
	return newestFirst, err
}

// errWalkDone ends a walk that has what it came for.
var errWalkDone = errors.New("walk done")

// highestPayloadSeqs lists the leaf directory dir and returns the sequence
// numbers of its n highest payloads, highest first, holding at most 2n
// numbers while it lists.
func highestPayloadSeqs(ctx context.Context, fsys FS, l *Layout, dir string, n int) ([]uint64, error) {
	var seqs []uint64
	keepHighest := func() {
		slices.SortFunc(seqs, func(a, b uint64) int { return cmp.Compare(b, a) })
		seqs = seqs[:min(n, len(seqs))]
	}
	err := listInfo(ctx, fsys, dir, false, func(name string, typ fs.FileMode, _ func() int64) {
		if seq, kind, ok := l.ParseLeaf(dir, name); ok && kind == KindPayload && typ.IsRegular() {
			if seqs = append(seqs, seq); len(seqs) >= 2*n {
				keepHighest()
			}
		}
	})
	keepHighest()
	return seqs, err
}

// appendMessageIDs appends to ids the message id in the sidecar of each
// chunk in seqs, in their order, skipping chunks consumed meanwhile or
// written without a sidecar.
func appendMessageIDs(ctx context.Context, fsys FS, l *Layout, seqs []uint64, ids []string) ([]string, error) {
	for i, seq := range seqs {
		if err := cancelled(ctx, i); err != nil {
			return ids, err
		}
		b, err := readAll(fsys, l.Sidecar(seq))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return ids, err
		}
		if id, _, err := decodeSidecar(b, nil); err == nil && id != "" {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
