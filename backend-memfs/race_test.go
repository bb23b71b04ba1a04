package memfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/core"
)

const racers = 32

// race runs fn from racers goroutines at once and returns how many succeeded;
// every failure must wrap fs.ErrExist.
func race(t *testing.T, fn func(i int) error) int {
	t.Helper()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		wins  int
		errs  []error
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				errs = append(errs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, fs.ErrExist)
		var pe *fs.PathError
		require.True(t, errors.As(err, &pe))
	}
	return wins
}

func TestRaceCreateExcl(t *testing.T) {
	for round := range 20 {
		fsys := memfs.New()
		name := fmt.Sprintf("f%d", round)
		var files sync.Map
		wins := race(t, func(i int) error {
			f, err := fsys.CreateExcl(name)
			if err == nil {
				_, err = fmt.Fprintf(f, "%d", i)
				require.NoError(t, err)
				require.NoError(t, f.Close())
				files.Store(i, true)
			}
			return err
		})
		require.Equal(t, 1, wins)
		var winner int
		files.Range(func(k, _ any) bool { winner = k.(int); return false })
		assert.Equal(t, fmt.Sprint(winner), read(t, fsys, name), "the winner's file is never truncated by a loser")
	}
}

func TestRaceRenameSameTarget(t *testing.T) {
	for range 20 {
		fsys := memfs.New()
		for i := range racers {
			write(t, fsys, fmt.Sprintf("src%d", i), fmt.Sprint(i), false)
		}
		var winner sync.Map
		wins := race(t, func(i int) error {
			err := fsys.Rename(fmt.Sprintf("src%d", i), "dst")
			if err == nil {
				winner.Store("w", i)
			}
			return err
		})
		require.Equal(t, 1, wins)
		w, _ := winner.Load("w")
		assert.Equal(t, fmt.Sprint(w), read(t, fsys, "dst"))
		ents, err := fsys.ReadDir(".")
		require.NoError(t, err)
		assert.Len(t, ents, racers, "no file was lost or duplicated")
	}
}

func TestRaceRenameSameSource(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "src", "x", false)
	var errs sync.Map
	wins := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			err := fsys.Rename("src", fmt.Sprintf("dst%d", i))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				errs.Store(i, err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, wins)
	errs.Range(func(_, v any) bool {
		require.ErrorIs(t, v.(error), fs.ErrNotExist)
		return true
	})
	ents, err := fsys.ReadDir(".")
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

func TestRaceMkdir(t *testing.T) {
	fsys := memfs.New()
	wins := race(t, func(int) error { return fsys.Mkdir("shard") })
	require.Equal(t, 1, wins)
}

func TestRaceLock(t *testing.T) {
	fsys := memfs.New()
	var (
		mu     sync.Mutex
		claims []core.Claim
		wg     sync.WaitGroup
	)
	for range racers {
		wg.Go(func() {
			c, err := fsys.Lock("PRODUCER")
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				claims = append(claims, c)
				return
			}
			assert.ErrorIs(t, err, core.ErrLocked)
		})
	}
	wg.Wait()
	require.Len(t, claims, 1)
	require.NoError(t, claims[0].Release())
}

// Everything at once, for the race detector: writers, readers, syncs, crashes.
func TestRaceMixed(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "q")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("q/%d-%03d", w, i)
				f, err := fsys.CreateExcl(name + ".tmp")
				if !assert.NoError(t, err) {
					return
				}
				_, _ = f.Write([]byte(name))
				_ = f.Sync()
				_ = f.Close()
				assert.NoError(t, fsys.Rename(name+".tmp", name))
				assert.NoError(t, fsys.SyncDir("q"))
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			ents, err := fsys.ReadDir("q")
			if !assert.NoError(t, err) {
				return
			}
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".tmp") {
					continue
				}
				if r, err := fsys.Open("q/" + e.Name()); err == nil {
					_, _ = r.Read(make([]byte, 8))
					_ = r.Close()
				}
				_ = fsys.Remove("q/" + e.Name())
			}
		}
	})
	wg.Go(func() {
		for i := range 20 {
			_ = fsys.Crash(memfs.CrashOptions{Seed: int64(i), KeepUnsynced: 0.5})
			_ = fsys.SyncAll()
		}
	})
	wg.Wait()
}
