//go:build linux

package osfs_test

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

func TestCreateExcl(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		f, err := fsys.CreateExcl("a")
		require.NoError(t, err)
		_, err = f.Write([]byte("hello"))
		require.NoError(t, err)
		_, err = f.Read(make([]byte, 1))
		require.Error(t, err, "a created file is write-only")
		fi, err := f.Stat()
		require.NoError(t, err)
		assert.Equal(t, int64(5), fi.Size())
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		b, err := os.ReadFile(filepath.Join(root, "a"))
		require.NoError(t, err)
		require.Equal(t, "hello", string(b))

		_, err = fsys.CreateExcl("a")
		requirePathErr(t, err, "a", fs.ErrExist)
		require.Equal(t, "hello", readFS(t, fsys, "a"), "a failed CreateExcl must not touch the file")

		require.NoError(t, fsys.Mkdir("d"))
		createFS(t, fsys, "d/b", "x")
		_, err = fsys.CreateExcl("d")
		requirePathErr(t, err, "d", fs.ErrExist)
		_, err = fsys.CreateExcl(".")
		require.Error(t, err)
		_, err = fsys.CreateExcl("nodir/b")
		requirePathErr(t, err, "nodir/b", fs.ErrNotExist)
		_, err = fsys.CreateExcl("a/b")
		requirePathErr(t, err, "a/b", syscall.ENOTDIR)
	})
}

func TestWriteNewFile(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		require.NoError(t, fsys.Mkdir("d"))
		for _, sync := range []bool{false, true} {
			name := fmt.Sprintf("d/f-%v", sync)
			made, err := fsys.WriteNewFile(name, []byte("hello"), sync)
			require.NoError(t, err)
			require.True(t, made)
			require.Equal(t, "hello", readFS(t, fsys, name))
			fi, err := os.Stat(filepath.Join(root, name))
			require.NoError(t, err)
			require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm(), "created with the FS's file mode")

			made, err = fsys.WriteNewFile(name, []byte("other"), sync)
			requirePathErr(t, err, name, fs.ErrExist)
			require.False(t, made)
			require.Equal(t, "hello", readFS(t, fsys, name), "a failed create must not touch the file")
		}
		made, err := fsys.WriteNewFile("empty", nil, false)
		require.NoError(t, err)
		require.True(t, made)
		require.Empty(t, readFS(t, fsys, "empty"))

		made, err = fsys.WriteNewFile("nodir/f", []byte("x"), false)
		requirePathErr(t, err, "nodir/f", fs.ErrNotExist)
		require.False(t, made)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "create", pe.Op)
	})
}

func TestOpen(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		writeFile(t, filepath.Join(root, "d", "f"), "content")
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))

		f, err := fsys.Open("d/f")
		require.NoError(t, err)
		_, err = f.Write([]byte("x"))
		require.Error(t, err, "an opened file is read-only")
		b, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Equal(t, "content", string(b))
		fi, err := f.Stat()
		require.NoError(t, err)
		assert.Equal(t, "f", fi.Name())
		require.NoError(t, f.Close())

		_, err = fsys.Open("missing")
		requirePathErr(t, err, "missing", fs.ErrNotExist)
		_, err = fsys.Open("d")
		requirePathErr(t, err, "d", osfs.ErrNotRegular)
		_, err = fsys.Open(".")
		requirePathErr(t, err, ".", osfs.ErrNotRegular)

		// A FIFO without a writer would block a plain open forever.
		requireFIFORefused(t, "Open", func() error { _, err := fsys.Open("fifo"); return err })
	})
}

func TestReadWholeFile(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		writeFile(t, filepath.Join(root, "d", "f"), "content")
		writeFile(t, filepath.Join(root, "empty"), "")
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))

		// Into the caller's buffer when it has room, asked for by size.
		lent := make([]byte, 0, 64)
		var asked []int
		b, err := fsys.ReadWholeFile("d/f", func(n int) []byte { asked = append(asked, n); return lent })
		require.NoError(t, err)
		require.Equal(t, "content", string(b))
		require.Equal(t, []int{7}, asked)
		require.Same(t, &lent[:1][0], &b[0], "read into the lent buffer")

		// A buffer too small, or none, gives a new one.
		b, err = fsys.ReadWholeFile("d/f", func(int) []byte { return make([]byte, 3) })
		require.NoError(t, err)
		require.Equal(t, "content", string(b))
		b, err = fsys.ReadWholeFile("d/f", func(int) []byte { return nil })
		require.NoError(t, err)
		require.Equal(t, "content", string(b))
		b, err = fsys.ReadWholeFile("empty", func(int) []byte { return nil })
		require.NoError(t, err)
		require.Empty(t, b)

		_, err = fsys.ReadWholeFile("missing", func(int) []byte { return nil })
		requirePathErr(t, err, "missing", fs.ErrNotExist)
		_, err = fsys.ReadWholeFile("d", func(int) []byte { return nil })
		requirePathErr(t, err, "d", osfs.ErrNotRegular)
		requireFIFORefused(t, "ReadWholeFile", func() error {
			_, err := fsys.ReadWholeFile("fifo", func(int) []byte { return nil })
			return err
		})
	})
}

