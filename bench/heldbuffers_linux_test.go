package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkHeldBuffers reads the 256 files of a batch with plain system
// calls (open, read, close), as the matrix's raw arms do, into one buffer
// or into a buffer per file kept for the batch, as a consumer's lent
// buffers are: from Go's heap, or from one region that the kernel is asked
// to back with 2 MiB pages (madvise MADV_HUGEPAGE), to tell whether the
// held buffers' cost is the TLB's (the huge pages would cut it) or the
// caches' (they would not). ns/op is per file.
func BenchmarkHeldBuffers(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		names := heldFiles(b, size)
		for _, held := range []string{"one", "heap", "hugepages"} {
			b.Run(fmt.Sprintf("size=%dKiB/buffers=%s", size>>10, held), func(b *testing.B) {
				bufs := heldBuffers(b, held, len(names), size)
				for i := range bufs { // fault every buffer in before timing
					readFileInto(b, names[i], bufs[i])
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := range b.N {
					readFileInto(b, names[i%len(names)], bufs[i%len(names)])
				}
				b.StopTimer()
				b.ReportMetric(anonHugeKiB(b), "anon-huge-KiB") // that the huge pages are there
			})
		}
	}
}

// heldFiles writes 256 files of size bytes and returns their names.
func heldFiles(b *testing.B, size int) []string {
	dir := filepath.Join(benchDir(b), fmt.Sprintf("held%d", size))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	names := make([]string, 256)
	payload := make([]byte, size)
	for i := range names {
		names[i] = filepath.Join(dir, fmt.Sprintf("%09d.bin", i))
		if err := os.WriteFile(names[i], payload, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

// heldBuffers returns n buffers of size bytes: one buffer n times, n from
// the heap, or n slices of one huge-page region.
func heldBuffers(b *testing.B, kind string, n, size int) [][]byte {
	bufs := make([][]byte, n)
	switch kind {
	case "one":
		one := make([]byte, size)
		for i := range bufs {
			bufs[i] = one
		}
	case "heap":
		for i := range bufs {
			bufs[i] = make([]byte, size)
		}
	case "hugepages":
		region, err := unix.Mmap(-1, 0, n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Munmap(region) })
		if err := unix.Madvise(region, unix.MADV_HUGEPAGE); err != nil {
			b.Skipf("madvise(MADV_HUGEPAGE): %v", err)
		}
		for i := range bufs {
			bufs[i] = region[i*size : (i+1)*size]
		}
	}
	return bufs
}

// readFileInto reads the file name, of len(buf) bytes, into buf with one
// open, one read and one close.
func readFileInto(b *testing.B, name string, buf []byte) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n != len(buf) {
		b.Fatalf("read %s: %d bytes, %v", name, n, err)
	}
}

// anonHugeKiB is the process's memory in transparent huge pages, from
// /proc/self/smaps_rollup.
func anonHugeKiB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "AnonHugePages:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb
		}
	}
	return 0
}
