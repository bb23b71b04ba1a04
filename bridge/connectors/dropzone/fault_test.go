//go:build unix

package dropzone_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
	"github.com/mqb-project/mqb/core"
)

// faultFS interposes on the FS the connector opens.
type faultFS struct {
	dropzone.FS
	mu sync.Mutex
	// beforeRename runs ahead of each Rename; an error from it is returned
	// instead of renaming.
	beforeRename func(oldname, newname string) error
	// wrapFile, when set, wraps each file CreateExcl returns.
	wrapFile func(name string, f core.File) core.File
}

func (f *faultFS) Rename(oldname, newname string) error {
	f.mu.Lock()
	hook := f.beforeRename
	f.mu.Unlock()
	if hook != nil {
		if err := hook(oldname, newname); err != nil {
			return err
		}
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultFS) CreateExcl(name string) (core.File, error) {
	file, err := f.FS.CreateExcl(name)
	if err == nil && f.wrapFile != nil {
		file = f.wrapFile(name, file)
	}
	return file, err
}

// interpose makes the connector use fault for every FS it opens.
func interpose(t *testing.T, fault *faultFS) {
	dropzone.Interpose(t, func(_ string, fsys dropzone.FS) dropzone.FS {
		fault.FS = fsys
		return fault
	})
}

// tornFile writes half of the buffer of its failAt-th Write (counting from
// 1 over every tornFile sharing the counter) and then fails, as a full disk
// does.
type tornFile struct {
	core.File
	writes *int
	failAt int
}

func (f *tornFile) Write(p []byte) (int, error) {
	*f.writes++
	if *f.writes == f.failAt {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: "torn", Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func readVisible(t *testing.T, dir string) []string {
	t.Helper()
	vis, hidden := listFiles(t, dir)
	assert.Equal(t, []string{dropzone.WriterLockFile}, hidden, "no hidden file is left behind")
	var out []string
	for _, n := range vis {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// TestPublishNeverReplaces: a file that appears under the final name at
// the last moment, after any check the writer could make, is never
// replaced; the writer publishes under another name.
func TestPublishNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	var once sync.Once
	fault := &faultFS{}
	fault.beforeRename = func(_, newname string) error {
		if !strings.HasPrefix(newname, ".") {
			once.Do(func() {
				require.NoError(t, os.WriteFile(filepath.Join(dir, newname), []byte("someone else's\n"), 0o600))
			})
		}
		return nil
	}
	interpose(t, fault)
	tgt := newTarget(t, env(), "dropzone://"+dir+"?format=lines&roll_count=2&roll_interval=0s")
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs("a", "b")))
	require.NoError(t, tgt.Close(context.Background(), nil))
	assert.ElementsMatch(t, []string{"someone else's\n", "a\nb\n"}, readVisible(t, dir))
}

// TestFailedWriteIsRetriedWithoutItsBytes: a write that fails part way
// (disk full) leaves bytes past the acknowledged length; the retry of the
// batch writes it once, after the acknowledged content only, and a csv
// header is written once.
func TestFailedWriteIsRetriedWithoutItsBytes(t *testing.T) {
	cases := []struct {
		format string
		failAt int
		want   string
	}{
		{"lines", 1, "a\nb\nc\nd\n"},
		{"lines", 2, "a\nb\nc\nd\n"},
		{"csv", 1, "id\na\nb\nc\nd\n"},
		{"csv", 2, "id\na\nb\nc\nd\n"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s write %d", c.format, c.failAt), func(t *testing.T) {
			dir := t.TempDir()
			writes := 0
			interpose(t, &faultFS{wrapFile: func(name string, f core.File) core.File {
				return &tornFile{File: f, writes: &writes, failAt: c.failAt}
			}})
			tgt := newTarget(t, env(), "dropzone://"+dir+"?format="+c.format+"&roll_count=10&roll_interval=0s")
			ctx := context.Background()
			batches := [][]*bridge.Message{records(c.format, "a", "b"), records(c.format, "c", "d")}
			for _, b := range batches {
				err := tgt.WriteBatch(ctx, b)
				if err != nil {
					require.ErrorIs(t, err, syscall.ENOSPC)
					require.NotErrorIs(t, err, bridge.ErrPermanent, "a full disk is worth retrying")
					err = tgt.WriteBatch(ctx, b)
				}
				require.NoError(t, err)
			}
			require.NoError(t, tgt.Close(ctx, nil))
			assert.Equal(t, []string{c.want}, readVisible(t, dir))
		})
	}
}

// TestFailedLengthRecordIsRetried: when recording a batch's length in the
// hidden name fails, the batch is not acknowledged, and its retry does not
// write it twice.
func TestFailedLengthRecordIsRetried(t *testing.T) {
	for _, format := range []string{"lines", "csv"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			failed := false
			interpose(t, &faultFS{beforeRename: func(oldname, newname string) error {
				if !failed && strings.HasSuffix(newname, ".partial") {
					failed = true
					return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EIO}
				}
				return nil
			}})
			tgt := newTarget(t, env(), "dropzone://"+dir+"?format="+format+"&roll_count=10&roll_interval=0s")
			ctx := context.Background()
			first := records(format, "a", "b")
			err := tgt.WriteBatch(ctx, first)
			require.ErrorIs(t, err, syscall.EIO)
			require.NoError(t, tgt.WriteBatch(ctx, first))
			require.NoError(t, tgt.WriteBatch(ctx, records(format, "c")))
			require.NoError(t, tgt.Close(ctx, nil))
			want := "a\nb\nc\n"
			if format == "csv" {
				want = "id\n" + want
			}
			assert.Equal(t, []string{want}, readVisible(t, dir))
		})
	}
}

// records returns messages holding ids in format: a JSON object for csv.
func records(format string, ids ...string) []*bridge.Message {
	out := msgs(ids...)
	if format == "csv" {
		for _, m := range out {
			m.Payload = []byte(`{"id":"` + m.ID + `"}`)
		}
	}
	return out
}