// requireFIFORefused runs call, which reads the FIFO "fifo" (no writer),
// and requires ErrNotRegular from it within five seconds: it must not
// block.
func requireFIFORefused(t *testing.T, what string, call func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		requirePathErr(t, err, "fifo", osfs.ErrNotRegular)
	case <-time.After(5 * time.Second):
		t.Fatal(what + " blocked on a FIFO")
	}
}

// TestReadWholeFiles checks the batch read: each file into Into, Lend's
// buffer or new memory, a missing Optional file passed over, and the
// reads stopped after the first other failure.
func TestReadWholeFiles(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		writeFile(t, filepath.Join(root, "d", "a"), "aaaa")
		writeFile(t, filepath.Join(root, "d", "b"), "bb")
		writeFile(t, filepath.Join(root, "c"), "cccccccc")
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))

		into := make([]byte, 0, 4)
		var lent []int
		lend := func(n int) []byte { lent = append(lent, n); return make([]byte, n, 64) }
		reads := []core.WholeRead{
			{Name: "d/a", Into: into, Lend: lend},             // fits Into
			{Name: "d/missing", Optional: true},               // passed over
			{Name: "c", Into: make([]byte, 0, 4), Lend: lend}, // too big for Into: lent
			{Name: "d/b"},                  // new memory
			{Name: "fifo", Optional: true}, // not missing: stops
			{Name: "d/a"},                  // not tried
		}
		require.Equal(t, 5, fsys.ReadWholeFiles(reads))
		require.NoError(t, reads[0].Err)
		require.Equal(t, "aaaa", string(reads[0].Data))
		require.Same(t, &into[:1][0], &reads[0].Data[0], "read into Into")
		requirePathErr(t, reads[1].Err, "d/missing", fs.ErrNotExist)
		require.NoError(t, reads[2].Err)
		require.Equal(t, "cccccccc", string(reads[2].Data))
		require.Equal(t, []int{8}, lent, "Lend asked once, for c's size")
		require.Equal(t, 64, cap(reads[2].Data), "read into the lent buffer")
		require.Equal(t, "bb", string(reads[3].Data))
		requirePathErr(t, reads[4].Err, "fifo", osfs.ErrNotRegular)
		require.Nil(t, reads[5].Data)
		require.NoError(t, reads[5].Err)

		reads = []core.WholeRead{{Name: "missing"}, {Name: "c"}}
		require.Equal(t, 1, fsys.ReadWholeFiles(reads), "a missing file that is not Optional stops the reads")
		requirePathErr(t, reads[0].Err, "missing", fs.ErrNotExist)

		reads = []core.WholeRead{{Name: "../escape"}}
		require.Equal(t, 1, fsys.ReadWholeFiles(reads))
		requirePathErr(t, reads[0].Err, "../escape", fs.ErrInvalid)
	})
}

