package core

import (
	"context"
	"errors"
	"io/fs"
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

// walkLeaves calls fn for every leaf directory of the spool (the root when it
// is not sharded) in lexical order, with its sorted entries. Directories that
// are not shard directories, and symbolic links, are skipped. A directory
// that vanishes while walking (a consumer removed it) is skipped. It stops
// with ctx's error once ctx is done; fn, given a large leaf, should check
// too (see cancelled).
func walkLeaves(ctx context.Context, fsys FS, l *Layout, fn func(dir string, entries []fs.DirEntry) error) error {
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			if dir != "." && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if level == l.Depth() {
			return fn(dir, entries)
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
// anything. It stops with ctx's error once ctx is done.
func Scan(ctx context.Context, fsys FS, o Options) (*Stats, error) {
	l, err := o.Layout()
	if err != nil {
		return nil, err
	}
	st := &Stats{}
	err = walkLeaves(ctx, fsys, l, func(dir string, entries []fs.DirEntry) error {
		if dir != "." {
			st.ShardDirs++
		}
		payloads := map[uint64]bool{}
		var sidecars []uint64
		for i, e := range entries {
			if err := cancelled(ctx, i); err != nil {
				return err
			}
			if !e.Type().IsRegular() {
				continue
			}
			seq, kind, ok := l.ParseLeaf(dir, e.Name())
			if !ok {
				if dir != "." || !isControlFile(e.Name()) {
					st.Unexpected++
				}
				continue
			}
			switch kind {
			case KindPayload:
				payloads[seq] = true
				name := joinPath(dir, e.Name())
				if st.Chunks == 0 {
					st.Oldest, st.OldestSeq = name, seq
				}
				st.Newest, st.NewestSeq = name, seq
				st.Chunks++
				if fi, err := e.Info(); err == nil {
					st.Bytes += fi.Size()
				}
			case KindSidecar:
				sidecars = append(sidecars, seq)
				if fi, err := e.Info(); err == nil {
					st.MetaBytes += fi.Size()
				}
			default:
				st.Tmp++
			}
		}
		for _, s := range sidecars {
			if !payloads[s] {
				st.Orphans++
			}
		}
		return nil
	})
	return st, err
}

func isControlFile(name string) bool {
	switch name {
	case ProducerFile, ConsumerFile, DoneFile, DoneFile + TmpSuffix:
		return true
	}
	return false
}

// MessageIDs returns the message ids recorded in the sidecars of the
// committed chunks of a spool (a spool without sidecars has none). A
// dead-letter route reads them once, to dead-letter a message at most once.
// It stops with ctx's error once ctx is done.
func MessageIDs(ctx context.Context, fsys FS, o Options) (map[string]bool, error) {
	l, err := o.Layout()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	if !l.Sidecars() {
		return ids, nil
	}
	err = walkLeaves(ctx, fsys, l, func(dir string, entries []fs.DirEntry) error {
		for i, e := range entries {
			if err := cancelled(ctx, i); err != nil {
				return err
			}
			seq, kind, ok := l.ParseLeaf(dir, e.Name())
			if !ok || kind != KindPayload || !e.Type().IsRegular() {
				continue
			}
			b, err := readAll(fsys, l.Sidecar(seq))
			if errors.Is(err, fs.ErrNotExist) {
				continue // consumed meanwhile, or written without a sidecar
			} else if err != nil {
				return err
			}
			if id, _, err := decodeSidecar(b, nil); err == nil && id != "" {
				ids[id] = true
			}
		}
		return nil
	})
	return ids, err
}
