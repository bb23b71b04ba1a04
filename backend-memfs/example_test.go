package memfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	memfs "github.com/mqb-project/mqb/backend-memfs"
)

func ExampleFS_Crash() {
	fsys := memfs.New()
	f, _ := fsys.CreateExcl("msg.tmp")
	_, _ = f.Write([]byte("hello"))
	_ = f.Sync()
	_ = f.Close()
	_ = fsys.Rename("msg.tmp", "msg")

	after := fsys.Crash(memfs.CrashOptions{})
	_, err := after.Stat("msg")
	fmt.Println("before SyncDir, msg exists:", !errors.Is(err, fs.ErrNotExist))

	_ = fsys.SyncDir(".")
	after = fsys.Crash(memfs.CrashOptions{})
	r, _ := after.Open("msg")
	data, _ := io.ReadAll(r)
	fmt.Printf("after SyncDir: %q\n", data)
	// Output:
	// before SyncDir, msg exists: false
	// after SyncDir: "hello"
}