// TestReadWholeFilesProbe checks the reads that start before the size is
// known: a file that ends inside the probe (Into with spare room, or Probe)
// is whole without an fstat, and a Probe's bytes are copied to Lend's
// buffer of the exact size; a file that fills the probe, an empty one and
// files that are not regular take the fstat path, which checks them.
func TestReadWholeFilesProbe(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		writeFile(t, filepath.Join(root, "small"), "abc")
		writeFile(t, filepath.Join(root, "big"), "0123456789")
		writeFile(t, filepath.Join(root, "empty"), "")
		require.NoError(t, os.Mkdir(filepath.Join(root, "dir"), 0o700))
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))

		probe := make([]byte, 8)
		into := make([]byte, 0, 8)
		var lent []int
		lend := func(n int) []byte { lent = append(lent, n); return make([]byte, n) }
		reads := []core.WholeRead{
			{Name: "small", Probe: probe, Lend: lend}, // ends inside the probe: copied out
			{Name: "big", Probe: probe, Lend: lend},   // fills the probe: sized, the rest read
			{Name: "small", Into: into},               // ends inside Into: read in place
			{Name: "big", Into: make([]byte, 0, 8)},   // fills Into: new memory
			{Name: "empty", Probe: probe},
			{Name: "dir", Probe: probe, Optional: true},
			{Name: "fifo", Probe: probe, Optional: true},
		}
		require.Equal(t, 5, fsys.ReadWholeFiles(reads[:5]))
		for i, want := range []string{"abc", "0123456789", "abc", "0123456789", ""} {
			require.NoError(t, reads[i].Err, reads[i].Name)
			require.Equal(t, want, string(reads[i].Data), reads[i].Name)
		}
		require.Equal(t, []int{3, 10}, lent, "Lend asked for each file's exact size")
		require.NotSame(t, &probe[0], &reads[0].Data[0], "a probe's bytes are copied out")
		require.Equal(t, 3, cap(reads[0].Data))
		require.Same(t, &into[:1][0], &reads[2].Data[0], "Into serves as its own probe")
		require.Equal(t, 0, len(reads[4].Data))

		require.Equal(t, 1, fsys.ReadWholeFiles(reads[5:6]))
		requirePathErr(t, reads[5].Err, "dir", osfs.ErrNotRegular)
		requireFIFORefused(t, "ReadWholeFiles with a probe", func() error {
			fsys.ReadWholeFiles(reads[6:7])
			return reads[6].Err
		})
	})
}

// TestReadWholeFilesLeaveAbove checks that a file larger than LeaveAbove
// is left unread with its size in Left, whether the fstat (no probe, or a
// probe it fills) or a short probe read found it large, that a file of
// LeaveAbove bytes or fewer is read as usual, and that Lend is not asked
// for a file left unread.
func TestReadWholeFilesLeaveAbove(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		writeFile(t, filepath.Join(root, "small"), "abc")
		writeFile(t, filepath.Join(root, "big"), "0123456789")
		var lent []int
		lend := func(n int) []byte { lent = append(lent, n); return make([]byte, n) }
		reads := []core.WholeRead{
			{Name: "big", Lend: lend, LeaveAbove: 5},                           // sized by the fstat
			{Name: "big", Probe: make([]byte, 8), Lend: lend, LeaveAbove: 5},   // fills the probe
			{Name: "big", Probe: make([]byte, 64), Lend: lend, LeaveAbove: 5},  // ends inside the probe
			{Name: "small", Probe: make([]byte, 8), Lend: lend, LeaveAbove: 5}, // small: read
			{Name: "big", Lend: lend, LeaveAbove: 10, Left: 99},                // exactly LeaveAbove: read
		}
		require.Equal(t, len(reads), fsys.ReadWholeFiles(reads))
		for i, r := range reads[:3] {
			require.NoError(t, r.Err, "read %d", i)
			require.Nil(t, r.Data, "read %d: a file above LeaveAbove has no Data", i)
			require.EqualValues(t, 10, r.Left, "read %d: Left is the file's size", i)
		}
		require.Equal(t, "abc", string(reads[3].Data))
		require.Equal(t, "0123456789", string(reads[4].Data))
		for _, r := range reads[3:] {
			require.NoError(t, r.Err, r.Name)
			require.Zero(t, r.Left, "%s: read, so nothing left", r.Name)
		}
		require.Equal(t, []int{3, 10}, lent, "Lend asked only for the files read")
	})
}

// TestReadWholeFileSizeAtOpen checks that a file read whole is read up to
// the size it had when it was opened: bytes appended while it is read are
// not, and a file cut short is returned as far as it goes.
func TestReadWholeFileSizeAtOpen(t *testing.T) {
	root := t.TempDir()
	fsys, err := osfs.New(root, osfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fsys.Close() })
	path := filepath.Join(root, "f")
	writeFile(t, path, "0123456789")

	b, err := fsys.ReadWholeFile("f", func(n int) []byte {
		// Between the fstat and the read: the file grows.
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("abc")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return make([]byte, n, n+16)
	})
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(b))

	b, err = fsys.ReadWholeFile("f", func(n int) []byte {
		require.NoError(t, os.Truncate(path, 4)) // and now it shrinks
		return make([]byte, n)
	})
	require.NoError(t, err)
	require.Equal(t, "0123", string(b))
}

