package memfs_test

import (
	"io"
	"io/fs"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/core"
)

func TestCreateExcl(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "a", "x", false)
	write(t, fsys, "file", "x", false)
	mkdir(t, fsys, "d")

	for _, tc := range []struct {
		name    string
		wantErr error
	}{
		{"b", nil},
		{"d/b", nil},
		{"a", fs.ErrExist},
		{"d", fs.ErrExist},
		{".", fs.ErrExist},
		{"missing/b", fs.ErrNotExist},
		{"file/b", syscall.ENOTDIR},
		{"/abs", fs.ErrInvalid},
		{"d/../a", fs.ErrInvalid},
		{"", fs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fsys.CreateExcl(tc.name)
			if tc.wantErr != nil {
				requirePathErr(t, err, tc.name, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, f.Close())
		})
	}
}

func TestFileHandles(t *testing.T) {
	fsys := memfs.New()
	w, err := fsys.CreateExcl("f")
	require.NoError(t, err)
	_, err = w.Write([]byte("hello "))
	require.NoError(t, err)
	_, err = w.Write([]byte("world"))
	require.NoError(t, err)
	_, err = w.Read(make([]byte, 1))
	requirePathErr(t, err, "f", syscall.EBADF)
	fi, err := w.Stat()
	require.NoError(t, err)
	assert.Equal(t, "f", fi.Name())
	assert.EqualValues(t, 11, fi.Size())
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	requirePathErr(t, w.Close(), "f", fs.ErrClosed)
	_, err = w.Write([]byte("x"))
	requirePathErr(t, err, "f", fs.ErrClosed)
	requirePathErr(t, w.Sync(), "f", fs.ErrClosed)

	r, err := fsys.Open("f")
	require.NoError(t, err)
	_, err = r.Write([]byte("x"))
	requirePathErr(t, err, "f", syscall.EBADF)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "hello world", string(b))
	n, err := r.Read(make([]byte, 1))
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err, "EOF is returned unwrapped")
	require.NoError(t, r.Close())
	_, err = r.Read(make([]byte, 1))
	requirePathErr(t, err, "f", fs.ErrClosed)
}

func TestOpen(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "d")
	write(t, fsys, "d/f", "data", false)
	assert.Equal(t, "data", read(t, fsys, "d/f"))

	_, err := fsys.Open("d/missing")
	requirePathErr(t, err, "d/missing", fs.ErrNotExist)
	_, err = fsys.Open("d")
	requirePathErr(t, err, "d", syscall.EISDIR)
	_, err = fsys.Open("d/f/x")
	requirePathErr(t, err, "d/f/x", syscall.ENOTDIR)
	_, err = fsys.Open("./d/f")
	requirePathErr(t, err, "./d/f", fs.ErrInvalid)
}

func TestRename(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		wantErr  error
		errPath  string
	}{
		{name: "file", old: "a", new: "b"},
		{name: "into dir", old: "a", new: "d/a"},
		{name: "dir", old: "d", new: "e"},
		{name: "dir into other dir", old: "d", new: "full/d"},
		{name: "existing file", old: "a", new: "full/x", wantErr: fs.ErrExist, errPath: "full/x"},
		{name: "onto itself", old: "a", new: "a", wantErr: fs.ErrExist, errPath: "a"},
		{name: "existing dir", old: "a", new: "d", wantErr: fs.ErrExist, errPath: "d"},
		{name: "onto root", old: "a", new: ".", wantErr: fs.ErrExist, errPath: "."},
		{name: "missing source", old: "nope", new: "b", wantErr: fs.ErrNotExist, errPath: "nope"},
		{name: "missing target dir", old: "a", new: "nodir/b", wantErr: fs.ErrNotExist, errPath: "nodir/b"},
		{name: "dir into itself", old: "full", new: "full/sub", wantErr: syscall.EINVAL, errPath: "full/sub"},
		{name: "root", old: ".", new: "r", wantErr: syscall.EBUSY, errPath: "."},
		{name: "invalid", old: "a", new: "../b", wantErr: fs.ErrInvalid, errPath: "../b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := memfs.New()
			write(t, fsys, "a", "A", false)
			mkdir(t, fsys, "d")
			mkdir(t, fsys, "full")
			write(t, fsys, "full/x", "X", false)
			before := tree(t, fsys)

			err := fsys.Rename(tc.old, tc.new)
			if tc.wantErr != nil {
				requirePathErr(t, err, tc.errPath, tc.wantErr)
				assert.Equal(t, before, tree(t, fsys), "a failed rename changes nothing")
				return
			}
			require.NoError(t, err)
			_, err = fsys.Stat(tc.old)
			requirePathErr(t, err, tc.old, fs.ErrNotExist)
			_, err = fsys.Stat(tc.new)
			require.NoError(t, err)
		})
	}

	t.Run("dir keeps its content", func(t *testing.T) {
		fsys := memfs.New()
		mkdir(t, fsys, "d")
		mkdir(t, fsys, "d/s")
		write(t, fsys, "d/s/f", "deep", false)
		require.NoError(t, fsys.Rename("d", "e"))
		assert.Equal(t, map[string]string{"e": "/", "e/s": "/", "e/s/f": "deep"}, tree(t, fsys))
	})

	t.Run("open writer follows the file", func(t *testing.T) {
		fsys := memfs.New()
		w, err := fsys.CreateExcl("a.tmp")
		require.NoError(t, err)
		_, err = w.Write([]byte("one "))
		require.NoError(t, err)
		require.NoError(t, fsys.Rename("a.tmp", "a"))
		_, err = w.Write([]byte("two"))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		assert.Equal(t, "one two", read(t, fsys, "a"))
	})
}

