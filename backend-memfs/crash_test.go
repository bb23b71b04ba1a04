package memfs_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
)

func requireMissing(t *testing.T, fsys *memfs.FS, name string) {
	t.Helper()
	_, err := fsys.Stat(name)
	requirePathErr(t, err, name, fs.ErrNotExist)
}

func TestCrashUnsyncedFile(t *testing.T) {
	t.Run("entry not synced: absent", func(t *testing.T) {
		fsys := memfs.New()
		write(t, fsys, "f", "data", false)
		requireMissing(t, crash(fsys), "f")
	})
	t.Run("entry synced, bytes not: empty", func(t *testing.T) {
		fsys := memfs.New()
		write(t, fsys, "f", "data", false)
		syncDir(t, fsys, ".")
		assert.Equal(t, "", read(t, crash(fsys), "f"))
	})
	t.Run("bytes after the last sync are lost", func(t *testing.T) {
		fsys := memfs.New()
		f, err := fsys.CreateExcl("f")
		require.NoError(t, err)
		_, err = f.Write([]byte("abc"))
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		_, err = f.Write([]byte("def"))
		require.NoError(t, err)
		syncDir(t, fsys, ".")
		assert.Equal(t, "abc", read(t, crash(fsys), "f"))
		require.NoError(t, f.Sync())
		assert.Equal(t, "abcdef", read(t, crash(fsys), "f"))
		require.NoError(t, f.Close())
	})
}

func TestCrashSyncedFileUnsyncedEntry(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "f", "data", true)
	requireMissing(t, crash(fsys), "f")
}

func TestCrashSyncedFileAndDir(t *testing.T) {
	fsys := memfs.New()
	data := string([]byte{0, 1, 2, 255, '\n', 'x'}) + strings.Repeat("payload", 1000)
	mkdir(t, fsys, "d")
	syncDir(t, fsys, ".")
	write(t, fsys, "d/f", data, true)
	syncDir(t, fsys, "d")
	after := crash(fsys)
	assert.Equal(t, data, read(t, after, "d/f"))
	assert.Equal(t, map[string]string{"d": "/", "d/f": data}, tree(t, after))
}

func TestCrashRename(t *testing.T) {
	setup := func(t *testing.T) *memfs.FS {
		fsys := memfs.New()
		write(t, fsys, "a.tmp", "A", true)
		syncDir(t, fsys, ".")
		require.NoError(t, fsys.Rename("a.tmp", "a"))
		return fsys
	}
	t.Run("synced: new name only", func(t *testing.T) {
		fsys := setup(t)
		syncDir(t, fsys, ".")
		assert.Equal(t, map[string]string{"a": "A"}, tree(t, crash(fsys)))
	})
	t.Run("not synced: old name", func(t *testing.T) {
		fsys := setup(t)
		assert.Equal(t, map[string]string{"a.tmp": "A"}, tree(t, crash(fsys)))
	})
	t.Run("created and renamed, nothing synced: neither", func(t *testing.T) {
		fsys := memfs.New()
		write(t, fsys, "b.tmp", "B", true)
		require.NoError(t, fsys.Rename("b.tmp", "b"))
		assert.Empty(t, tree(t, crash(fsys)))
	})
	t.Run("created and renamed, one SyncDir: final name", func(t *testing.T) {
		fsys := memfs.New()
		write(t, fsys, "b.tmp", "B", true)
		require.NoError(t, fsys.Rename("b.tmp", "b"))
		syncDir(t, fsys, ".")
		assert.Equal(t, map[string]string{"b": "B"}, tree(t, crash(fsys)))
	})
}

func TestCrashRenameAcrossDirs(t *testing.T) {
	setup := func(t *testing.T) *memfs.FS {
		fsys := memfs.New()
		mkdir(t, fsys, "src")
		mkdir(t, fsys, "dst")
		syncDir(t, fsys, ".")
		write(t, fsys, "src/f", "F", true)
		syncDir(t, fsys, "src")
		require.NoError(t, fsys.Rename("src/f", "dst/f"))
		return fsys
	}
	for _, tc := range []struct {
		sync string
		want string
	}{
		{"", "src/f"},
		{"src", "dst/f"},
		{"dst", "dst/f"},
	} {
		t.Run("sync "+tc.sync, func(t *testing.T) {
			fsys := setup(t)
			if tc.sync != "" {
				syncDir(t, fsys, tc.sync)
			}
			assert.Equal(t, map[string]string{"src": "/", "dst": "/", tc.want: "F"}, tree(t, crash(fsys)))
		})
	}

	t.Run("into a new directory", func(t *testing.T) {
		fsys := setup(t)
		require.NoError(t, fsys.Rename("dst/f", "src/f"))
		syncDir(t, fsys, ".")
		syncDir(t, fsys, "src")
		syncDir(t, fsys, "dst")
		mkdir(t, fsys, "new")
		require.NoError(t, fsys.Rename("src/f", "new/f"))
		syncDir(t, fsys, "new")
		// The parent of "new" was not synced, but a moved file never lands
		// in a directory that a crash loses.
		assert.Equal(t, "F", tree(t, crash(fsys))["new/f"])
	})
}