func TestReadDir(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		require.NoError(t, fsys.Mkdir("d"))
		createFS(t, fsys, "d/b", "bb")
		createFS(t, fsys, "d/a", "a")
		require.NoError(t, fsys.Mkdir("d/c"))
		require.NoError(t, os.Symlink("a", filepath.Join(root, "d", "e")))
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "d", "f"), 0o600))

		entries, err := fsys.ReadDir("d")
		require.NoError(t, err)
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%s %v %v", e.Name(), e.Type(), e.IsDir()))
		}
		require.Equal(t, []string{
			"a ---------- false",
			"b ---------- false",
			"c d--------- true",
			"e L--------- false",
			"f p--------- false",
		}, got)

		fi, err := entries[1].Info()
		require.NoError(t, err)
		assert.Equal(t, int64(2), fi.Size())
		fi, err = entries[3].Info()
		require.NoError(t, err)
		assert.Equal(t, fs.ModeSymlink, fi.Mode().Type())
		require.NoError(t, fsys.Remove("d/a"))
		_, err = entries[0].Info()
		require.ErrorIs(t, err, fs.ErrNotExist)

		entries, err = fsys.ReadDir("d/c")
		require.NoError(t, err)
		require.Empty(t, entries)

		_, err = fsys.ReadDir("missing")
		requirePathErr(t, err, "missing", fs.ErrNotExist)
		_, err = fsys.ReadDir("d/b")
		requirePathErr(t, err, "d/b", syscall.ENOTDIR)
	})
}

func TestReadDirMany(t *testing.T) {
	// Enough entries to need several getdents64 calls.
	root := t.TempDir()
	const n = 3000
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("%09d.bin", n-i)), nil, 0o600))
	}
	entries, err := newFS(t, root).ReadDir(".")
	require.NoError(t, err)
	require.Len(t, entries, n)
	for i, e := range entries {
		require.Equal(t, fmt.Sprintf("%09d.bin", i+1), e.Name())
	}
}

func TestFile(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		require.NoError(t, fsys.Mkdir("d"))
		w, err := fsys.CreateExcl("d/f")
		require.NoError(t, err)
		n, err := w.Write(nil)
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = w.Write([]byte("hello"))
		require.NoError(t, err)
		require.Equal(t, 5, n)
		_, err = w.Read(make([]byte, 1))
		requirePathErr(t, err, "d/f", syscall.EBADF)

		fi, err := w.Stat()
		require.NoError(t, err)
		want, err := os.Lstat(filepath.Join(root, "d", "f"))
		require.NoError(t, err)
		assert.Equal(t, "f", fi.Name())
		assert.Equal(t, int64(5), fi.Size())
		assert.Equal(t, want.Mode(), fi.Mode())
		assert.True(t, want.ModTime().Equal(fi.ModTime()))
		assert.False(t, fi.IsDir())
		st, ok := fi.Sys().(*syscall.Stat_t)
		require.True(t, ok, "Sys is %T", fi.Sys())
		assert.Equal(t, want.Sys().(*syscall.Stat_t).Ino, st.Ino)
		require.NoError(t, w.Close())

		r, err := fsys.Open("d/f")
		require.NoError(t, err)
		n, err = r.Read(nil)
		require.NoError(t, err)
		require.Zero(t, n)
		buf := make([]byte, 8)
		n, err = r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "hello", string(buf[:n]))
		n, err = r.Read(buf)
		require.Equal(t, io.EOF, err, "the end of the file is a bare io.EOF")
		require.Zero(t, n)
		_, err = r.Write([]byte("x"))
		requirePathErr(t, err, "d/f", syscall.EBADF)
		require.NoError(t, r.Close())

		// After Close every call fails, and the descriptor is never used
		// again (it may belong to another file by now).
		requirePathErr(t, r.Close(), "d/f", fs.ErrClosed)
		_, err = r.Read(buf)
		requirePathErr(t, err, "d/f", fs.ErrClosed)
		_, err = r.Write(buf)
		requirePathErr(t, err, "d/f", fs.ErrClosed)
		requirePathErr(t, r.Sync(), "d/f", fs.ErrClosed)
		_, err = r.Stat()
		requirePathErr(t, err, "d/f", fs.ErrClosed)
	})
}

func TestFileConcurrentClose(t *testing.T) {
	// Close may race with calls in progress (run with -race): each call
	// either completes on the open descriptor or reports fs.ErrClosed.
	fsys := newFS(t, t.TempDir())
	createFS(t, fsys, "f", "content")
	for range 50 {
		f, err := fsys.Open("f")
		require.NoError(t, err)
		done := make(chan error, 3)
		go func() { _, err := f.Read(make([]byte, 3)); done <- err }()
		go func() { _, err := f.Stat(); done <- err }()
		go func() { done <- f.Close() }()
		for range 3 {
			if err := <-done; err != nil {
				require.ErrorIs(t, err, fs.ErrClosed)
			}
		}
		require.ErrorIs(t, f.Close(), fs.ErrClosed)
	}
}
