// Command coldmem measures what it costs this machine to write again to
// memory that a process still holds but has left untouched for a while.
// On a physical machine that costs nothing more than any other write. On a
// virtual machine whose host reclaims or re-maps idle guest memory, each
// page can cost a fault again: a benchmark arm whose buffers sat idle
// between two cases then pays for it where an arm with a fresh buffer does
// not (see "Memory that goes cold" in docs/guide/benchmarks.md).
//
//	go run ./bench/coldmem -size 64MiB -idle 0s,30s,90s,180s,300s
//
// It allocates the memory, writes one byte of every page, and then, for
// each idle time in turn, waits that long and times one pass over every
// page (cold), then a second pass right after (warm). It prints both per
// page.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mqb-project/mqb/bench/benchrun"
)

func main() {
	size := flag.String("size", "64MiB", "memory to hold, such as 64MiB")
	idles := flag.String("idle", "0s,30s,90s,180s,300s", "comma-separated times to leave the memory untouched before each pass")
	flag.Parse()
	n, err := benchrun.ParseSize(*size)
	if err != nil {
		fail(fmt.Errorf("-size: %w", err))
	}
	waits, err := parseIdles(*idles)
	if err != nil {
		fail(fmt.Errorf("-idle: %w", err))
	}
	page := os.Getpagesize()
	mem := make([]byte, n)
	first := timePass(mem, page, 1)
	fmt.Printf("%s in %d pages of %d bytes; first write of each page: %s a page\n",
		*size, pages(n, page), page, perPage(first, n, page))
	for i, idle := range waits {
		time.Sleep(idle)
		cold := timePass(mem, page, byte(2*i+2))
		warm := timePass(mem, page, byte(2*i+3))
		fmt.Printf("after %-6s untouched: %s a page, then %s a page\n", idle, perPage(cold, n, page), perPage(warm, n, page))
	}
}

// timePass writes v to the first byte of every page of mem and returns how
// long that took.
func timePass(mem []byte, page int, v byte) time.Duration {
	start := time.Now()
	touch(mem, page, v)
	return time.Since(start)
}

// touch writes v to the first byte of every page of mem.
func touch(mem []byte, page int, v byte) {
	for i := 0; i < len(mem); i += page {
		mem[i] = v
	}
}

func pages(n, page int) int { return (n + page - 1) / page }

func perPage(d time.Duration, n, page int) string {
	return fmt.Sprintf("%.2f µs", float64(d.Nanoseconds())/1e3/float64(pages(n, page)))
}

// parseIdles parses a comma-separated list of durations of 0 or more.
func parseIdles(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, fmt.Errorf("%s is negative", f)
		}
		out = append(out, d)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "coldmem:", err)
	os.Exit(2)
}
