package dirspool_test

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// fullFS is a memfs whose disk fills up: once files runs out, every write
// fails with ENOSPC, as on a full filesystem where creating an empty file
// still works. files < 0 means room for everything.
type fullFS struct {
	core.FS
	mu    sync.Mutex
	files int
}

func (f *fullFS) setRoom(files int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files = files
}

func (f *fullFS) CreateExcl(name string) (core.File, error) {
	file, err := f.FS.CreateExcl(name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	full := f.files == 0
	if f.files > 0 {
		f.files--
	}
	return &fullFile{File: file, name: name, full: full}, nil
}

type fullFile struct {
	core.File
	name string
	full bool
}

func (f *fullFile) Write(b []byte) (int, error) {
	if f.full {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

// A batch that fails part way with fsync=chunk (disk full) and is then
// retried, failing again before the disk has room, must not write a second
// time the chunks its first attempt committed. Repeated message ids in the
// input are each written once.
func TestRetryAfterDiskFullWritesNothingTwice(t *testing.T) {
	for _, fsync := range []string{"chunk", "batch", "none"} {
		t.Run(fsync, func(t *testing.T) {
			e := env()
			disk := &fullFS{FS: memfs.New(), files: -1}
			e.RegisterBackend("full", func(string, bridge.BackendOptions, bool) (core.FS, error) { return disk, nil })
			ctx := context.Background()
			tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dir-spool:///s?backend=full&fsync=" + fsync})
			require.NoError(t, err)
			require.NoError(t, tgt.Connect(ctx))
			msgs := make([]*bridge.Message, 10)
			for i := range msgs {
				msgs[i] = &bridge.Message{ID: fmt.Sprintf("id-%d", i), Payload: []byte(fmt.Sprint(i)), Metadata: map[string]string{}}
			}
			msgs[7].ID = "id-1" // the same id twice: both are messages to keep
			disk.setRoom(6)     // three chunks (sidecar and payload) fit
			require.ErrorIs(t, tgt.WriteBatch(ctx, msgs), syscall.ENOSPC)
			disk.setRoom(0) // still full on the first retry
			require.ErrorIs(t, tgt.WriteBatch(ctx, msgs), syscall.ENOSPC)
			disk.setRoom(-1) // a consumer made room
			require.NoError(t, tgt.WriteBatch(ctx, msgs))
			// The same messages again, after success: written again, since
			// the route only redelivers what failed.
			require.NoError(t, tgt.WriteBatch(ctx, msgs[:1]))
			require.NoError(t, tgt.Close(ctx, nil))

			src, _, err := e.NewSource(bridge.Endpoint{URL: "dir-spool:///s?backend=full"})
			require.NoError(t, err)
			src.(bridge.Drainer).SetDrain(true)
			require.NoError(t, src.Connect(ctx))
			defer src.Close(ctx)
			var got []string
			for {
				ms, ack, err := src.ReadBatch(ctx, 100)
				if err != nil {
					require.ErrorIs(t, err, bridge.ErrEndOfInput)
					break
				}
				for _, m := range ms {
					got = append(got, m.ID+"="+string(m.Payload))
				}
				require.NoError(t, ack(ctx, nil))
			}
			sort.Strings(got)
			assert.Equal(t, []string{"id-0=0", "id-0=0", "id-1=1", "id-1=7", "id-2=2", "id-3=3", "id-4=4", "id-5=5", "id-6=6", "id-8=8", "id-9=9"}, got)
		})
	}
}
