package memfs

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/core"
)

// countingFs counts every call into an afero.Fs and into the files it opens.
type countingFs struct {
	afero.Fs
	calls *atomic.Int64
}

func (c countingFs) file(f afero.File, err error) (afero.File, error) {
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, calls: c.calls}, nil
}

func (c countingFs) Create(name string) (afero.File, error) {
	c.calls.Add(1)
	return c.file(c.Fs.Create(name))
}

func (c countingFs) Open(name string) (afero.File, error) {
	c.calls.Add(1)
	return c.file(c.Fs.Open(name))
}

func (c countingFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	c.calls.Add(1)
	return c.file(c.Fs.OpenFile(name, flag, perm))
}

func (c countingFs) Mkdir(name string, perm os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.Mkdir(name, perm)
}

func (c countingFs) MkdirAll(name string, perm os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.MkdirAll(name, perm)
}

func (c countingFs) Remove(name string) error {
	c.calls.Add(1)
	return c.Fs.Remove(name)
}

func (c countingFs) RemoveAll(name string) error {
	c.calls.Add(1)
	return c.Fs.RemoveAll(name)
}

func (c countingFs) Rename(oldname, newname string) error {
	c.calls.Add(1)
	return c.Fs.Rename(oldname, newname)
}

func (c countingFs) Stat(name string) (os.FileInfo, error) {
	c.calls.Add(1)
	return c.Fs.Stat(name)
}

func (c countingFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	c.calls.Add(1)
	if l, ok := c.Fs.(afero.Lstater); ok {
		return l.LstatIfPossible(name)
	}
	fi, err := c.Fs.Stat(name)
	return fi, false, err
}

func (c countingFs) Chmod(name string, mode os.FileMode) error {
	c.calls.Add(1)
	return c.Fs.Chmod(name, mode)
}

func (c countingFs) Chown(name string, uid, gid int) error {
	c.calls.Add(1)
	return c.Fs.Chown(name, uid, gid)
}

func (c countingFs) Chtimes(name string, atime, mtime time.Time) error {
	c.calls.Add(1)
	return c.Fs.Chtimes(name, atime, mtime)
}

type countingFile struct {
	afero.File
	calls *atomic.Int64
}

func (f countingFile) Close() error                { f.calls.Add(1); return f.File.Close() }
func (f countingFile) Read(p []byte) (int, error)  { f.calls.Add(1); return f.File.Read(p) }
func (f countingFile) Write(p []byte) (int, error) { f.calls.Add(1); return f.File.Write(p) }
func (f countingFile) Sync() error                 { f.calls.Add(1); return f.File.Sync() }
func (f countingFile) Stat() (os.FileInfo, error)  { f.calls.Add(1); return f.File.Stat() }
func (f countingFile) Truncate(size int64) error   { f.calls.Add(1); return f.File.Truncate(size) }
func (f countingFile) WriteString(s string) (int, error) {
	f.calls.Add(1)
	return f.File.WriteString(s)
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.calls.Add(1)
	return f.File.ReadAt(p, off)
}

func (f countingFile) WriteAt(p []byte, off int64) (int, error) {
	f.calls.Add(1)
	return f.File.WriteAt(p, off)
}

func (f countingFile) Seek(off int64, whence int) (int64, error) {
	f.calls.Add(1)
	return f.File.Seek(off, whence)
}

func (f countingFile) Readdir(n int) ([]os.FileInfo, error) {
	f.calls.Add(1)
	return f.File.Readdir(n)
}

func (f countingFile) Readdirnames(n int) ([]string, error) {
	f.calls.Add(1)
	return f.File.Readdirnames(n)
}

// filled returns an FS over a counting MemMapFs whose directory q holds n
// durable files.
func filled(t *testing.T, n int) (*FS, *atomic.Int64) {
	t.Helper()
	calls := &atomic.Int64{}
	f := newWithBase(countingFs{Fs: afero.NewMemMapFs(), calls: calls})
	require.NoError(t, f.Mkdir("q"))
	for i := range n {
		w, err := f.CreateExcl(fmt.Sprintf("q/%06d", i))
		require.NoError(t, err)
		_, err = w.Write([]byte("payload"))
		require.NoError(t, err)
		require.NoError(t, w.Sync())
		require.NoError(t, w.Close())
	}
	require.NoError(t, f.SyncDir("q"))
	require.NoError(t, f.SyncDir("."))
	return f, calls
}

// cycle takes one message through f as a producer and a consumer would, and
// returns how many calls into the base each step made.
func cycle(t *testing.T, f *FS, calls *atomic.Int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	step := func(name string, fn func() error) {
		t.Helper()
		before := calls.Load()
		require.NoError(t, fn(), name)
		out[name] = calls.Load() - before
	}
	var w, r core.File
	var c core.Claim
	step("CreateExcl", func() (err error) { w, err = f.CreateExcl("q/m.tmp"); return err })
	step("Write", func() error { _, err := w.Write([]byte("message")); return err })
	step("SyncAll", f.SyncAll)
	step("Sync", w.Sync)
	step("Close", w.Close)
	step("Rename", func() error { return f.Rename("q/m.tmp", "q/m") })
	step("SyncDir", func() error { return f.SyncDir("q") })
	step("Stat", func() error { _, err := f.Stat("q/m"); return err })
	step("StatDir", func() error { _, err := f.Stat("q"); return err })
	step("ReadDir", func() error { _, err := f.ReadDir("."); return err })
	step("Open", func() (err error) { r, err = f.Open("q/m"); return err })
	step("Read", func() error { _, err := io.ReadAll(r); return err })
	step("CloseRead", r.Close)
	step("Lock", func() (err error) { c, err = f.Lock("q/CLAIM"); return err })
	step("ClaimWrite", func() error { _, err := c.WriteAt([]byte("me"), 0); return err })
	step("ClaimSync", func() error { return c.Sync() })
	step("Release", c.Release)
	step("RenameDirOfAll", func() error { return f.Rename("q", "r") })
	step("RenameDirBack", func() error { return f.Rename("r", "q") })
	step("Mkdir", func() error { return f.Mkdir("d") })
	step("RemoveDir", func() error { return f.Remove("d") })
	step("Remove", func() error { return f.Remove("q/m") })
	step("SyncDirAfterRemove", func() error { return f.SyncDir("q") })
	step("SyncAllIdle", f.SyncAll)
	return out
}

// Every operation makes as many calls into the base with 10,000 files as
// with 10 (Crash, which copies them all, aside), and a rename, a directory
// or a removal none at all: they only change memfs's own tree.
func TestCallsIndependentOfFileCount(t *testing.T) {
	f, calls := filled(t, 10)
	small := cycle(t, f, calls)
	f, calls = filled(t, 10000)
	large := cycle(t, f, calls)
	require.Equal(t, small, large, "calls into the base per operation, 10 vs 10,000 files")
	t.Logf("calls per operation: %v", large)
	for _, op := range []string{"Rename", "RenameDirOfAll", "Mkdir", "RemoveDir", "Remove", "StatDir"} {
		require.Zero(t, large[op], "%s touches only memfs's tree", op)
	}
}
