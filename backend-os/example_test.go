//go:build linux

package osfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// A durable, exclusive write: temporary name, Sync, rename without
// replacing, directory Sync.
func Example() {
	tmp, err := os.MkdirTemp("", "osfs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	fsys, err := osfs.New(filepath.Join(tmp, "spool"), osfs.Options{CreateRoot: true})
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()

	for range 2 {
		f, err := fsys.CreateExcl("000000001.bin.tmp")
		if err != nil {
			log.Fatal(err)
		}
		if _, err := f.Write([]byte("hello")); err != nil {
			log.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
		err = fsys.Rename("000000001.bin.tmp", "000000001.bin")
		if errors.Is(err, fs.ErrExist) {
			fmt.Println("not replaced:", err)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		if err := fsys.SyncDir("."); err != nil {
			log.Fatal(err)
		}
	}
	entries, err := fsys.ReadDir(".")
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output:
	// not replaced: rename 000000001.bin.tmp -> 000000001.bin: file exists
	// 000000001.bin
	// 000000001.bin.tmp
}