func TestCrashRemove(t *testing.T) {
	fsys := memfs.New()
	f, err := fsys.CreateExcl("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("synced"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte(" not"))
	require.NoError(t, err)
	syncDir(t, fsys, ".")

	require.NoError(t, fsys.Remove("f"))
	assert.Equal(t, map[string]string{"f": "synced"}, tree(t, crash(fsys)), "unsynced remove: the file comes back")

	require.NoError(t, f.Sync())
	assert.Equal(t, map[string]string{"f": "synced not"}, tree(t, crash(fsys)), "a sync through a handle still counts")
	require.NoError(t, f.Close())

	syncDir(t, fsys, ".")
	assert.Empty(t, tree(t, crash(fsys)), "synced remove: gone")
}

func TestCrashDirectories(t *testing.T) {
	t.Run("new dir synced but not its parent", func(t *testing.T) {
		fsys := memfs.New()
		mkdir(t, fsys, "shard")
		write(t, fsys, "shard/1.tmp", "x", true)
		require.NoError(t, fsys.Rename("shard/1.tmp", "shard/1"))
		syncDir(t, fsys, "shard")
		assert.Empty(t, tree(t, crash(fsys)), "the shard directory itself was never made durable")
		syncDir(t, fsys, ".")
		assert.Equal(t, map[string]string{"shard": "/", "shard/1": "x"}, tree(t, crash(fsys)))
	})
	t.Run("rmdir not synced", func(t *testing.T) {
		fsys := memfs.New()
		mkdir(t, fsys, "shard")
		syncDir(t, fsys, ".")
		write(t, fsys, "shard/1", "x", true)
		syncDir(t, fsys, "shard")
		require.NoError(t, fsys.Remove("shard/1"))
		require.NoError(t, fsys.Remove("shard"))
		assert.Equal(t, map[string]string{"shard": "/", "shard/1": "x"}, tree(t, crash(fsys)))
		syncDir(t, fsys, ".")
		assert.Empty(t, tree(t, crash(fsys)))
	})
	t.Run("renamed dir", func(t *testing.T) {
		fsys := memfs.New()
		mkdir(t, fsys, "a")
		syncDir(t, fsys, ".")
		write(t, fsys, "a/f", "x", true)
		syncDir(t, fsys, "a")
		require.NoError(t, fsys.Rename("a", "b"))
		assert.Equal(t, map[string]string{"a": "/", "a/f": "x"}, tree(t, crash(fsys)))
		syncDir(t, fsys, ".")
		assert.Equal(t, map[string]string{"b": "/", "b/f": "x"}, tree(t, crash(fsys)))
	})
}

func TestCrashSyncAll(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "a", "A", false)
	write(t, fsys, "b", "B", false)
	syncDir(t, fsys, ".")
	write(t, fsys, "c", "C", false)
	assert.Equal(t, map[string]string{"a": "", "b": ""}, tree(t, crash(fsys)))
	require.NoError(t, fsys.SyncAll())
	assert.Equal(t, map[string]string{"a": "A", "b": "B"}, tree(t, crash(fsys)), "SyncAll syncs bytes, not entries")
	syncDir(t, fsys, ".")
	assert.Equal(t, map[string]string{"a": "A", "b": "B", "c": "C"}, tree(t, crash(fsys)))
}

// SyncAll reaches every file with unsynced bytes: one still open, one closed
// unsynced, one removed (its removal not synced, so a crash brings it back),
// and not again one it synced and that was closed since.
func TestCrashSyncAllReachesEveryWrittenFile(t *testing.T) {
	fsys := memfs.New()
	open, err := fsys.CreateExcl("open")
	require.NoError(t, err)
	_, err = open.Write([]byte("1"))
	require.NoError(t, err)
	write(t, fsys, "closed", "C", false)
	write(t, fsys, "removed", "R", false)
	write(t, fsys, "synced", "S", true)
	syncDir(t, fsys, ".")
	require.NoError(t, fsys.Remove("removed"))

	require.NoError(t, fsys.SyncAll())
	_, err = open.Write([]byte("2"))
	require.NoError(t, err)
	want := map[string]string{"open": "1", "closed": "C", "removed": "R", "synced": "S"}
	assert.Equal(t, want, tree(t, crash(fsys)))

	require.NoError(t, fsys.SyncAll())
	want["open"] = "12"
	assert.Equal(t, want, tree(t, crash(fsys)), "a file open for writing stays in reach")
	require.NoError(t, open.Close())
	_, err = open.Write([]byte("3"))
	require.Error(t, err)
	require.NoError(t, fsys.SyncAll())
	assert.Equal(t, want, tree(t, crash(fsys)))
}

