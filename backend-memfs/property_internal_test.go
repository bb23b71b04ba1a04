package memfs

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path"
	"slices"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/core"
)

// currentTree maps every current name to its node.
func currentTree(f *FS) map[string]*node {
	out := map[string]*node{}
	var walk func(d *node, at string)
	walk = func(d *node, at string) {
		for name, c := range d.children {
			p := path.Join(at, name)
			out[p] = c
			if c.kind == kindDir {
				walk(c, p)
			}
		}
	}
	walk(f.root, "")
	return out
}

// crashWithTrace crashes f and returns the new FS and which node each
// surviving name came from; it fails on a node seen twice.
func crashWithTrace(t *testing.T, f *FS, opts CrashOptions) (*FS, map[string]*node) {
	t.Helper()
	got := map[string]*node{}
	f.mu.Lock()
	f.crashTrace = func(p string, n *node, dup bool) {
		require.False(t, dup, "node at two names, second %s", p)
		got[p[1:]] = n
	}
	f.mu.Unlock()
	out := f.Crash(opts)
	f.mu.Lock()
	f.crashTrace = nil
	f.mu.Unlock()
	return out, got
}

func readAll(t *testing.T, fsys core.FS, name string) []byte {
	t.Helper()
	r, err := fsys.Open(name)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

type history struct {
	t     *testing.T
	f     *FS
	rng   *rand.Rand
	open  []core.File
	count int
}

func (h *history) pick(kind nodeKind) string {
	var names []string
	if kind == kindDir {
		names = append(names, ".")
	}
	for p, n := range currentTree(h.f) {
		if n.kind == kind {
			names = append(names, p)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return names[h.rng.IntN(len(names))]
}

func (h *history) newName() string {
	return path.Join(h.pick(kindDir), fmt.Sprintf("n%d", h.rng.IntN(6)))
}

func (h *history) bytes() []byte {
	h.count++
	return fmt.Appendf(nil, "<%d:%s>", h.count, bytes.Repeat([]byte{'x'}, h.rng.IntN(20)))
}

// step does one random operation; errors the contract allows are ignored.
func (h *history) step() {
	f := h.f
	switch r := h.rng.IntN(100); {
	case r < 20:
		w, err := f.CreateExcl(h.newName())
		if err != nil {
			return
		}
		_, _ = w.Write(h.bytes())
		if h.rng.IntN(2) == 0 {
			require.NoError(h.t, w.Sync())
		}
		if h.rng.IntN(3) == 0 {
			_, _ = w.Write(h.bytes())
		}
		if h.rng.IntN(3) == 0 && len(h.open) < 4 {
			h.open = append(h.open, w)
		} else {
			require.NoError(h.t, w.Close())
		}
	case r < 30 && len(h.open) > 0:
		i := h.rng.IntN(len(h.open))
		w := h.open[i]
		_, _ = w.Write(h.bytes())
		switch h.rng.IntN(3) {
		case 0:
			require.NoError(h.t, w.Sync())
		case 1:
			require.NoError(h.t, w.Close())
			h.open = append(h.open[:i], h.open[i+1:]...)
		}
	case r < 50:
		kind := kindFile
		if h.rng.IntN(4) == 0 {
			kind = kindDir
		}
		if old := h.pick(kind); old != "" && old != "." {
			_ = f.Rename(old, h.newName())
		}
	case r < 60:
		if old := h.pick(nodeKind(h.rng.IntN(2))); old != "" && old != "." {
			_ = f.Remove(old)
		}
	case r < 70:
		_ = f.Mkdir(h.newName())
	case r < 97:
		require.NoError(h.t, f.SyncDir(h.pick(kindDir)))
	default:
		require.NoError(h.t, f.SyncAll())
	}
}

// check crashes the history's FS with several options and checks the
// promises of Crash.
func (h *history) check() {
	t, f := h.t, h.f
	base, baseNodes := crashWithTrace(t, f, CrashOptions{})

	f.mu.Lock()
	removed := map[*node]bool{}
	for _, o := range f.log {
		if !o.done && o.kind == opRemove {
			removed[o.n] = true
		}
	}
	current := currentTree(f)
	contents := map[*node][]byte{}
	for n := range f.files {
		b, err := f.content(n)
		require.NoError(t, err)
		contents[n] = b
	}
	synced := map[*node]int64{}
	for n := range f.files {
		synced[n] = n.syncedLen
		// SyncAll visits only unsynced: no other file may have bytes
		// past its synced length.
		if _, ok := f.unsynced[n]; !ok {
			require.False(t, n.writing, "a file open for writing is in unsynced")
			require.Equal(t, n.syncedLen, int64(len(contents[n])), "a file outside unsynced is synced")
		}
	}
	for n := range f.unsynced {
		_, ok := f.files[n]
		require.True(t, ok, "unsynced holds only files that still matter")
	}
	f.mu.Unlock()

	for p, n := range baseNodes {
		if n.kind == kindFile {
			want := contents[n][:min(synced[n], int64(len(contents[n])))]
			require.Equal(t, want, readAll(t, base, p), "KeepUnsynced 0: synced bytes of %s", p)
		}
	}

	for _, keep := range []float64{0.2, 0.5, 0.9, 1} {
		for seed := range int64(4) {
			after, got := crashWithTrace(t, f, CrashOptions{Seed: seed, KeepUnsynced: keep})
			where := map[*node]string{}
			for p, n := range got {
				where[n] = p
				if n.kind != kindFile {
					continue
				}
				b := readAll(t, after, p)
				require.True(t, bytes.HasPrefix(contents[n], b), "%s: %q not a prefix of %q", p, b, contents[n])
				require.GreaterOrEqual(t, int64(len(b)), min(synced[n], int64(len(contents[n]))), "%s keeps its synced bytes", p)
			}
			for p, n := range baseNodes {
				if !removed[n] {
					_, ok := where[n]
					require.True(t, ok, "keep %v seed %d: %s (durable, not removed) vanished", keep, seed, p)
				}
			}
			if keep == 1 {
				require.Equal(t, current, got, "KeepUnsynced 1 is the current state")
			}
		}
	}
}

func TestCrashProperties(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := &history{t: t, f: New(), rng: rand.New(rand.NewPCG(seed, 1))}
			for i := range 150 {
				h.step()
				if i%15 == 14 {
					h.check()
				}
			}
			for _, w := range h.open {
				_ = w.Close()
			}
		})
	}
}

