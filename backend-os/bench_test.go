//go:build linux

package osfs_test

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// benchRoot is $MQB_BENCH_DIR (to measure on tmpfs, say) or a temporary
// directory.
func benchRoot(b *testing.B) string {
	if d := os.Getenv("MQB_BENCH_DIR"); d != "" {
		d, err := os.MkdirTemp(d, "osfs")
		require.NoError(b, err)
		b.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return b.TempDir()
}

// BenchmarkSpoolCalls makes the calls a spool makes for one message with a
// sidecar, in a flat and in a sharded directory: produce (create, write,
// close, rename of two files) and consume (open, read to the end, close,
// remove of both).
func BenchmarkSpoolCalls(b *testing.B) {
	payload := make([]byte, 1024)
	for _, dir := range []string{".", "000/001"} {
		b.Run("dir="+dir, func(b *testing.B) {
			fsys, err := osfs.New(benchRoot(b), osfs.Options{})
			require.NoError(b, err)
			defer fsys.Close()
			if dir != "." {
				require.NoError(b, fsys.Mkdir("000"))
				require.NoError(b, fsys.Mkdir(dir))
			}
			buf := make([]byte, 0, len(payload)+1)
			for i := 0; b.Loop(); i++ {
				base := fmt.Sprintf("%09d", i)
				if dir != "." {
					base = dir + "/" + base
				}
				for _, ext := range []string{".json", ".bin"} {
					f, err := fsys.CreateExcl(base + ext + ".tmp")
					require.NoError(b, err)
					_, err = f.Write(payload)
					require.NoError(b, err)
					require.NoError(b, f.Close())
					require.NoError(b, fsys.Rename(base+ext+".tmp", base+ext))
				}
				for _, ext := range []string{".bin", ".json"} {
					f, err := fsys.Open(base + ext)
					require.NoError(b, err)
					for buf = buf[:0]; ; {
						n, err := f.Read(buf[len(buf):cap(buf)])
						buf = buf[:len(buf)+n]
						if err == io.EOF {
							break
						}
						require.NoError(b, err)
					}
					require.NoError(b, f.Close())
					require.NoError(b, fsys.Remove(base+ext))
				}
			}
		})
	}
}

// BenchmarkReadDir lists a directory of 4096 payloads and their sidecars,
// as a consumer does to find its backlog.
func BenchmarkReadDir(b *testing.B) {
	fsys, err := osfs.New(benchRoot(b), osfs.Options{})
	require.NoError(b, err)
	defer fsys.Close()
	for i := range 4096 {
		for _, ext := range []string{".json", ".bin"} {
			f, err := fsys.CreateExcl(fmt.Sprintf("%09d%s", i, ext))
			require.NoError(b, err)
			require.NoError(b, f.Close())
		}
	}
	for b.Loop() {
		entries, err := fsys.ReadDir(".")
		require.NoError(b, err)
		require.Len(b, entries, 2*4096)
	}
}
