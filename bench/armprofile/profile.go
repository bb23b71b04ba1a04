package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// frame is one line of a call chain: "addr symbol+0xoff (dso)".
type frame struct {
	fn     string // symbol without its offset
	kernel bool
}

// parseFrame parses a frame line of perf script.
func parseFrame(line string) (frame, bool) {
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return frame{}, false
	}
	sym := strings.Join(fields[1:len(fields)-1], " ")
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		sym = sym[:i]
	}
	dso := fields[len(fields)-1]
	return frame{fn: sym, kernel: strings.Contains(dso, "kernel")}, true
}

// markers name, for each operation, functions that the samples of each
// arm pass through. A consume case's fill is not timed and is left out:
// it runs the producers. A spool consumer's payload read after Read
// (Delivery.ReadInto, with --read stream) passes through the bench's
// spoolConsumer only.
var markers = map[string]map[string][]string{
	"consume": {"raw": {"benchrun.(*rawConsumer)"}, "spool": {"core.(*Consumer)", "benchrun.(*spoolConsumer)"}},
	"produce": {"raw": {"benchrun.(*rawProducer)"}, "spool": {"core.(*Producer)"}},
}

// armOf names the arm of op that a stack belongs to, or "".
func armOf(op string, stack []frame) string {
	for _, f := range stack {
		for arm, names := range markers[op] {
			for _, marker := range names {
				if strings.Contains(f.fn, marker) {
					return arm
				}
			}
		}
	}
	return ""
}

// placeOf says where a sample's time went: the system call a kernel
// sample served (its outermost sys_ frame), a page fault, or the user
// function it was in.
func placeOf(stack []frame) string {
	if !stack[0].kernel {
		return stack[0].fn
	}
	place := "kernel, other"
	for _, f := range stack {
		switch {
		case !f.kernel:
			return place
		case strings.Contains(f.fn, "page_fault"):
			place = "kernel, page fault"
		case strings.Contains(f.fn, "sys_"):
			place = "kernel, " + f.fn
		}
	}
	return place
}

// syscallGlue are the prefixes of the user functions that enter and leave
// the kernel: a user sample whose leaf is one of them is the cost of making
// a system call, not of the arm's own code. A sample taken just as a call
// returns lands there too.
var syscallGlue = []string{
	"syscall.", "internal/runtime/syscall/", "golang.org/x/sys/unix.",
	"runtime.entersyscall", "runtime.exitsyscall", "runtime.reentersyscall",
}

// isSyscallGlue reports whether fn enters or leaves the kernel (syscallGlue).
func isSyscallGlue(fn string) bool {
	for _, prefix := range syscallGlue {
		if strings.HasPrefix(fn, prefix) {
			return true
		}
	}
	return false
}

// armCounts are one arm's samples: in the kernel, in user code that makes
// system calls (isSyscallGlue), and the rest, the arm's own Go code.
type armCounts struct {
	total, kernel, glue int
	at                  map[string]int // by placeOf
}

// code returns the samples in the arm's own Go code.
func (a *armCounts) code() int { return a.total - a.kernel - a.glue }

type profile struct {
	op    string // "consume" or "produce": whose samples count
	arm   map[string]*armCounts
	other int // samples of neither arm
}

func newProfile(op string) *profile {
	p := &profile{op: op, arm: map[string]*armCounts{}}
	for _, name := range []string{"raw", "spool"} {
		p.arm[name] = &armCounts{at: map[string]int{}}
	}
	return p
}

func (p *profile) add(stack []frame) {
	if len(stack) == 0 {
		return
	}
	a := p.arm[armOf(p.op, stack)]
	if a == nil {
		p.other++
		return
	}
	a.total++
	switch {
	case stack[0].kernel:
		a.kernel++
	case isSyscallGlue(stack[0].fn):
		a.glue++
	}
	a.at[placeOf(stack)]++
}

// diff is one place's samples in both arms.
type diff struct {
	place      string
	raw, spool int
}

// diffs returns every place, the largest difference between the arms
// first, either way.
func (p *profile) diffs() []diff {
	raw, spool := p.arm["raw"], p.arm["spool"]
	var out []diff
	for place := range raw.at {
		out = append(out, diff{place, raw.at[place], spool.at[place]})
	}
	for place := range spool.at {
		if _, ok := raw.at[place]; !ok {
			out = append(out, diff{place, 0, spool.at[place]})
		}
	}
	slices.SortFunc(out, func(a, b diff) int {
		return cmp.Or(cmp.Compare(abs(b.spool-b.raw), abs(a.spool-a.raw)), strings.Compare(a.place, b.place))
	})
	return out
}

func (p *profile) write(w io.Writer, top int) {
	raw, spool := p.arm["raw"], p.arm["spool"]
	fmt.Fprintf(w, "%-6s %8s %8s %8s %8s %8s\n", "arm", "samples", "kernel", "user", "syscall", "go code")
	for _, name := range []string{"raw", "spool"} {
		a := p.arm[name]
		fmt.Fprintf(w, "%-6s %8d %8d %8d %8d %8d\n", name, a.total, a.kernel, a.total-a.kernel, a.glue, a.code())
	}
	fmt.Fprintln(w, "(user = syscall + go code: syscall is user code entering and leaving the kernel)")
	fmt.Fprintf(w, "(%d samples in neither arm)\n", p.other)
	if raw.total == 0 || spool.total == 0 {
		fmt.Fprintln(w, "no samples of one arm: was the profile taken of mqb bench, with call chains (perf record -g)?")
		return
	}
	fmt.Fprintf(w, "spool over raw: %.3f\n", float64(spool.total)/float64(raw.total))
	fmt.Fprintf(w, "spool minus raw, in %% of raw: kernel %+.1f%%, syscall %+.1f%%, go code %+.1f%%\n\n",
		pctOf(spool.kernel-raw.kernel, raw.total), pctOf(spool.glue-raw.glue, raw.total), pctOf(spool.code()-raw.code(), raw.total))
	fmt.Fprintf(w, "%8s %8s %8s %9s  %s\n", "raw", "spool", "spool-raw", "% of raw", "where")
	for i, d := range p.diffs() {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%8d %8d %+8d %+8.1f%%  %s\n", d.raw, d.spool, d.spool-d.raw,
			pctOf(d.spool-d.raw, raw.total), d.place)
	}
}

func abs(n int) int { return max(n, -n) }

// pctOf returns n in percent of total.
func pctOf(n, total int) float64 { return 100 * float64(n) / float64(total) }