// A spool that never syncs must not keep every file it ever had.
func TestUnsyncedHistoryIsForgotten(t *testing.T) {
	f := New()
	require.NoError(t, f.Mkdir("q"))
	for i := range 1000 {
		name := fmt.Sprintf("q/%04d", i)
		w, err := f.CreateExcl(name + ".tmp")
		require.NoError(t, err)
		_, err = w.Write(make([]byte, 1024))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, f.Rename(name+".tmp", name))
		require.NoError(t, f.Remove(name))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.files, 0)
	require.LessOrEqual(t, len(f.log), 130)
	live := 0
	for _, o := range f.log {
		if !o.done {
			live++
		}
	}
	require.Equal(t, 1, live, "only the mkdir is pending")
	keys, err := afero.ReadDir(f.base, "/")
	require.NoError(t, err)
	require.Zero(t, len(keys), "the bytes of forgotten files are freed")
}

// Files removed after their removal was synced are forgotten too.
func TestSyncedHistoryIsForgotten(t *testing.T) {
	f := New()
	for i := range 200 {
		name := fmt.Sprintf("%04d", i)
		w, err := f.CreateExcl(name)
		require.NoError(t, err)
		require.NoError(t, w.Sync())
		require.NoError(t, w.Close())
		require.NoError(t, f.SyncDir("."))
		require.NoError(t, f.Remove(name))
		require.NoError(t, f.SyncDir("."))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.files, 0)
	require.Empty(t, f.root.durable)
	require.Empty(t, f.root.slotOps)
	keys, err := afero.ReadDir(f.base, "/")
	require.NoError(t, err)
	require.Zero(t, len(keys), "the bytes of forgotten files are freed")
}
