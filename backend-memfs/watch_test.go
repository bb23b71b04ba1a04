package memfs_test

import (
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/core"
)

func fired(w core.DirWatch) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(10 * time.Millisecond):
		return false
	}
}

func TestWatchDir(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "q")
	mkdir(t, fsys, "other")
	write(t, fsys, "other/x", "", false)

	w, err := fsys.WatchDir("q")
	require.NoError(t, err)
	defer w.Close()
	assert.False(t, fired(w), "no report before a change")

	write(t, fsys, "q/a.tmp", "", false)
	assert.True(t, fired(w), "create")
	assert.False(t, fired(w))

	require.NoError(t, fsys.Rename("q/a.tmp", "q/a"))
	assert.True(t, fired(w), "rename within the directory")

	require.NoError(t, fsys.Rename("other/x", "q/x"))
	assert.True(t, fired(w), "rename into the directory")

	mkdir(t, fsys, "q/shard")
	assert.True(t, fired(w), "mkdir")

	write(t, fsys, "other/y", "", false)
	write(t, fsys, "q/shard/z", "", false)
	require.NoError(t, fsys.Remove("q/a"))
	require.NoError(t, fsys.Rename("q/x", "other/x"))
	assert.False(t, fired(w), "other directories, removals and renames out are not reported")

	for i := range 100 {
		write(t, fsys, "q/many"+string(rune('a'+i%26))+string(rune('a'+i/26)), "", false)
	}
	assert.True(t, fired(w), "coalesced")
	assert.False(t, fired(w), "one report for many changes")

	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	write(t, fsys, "q/after-close", "", false)
	assert.False(t, fired(w), "no report after Close")
}

func TestWatchDirErrors(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "f", "", false)
	_, err := fsys.WatchDir("nope")
	requirePathErr(t, err, "nope", fs.ErrNotExist)
	_, err = fsys.WatchDir("f")
	requirePathErr(t, err, "f", syscall.ENOTDIR)

	w, err := fsys.WatchDir(".")
	require.NoError(t, err)
	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)
	assert.True(t, fired(w), "a claim file created by Lock is a new entry")
	require.NoError(t, c.Release())
}

func TestWatchWakesWaiter(t *testing.T) {
	fsys := memfs.New()
	w, err := fsys.WatchDir(".")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-w.C()
	}()
	write(t, fsys, "a", "", false)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken")
	}
}
