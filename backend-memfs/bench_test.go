package memfs_test

import (
	"fmt"
	"testing"

	memfs "github.com/mqb-project/mqb/backend-memfs"
)

// populate fills the directory q of a new FS with n synced, durable files.
func populate(b *testing.B, n int) *memfs.FS {
	b.Helper()
	fsys := memfs.New()
	mkdir(b, fsys, "q")
	for i := range n {
		write(b, fsys, fmt.Sprintf("q/%06d", i), "payload", true)
	}
	syncDir(b, fsys, "q")
	syncDir(b, fsys, ".")
	return fsys
}

// benchRename renames one file of a directory of n files back and forth,
// syncing the directory now and then as a spool would; the cost per rename
// must not depend on n.
func benchRename(b *testing.B, n int) {
	fsys := populate(b, n)
	names := [2]string{"q/000000", "q/moved"}
	i := 0
	for b.Loop() {
		if err := fsys.Rename(names[i%2], names[(i+1)%2]); err != nil {
			b.Fatal(err)
		}
		i++
		if i%1024 == 0 {
			if err := fsys.SyncDir("q"); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkRenameAt100(b *testing.B)   { benchRename(b, 100) }
func BenchmarkRenameAt10000(b *testing.B) { benchRename(b, 10000) }

// benchWrite is the producer's write path for one message: create a
// temporary file, write, sync the file system, rename it into place, sync the
// directory.
func benchWrite(b *testing.B, n int) {
	fsys := populate(b, n)
	data := []byte("payload")
	i := 0
	for b.Loop() {
		tmp, final := fmt.Sprintf("q/w%d.tmp", i), fmt.Sprintf("q/w%d", i)
		f, err := fsys.CreateExcl(tmp)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := fsys.SyncAll(); err != nil {
			b.Fatal(err)
		}
		if err := fsys.Rename(tmp, final); err != nil {
			b.Fatal(err)
		}
		if err := fsys.SyncDir("q"); err != nil {
			b.Fatal(err)
		}
		if err := fsys.Remove(final); err != nil { // keep the file count at n
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkWriteAt100(b *testing.B)   { benchWrite(b, 100) }
func BenchmarkWriteAt10000(b *testing.B) { benchWrite(b, 10000) }
