//go:build linux

package osfs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/core"
)

// fanOutPayload is the content of large file i: larger than the size at
// which ReadWholeFiles shares the rest of a batch among threads.
func fanOutPayload(i int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, 40<<10+i)
}

// overlapLend returns a Lend that makes new buffers and reports whether
// two of its calls were ever in progress at once. Each call after the
// first waits up to a second for another to join it, so a fan-out shows
// however the threads are scheduled.
func overlapLend() (lend func(int) []byte, overlapped *atomic.Bool) {
	var calls, in atomic.Int32
	overlapped = new(atomic.Bool)
	return func(n int) []byte {
		if calls.Add(1) > 1 {
			if in.Add(1) > 1 {
				overlapped.Store(true)
			}
			for end := time.Now().Add(time.Second); !overlapped.Load() && time.Now().Before(end); {
				runtime.Gosched()
			}
			in.Add(-1)
		}
		return make([]byte, n)
	}, overlapped
}

// TestReadWholeFilesFansOut checks a batch of large files read on several
// threads: every file is read whole and in its place, Lend is called from
// two goroutines at once, and a missing Optional sidecar does not stop the
// reads.
func TestReadWholeFilesFansOut(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	fsys := newFS(t, t.TempDir())
	root := fsys.Root()
	var reads []core.WholeRead
	lend, overlapped := overlapLend()
	for i := range 24 {
		writeFile(t, filepath.Join(root, "d", fmt.Sprintf("p%02d", i)), string(fanOutPayload(i)))
		if i%3 != 0 {
			writeFile(t, filepath.Join(root, "d", fmt.Sprintf("s%02d", i)), fmt.Sprint(i))
		}
		reads = append(reads,
			core.WholeRead{Name: fmt.Sprintf("d/p%02d", i), Lend: lend},
			core.WholeRead{Name: fmt.Sprintf("d/s%02d", i), Into: make([]byte, 0, 8), Optional: true})
	}
	require.Equal(t, len(reads), fsys.ReadWholeFiles(reads))
	for i := range 24 {
		p, s := reads[2*i], reads[2*i+1]
		require.NoError(t, p.Err, p.Name)
		require.Equal(t, fanOutPayload(i), p.Data, p.Name)
		if i%3 == 0 {
			require.ErrorIs(t, s.Err, os.ErrNotExist, s.Name)
		} else {
			require.NoError(t, s.Err, s.Name)
			require.Equal(t, fmt.Sprint(i), string(s.Data), s.Name)
		}
	}
	require.True(t, overlapped.Load(), "two reads were in progress at once")
}

// TestReadWholeFilesFannedOutStops checks that a fanned-out batch stops
// where the sequential loop would: at the first read that fails. Reads
// made past it are undone: no Data, no error, and a file kept open (Keep)
// is closed.
func TestReadWholeFilesFannedOutStops(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	fsys := newFS(t, t.TempDir())
	root := fsys.Root()
	const missing = 9
	reads := []core.WholeRead{{Name: "p00"}} // large: the rest fan out
	writeFile(t, filepath.Join(root, "p00"), string(fanOutPayload(0)))
	for i := 1; i < 40; i++ {
		if i != missing {
			writeFile(t, filepath.Join(root, fmt.Sprintf("p%02d", i)), string(fanOutPayload(i)))
		}
		// Left on disk and kept open: a descriptor to close when undone.
		reads = append(reads, core.WholeRead{Name: fmt.Sprintf("p%02d", i), LeaveAbove: 1, Keep: true})
	}
	fds := openFDs(t)
	require.Equal(t, missing+1, fsys.ReadWholeFiles(reads))
	require.ErrorIs(t, reads[missing].Err, os.ErrNotExist)
	for i := 1; i < missing; i++ {
		require.NoError(t, reads[i].Err)
		require.NotNil(t, reads[i].Kept, reads[i].Name)
		require.Equal(t, int64(len(fanOutPayload(i))), reads[i].Left)
		reads[i].Kept.Close()
	}
	for _, r := range reads[missing+1:] {
		require.Nil(t, r.Data, r.Name)
		require.Nil(t, r.Kept, r.Name)
		require.NoError(t, r.Err, r.Name)
		require.Zero(t, r.Left, r.Name)
	}
	require.Equal(t, fds, openFDs(t), "no descriptor left open")
}
