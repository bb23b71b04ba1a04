// Command armprofile splits a CPU profile of `mqb bench` by arm, so that
// the spool's cost can be read against the raw-syscall loop that ran in
// the same process and the same rounds. It reads the text of `perf script`
// (samples with call chains) and prints, for the raw arm and the spool
// arm, how many samples fell in the kernel and in user code, and of the
// user samples how many were in the code that enters and leaves the kernel
// and how many in the arm's own Go code; then the places where the two arms
// differ most: kernel samples by the system call they served, user samples
// by function.
//
//	perf record -e cpu-clock -g -o perf.data -- mqb bench --dir /dev/shm --op consume --size 1KiB --rounds 25
//	perf script -i perf.data | go run ./bench/armprofile
//
// A sample belongs to the raw arm when its stack passes through the raw
// producer or consumer of package benchrun, to the spool arm when it passes
// through core's Producer or Consumer (or, consuming, the bench's
// spoolConsumer, which reads payloads after Read with --read stream), and
// to neither otherwise (the bench's own set-up, the garbage collector's
// workers, other threads). With -op
// consume (the default) only the consumers count: a consume case's fill,
// which is not timed, runs the producers.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	top := flag.Int("top", 30, "differences to list")
	op := flag.String("op", "consume", "the operation the profiled cases measured: consume or produce")
	flag.Parse()
	if markers[*op] == nil {
		fmt.Fprintf(os.Stderr, "armprofile: unknown -op %q (valid: consume, produce)\n", *op)
		os.Exit(2)
	}
	p, err := readProfile(os.Stdin, *op)
	if err != nil {
		fmt.Fprintln(os.Stderr, "armprofile:", err)
		os.Exit(1)
	}
	p.write(os.Stdout, *top)
}

// readProfile reads perf script's text: a sample is a header line, its
// frames indented below it, leaf first, and a blank line.
func readProfile(r io.Reader, op string) (*profile, error) {
	p := newProfile(op)
	var stack []frame
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || (line[0] != ' ' && line[0] != '\t'):
			p.add(stack)
			stack = stack[:0]
		default:
			if f, ok := parseFrame(line); ok {
				stack = append(stack, f)
			}
		}
	}
	p.add(stack)
	return p, sc.Err()
}