func TestCrashIndependence(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "a", "A", true)
	syncDir(t, fsys, ".")
	w, err := fsys.WatchDir(".")
	require.NoError(t, err)
	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)

	after := crash(fsys)
	write(t, after, "in-clone", "x", true)
	require.NoError(t, after.Remove("a"))
	syncDir(t, after, ".")

	assert.Equal(t, map[string]string{"a": "A", "PRODUCER": ""}, tree(t, fsys), "the original is untouched")
	assert.True(t, fired(w), "the original's watch still works (it saw PRODUCER)")
	write(t, fsys, "b", "B", true)
	assert.True(t, fired(w))
	claimWrite(t, c, "me", 0)
	assert.Equal(t, map[string]string{"in-clone": "x"}, tree(t, after), "the clone is untouched")

	again := crash(after)
	assert.Equal(t, map[string]string{"in-clone": "x"}, tree(t, again), "a clone can crash too")
}

// crashTree is the state after a crash with seed and keep.
func crashTree(t *testing.T, fsys *memfs.FS, seed int64, keep float64) map[string]string {
	return tree(t, fsys.Crash(memfs.CrashOptions{Seed: seed, KeepUnsynced: keep}))
}

// history builds a spool-like history with many unsynced operations.
func history(t *testing.T) *memfs.FS {
	fsys := memfs.New()
	mkdir(t, fsys, "q")
	syncDir(t, fsys, ".")
	for i := range 10 {
		name := fmt.Sprintf("q/%03d", i)
		write(t, fsys, name+".tmp", strings.Repeat(fmt.Sprint(i), 20), i%2 == 0)
		require.NoError(t, fsys.Rename(name+".tmp", name))
		if i == 4 {
			syncDir(t, fsys, "q")
		}
	}
	require.NoError(t, fsys.Remove("q/001"))
	return fsys
}

func TestCrashKeepUnsyncedSeeds(t *testing.T) {
	fsys := history(t)
	states := map[string]bool{}
	for seed := range int64(30) {
		a := crashTree(t, fsys, seed, 0.5)
		b := crashTree(t, fsys, seed, 0.5)
		require.Equal(t, a, b, "seed %d: same seed, same state", seed)
		states[fmt.Sprint(a)] = true
	}
	assert.Greater(t, len(states), 5, "different seeds give different states")

	zero := crashTree(t, fsys, 0, 0)
	for seed := range int64(5) {
		assert.Equal(t, zero, crashTree(t, fsys, seed, 0), "KeepUnsynced 0 does not depend on the seed")
	}
	assert.Equal(t, tree(t, fsys), crashTree(t, fsys, 7, 1), "KeepUnsynced 1 keeps everything")
}

func TestCrashKeepUnsyncedTail(t *testing.T) {
	fsys := memfs.New()
	f, err := fsys.CreateExcl("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("synced|"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	syncDir(t, fsys, ".")

	seen := map[string]bool{}
	for seed := range int64(200) {
		got := crashTree(t, fsys, seed, 0.5)["f"]
		require.True(t, strings.HasPrefix("synced|0123456789", got), "prefix of the current content: %q", got)
		require.True(t, strings.HasPrefix(got, "synced|"), "keeps the synced bytes: %q", got)
		seen[got] = true
	}
	assert.True(t, seen["synced|"], "tail lost")
	assert.True(t, seen["synced|0123456789"], "tail kept whole")
	assert.Greater(t, len(seen), 4, "tail kept in part")
}

func TestCrashKeepUnsyncedRenameIsAtomic(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "a")
	mkdir(t, fsys, "b")
	syncDir(t, fsys, ".")
	for i := range 5 {
		write(t, fsys, fmt.Sprintf("a/%d", i), fmt.Sprint(i), true)
	}
	syncDir(t, fsys, "a")
	for i := range 5 {
		require.NoError(t, fsys.Rename(fmt.Sprintf("a/%d", i), fmt.Sprintf("b/%d", i)))
		require.NoError(t, fsys.Rename(fmt.Sprintf("b/%d", i), fmt.Sprintf("b/%d.x", i)))
	}
	outcomes := map[string]bool{}
	for seed := range int64(100) {
		got := crashTree(t, fsys, seed, 0.5)
		for i := range 5 {
			var at []string
			for _, name := range []string{"a/%d", "b/%d", "b/%d.x"} {
				p := fmt.Sprintf(name, i)
				if v, ok := got[p]; ok {
					assert.Equal(t, fmt.Sprint(i), v)
					at = append(at, p)
				}
			}
			require.Len(t, at, 1, "seed %d: file %d at exactly one name: %v", seed, i, at)
			outcomes[strings.Replace(at[0], fmt.Sprint(i), "N", 1)] = true
		}
	}
	assert.Len(t, outcomes, 3, "every stage of the renames is a possible outcome")
}
