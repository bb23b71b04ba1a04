package conformance

import (
	"context"
	"io/fs"
	"slices"

	"github.com/mqb-project/mqb/core"
)

// cancelFS cancels a context once a directory listing returns, so that a
// walk finds its context done in the middle of a leaf directory.
type cancelFS struct {
	core.FS
	cancel context.CancelFunc
}

func (c cancelFS) ReadDir(name string) ([]fs.DirEntry, error) {
	defer c.cancel()
	return c.FS.ReadDir(name)
}

// checkWalksStopOnCancel: the walks over a whole spool (Scan, Count, RecentMessageIDs,
// SurveyLayout, a producer's recovery) return the context's error when it
// is done before they start or while they list a directory, and change
// nothing: a route interrupted while it connects to a large spool stops at
// once and loses nothing.
func checkWalksStopOnCancel(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "fsync=none&shard_depth=1&shard_width=1")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("w", 0, 30))
	noErr(t, "Write", err)
	noErr(t, "Producer.Close", p.Close())
	before := tree(t, fsys)
	walks := map[string]func(context.Context, core.FS) error{
		"Scan":  func(ctx context.Context, f core.FS) error { _, err := core.Scan(ctx, f, o); return err },
		"Count": func(ctx context.Context, f core.FS) error { _, err := core.Count(ctx, f, o); return err },
		"RecentMessageIDs": func(ctx context.Context, f core.FS) error {
			_, err := core.RecentMessageIDs(ctx, f, o, 100)
			return err
		},
		"SurveyLayout": func(ctx context.Context, f core.FS) error { _, err := core.SurveyLayout(ctx, f, o); return err },
		"OpenProducerContext": func(ctx context.Context, f core.FS) error {
			p, err := core.OpenProducerContext(ctx, f, o)
			if err == nil {
				_ = p.Close()
			}
			return err
		},
	}
	for name, walk := range walks {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		wantErr(t, name+" with a done context", walk(ctx, fsys), context.Canceled)
		ctx, cancel = context.WithCancel(e.ctx)
		wantErr(t, name+" cancelled while listing", walk(ctx, cancelFS{fsys, cancel}), context.Canceled)
		cancel()
	}
	if after := tree(t, fsys); !slices.Equal(after, before) {
		t.Fatalf("cancelled walks changed the spool: %q, then %q", before, after)
	}
	p, err = core.OpenProducer(fsys, o) // the cancelled opens released the claim
	noErr(t, "OpenProducer after cancelled ones", err)
	noErr(t, "Producer.Close", p.Close())
}