func TestRemove(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "d")
	mkdir(t, fsys, "empty")
	write(t, fsys, "d/f", "x", false)

	requirePathErr(t, fsys.Remove("d"), "d", syscall.ENOTEMPTY)
	requirePathErr(t, fsys.Remove("nope"), "nope", fs.ErrNotExist)
	requirePathErr(t, fsys.Remove("d/nope"), "d/nope", fs.ErrNotExist)
	requirePathErr(t, fsys.Remove("."), ".", syscall.EBUSY)
	requirePathErr(t, fsys.Remove("d/"), "d/", fs.ErrInvalid)

	require.NoError(t, fsys.Remove("empty"))
	require.NoError(t, fsys.Remove("d/f"))
	requirePathErr(t, fsys.Remove("d/f"), "d/f", fs.ErrNotExist)
	require.NoError(t, fsys.Remove("d"))
	assert.Empty(t, tree(t, fsys))

	t.Run("open reader keeps reading", func(t *testing.T) {
		fsys := memfs.New()
		write(t, fsys, "f", "still here", false)
		r, err := fsys.Open("f")
		require.NoError(t, err)
		require.NoError(t, fsys.Remove("f"))
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, "still here", string(b))
	})
}

func TestMkdir(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "d")
	write(t, fsys, "f", "", false)
	mkdir(t, fsys, "d/e")

	requirePathErr(t, fsys.Mkdir("d"), "d", fs.ErrExist)
	requirePathErr(t, fsys.Mkdir("f"), "f", fs.ErrExist)
	requirePathErr(t, fsys.Mkdir("."), ".", fs.ErrExist)
	requirePathErr(t, fsys.Mkdir("x/y"), "x/y", fs.ErrNotExist)
	requirePathErr(t, fsys.Mkdir("f/y"), "f/y", syscall.ENOTDIR)
	requirePathErr(t, fsys.Mkdir("d//e"), "d//e", fs.ErrInvalid)

	fi, err := fsys.Stat("d/e")
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, "e", fi.Name())
}

func TestReadDirSorted(t *testing.T) {
	fsys := memfs.New()
	names := []string{"b", "a", "c10", "c2", "B", "000001.bin", "000001.bin.tmp", "z"}
	for _, n := range names {
		write(t, fsys, n, n, false)
	}
	mkdir(t, fsys, "dir")
	names = append(names, "dir")
	sort.Strings(names)

	ents, err := fsys.ReadDir(".")
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, e.Name(), info.Name())
		if e.Name() == "dir" {
			assert.True(t, e.IsDir())
			assert.Equal(t, fs.ModeDir, e.Type())
		} else {
			assert.True(t, e.Type().IsRegular())
			assert.EqualValues(t, len(e.Name()), info.Size())
		}
	}
	assert.Equal(t, names, got)

	_, err = fsys.ReadDir("a")
	requirePathErr(t, err, "a", syscall.ENOTDIR)
	_, err = fsys.ReadDir("nope")
	requirePathErr(t, err, "nope", fs.ErrNotExist)
	ents, err = fsys.ReadDir("dir")
	require.NoError(t, err)
	assert.Empty(t, ents)
}

func TestStat(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "f", "12345", false)
	fi, err := fsys.Stat("f")
	require.NoError(t, err)
	assert.Equal(t, "f", fi.Name())
	assert.EqualValues(t, 5, fi.Size())
	assert.True(t, fi.Mode().IsRegular())

	fi, err = fsys.Stat(".")
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, ".", fi.Name())

	_, err = fsys.Stat("g")
	requirePathErr(t, err, "g", fs.ErrNotExist)
}

func TestInvalidNames(t *testing.T) {
	fsys := memfs.New()
	for _, name := range []string{"", "/", "/a", "a/", "./a", "a/./b", "..", "../a", "a/../b", "a//b"} {
		t.Run(name, func(t *testing.T) {
			_, err := fsys.CreateExcl(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
			_, err = fsys.Open(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
			requirePathErr(t, fsys.Mkdir(name), name, fs.ErrInvalid)
			requirePathErr(t, fsys.Remove(name), name, fs.ErrInvalid)
			requirePathErr(t, fsys.Rename(name, "x"), name, fs.ErrInvalid)
			_, err = fsys.ReadDir(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
			_, err = fsys.Stat(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
			requirePathErr(t, fsys.SyncDir(name), name, fs.ErrInvalid)
			_, err = fsys.Lock(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
			_, err = fsys.WatchDir(name)
			requirePathErr(t, err, name, fs.ErrInvalid)
		})
	}
}

func TestSyncDirErrors(t *testing.T) {
	fsys := memfs.New()
	write(t, fsys, "f", "", false)
	requirePathErr(t, fsys.SyncDir("f"), "f", syscall.ENOTDIR)
	requirePathErr(t, fsys.SyncDir("d"), "d", fs.ErrNotExist)
	require.NoError(t, fsys.SyncDir("."))
}

func TestOptionalInterfaces(t *testing.T) {
	var fsys core.FS = memfs.New()
	_, ok := fsys.(core.DirWatcher)
	assert.True(t, ok)
	_, ok = fsys.(core.FSSyncer)
	assert.True(t, ok)
}
