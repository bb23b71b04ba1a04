package main

import (
	"strings"
	"testing"
)

// script is perf script's text for seven samples: two of the raw consumer
// (a read in the kernel, then user code), four of the spool's consumer (an
// fstat, user code, a read of --read stream's Delivery.ReadInto, below
// the bench's spoolConsumer but not core's Consumer, and the return from a
// system call in user code), one of the fill's producer.
const script = `mqb 100 1.000: 250000 cpu-clock:
	ffffffff8130a1b1 ksys_read+0x51 ([kernel.kallsyms])
	ffffffff8130a2c2 __x64_sys_read+0x12 ([kernel.kallsyms])
	          4a1b2c syscall.Syscall+0x4b (/work/mqb)
	          6b1c2d github.com/mqb-project/mqb/bench/benchrun.(*rawConsumer).readFile+0x10c (/work/mqb)

mqb 100 1.001: 250000 cpu-clock:
	          6b1c2d github.com/mqb-project/mqb/bench/benchrun.(*rawConsumer).consume+0x3c (/work/mqb)

mqb 100 1.002: 250000 cpu-clock:
	ffffffff81400001 cp_new_stat+0x9 ([kernel.kallsyms])
	ffffffff81400102 __do_sys_newfstat+0x22 ([kernel.kallsyms])
	          4a1b2c golang.org/x/sys/unix.Fstat+0x44 (/work/mqb)
	          7c1d2e github.com/mqb-project/mqb/core.(*Consumer).readAhead+0xbe9 (/work/mqb)

mqb 100 1.003: 250000 cpu-clock:
	          7c1d2e github.com/mqb-project/mqb/core.(*sidecarScanner).str+0x20 (/work/mqb)
	          7c1d3f github.com/mqb-project/mqb/core.(*Consumer).readAhead+0x565 (/work/mqb)

mqb 100 1.004: 250000 cpu-clock:
	          7c1d2e github.com/mqb-project/mqb/core.(*Producer).writeBatch+0x20 (/work/mqb)

mqb 100 1.005: 250000 cpu-clock:
	ffffffff8130a1b1 ksys_read+0x51 ([kernel.kallsyms])
	ffffffff8130a2c2 __x64_sys_read+0x12 ([kernel.kallsyms])
	          4a1b2c syscall.Syscall+0x4b (/work/mqb)
	          7c1e00 github.com/mqb-project/mqb/core.(*Delivery).ReadInto+0x80 (/work/mqb)
	          6b1d00 github.com/mqb-project/mqb/bench/benchrun.(*spoolConsumer).readEach+0x40 (/work/mqb)

mqb 100 1.006: 250000 cpu-clock:
	          4a0f00 internal/runtime/syscall/linux.Syscall6+0x30 (/work/mqb)
	          4a1b2c syscall.Syscall+0x4b (/work/mqb)
	          7c1f00 github.com/mqb-project/mqb/core.(*Consumer).Ack+0x120 (/work/mqb)
`

func TestReadProfile(t *testing.T) {
	p, err := readProfile(strings.NewReader(script), "consume")
	if err != nil {
		t.Fatal(err)
	}
	raw, spool := p.arm["raw"], p.arm["spool"]
	if raw.total != 2 || raw.kernel != 1 || raw.glue != 0 || spool.total != 4 || spool.kernel != 2 || spool.glue != 1 || p.other != 1 {
		t.Fatalf("raw %+v, spool %+v, other %d", raw, spool, p.other)
	}
	if raw.code() != 1 || spool.code() != 1 {
		t.Fatalf("go code: raw %d, spool %d, want 1 and 1", raw.code(), spool.code())
	}
	want := map[string]diff{
		"kernel, __x64_sys_read":    {raw: 1, spool: 1},
		"kernel, __do_sys_newfstat": {spool: 1},
		"github.com/mqb-project/mqb/bench/benchrun.(*rawConsumer).consume": {raw: 1},
		"github.com/mqb-project/mqb/core.(*sidecarScanner).str":            {spool: 1},
		"internal/runtime/syscall/linux.Syscall6":                          {spool: 1},
	}
	got := p.diffs()
	if len(got) != len(want) {
		t.Fatalf("diffs %+v, want %d places", got, len(want))
	}
	for _, d := range got {
		w, ok := want[d.place]
		if !ok || w.raw != d.raw || w.spool != d.spool {
			t.Errorf("place %q: raw %d spool %d, want %+v (known: %v)", d.place, d.raw, d.spool, w, ok)
		}
	}

	p, err = readProfile(strings.NewReader(script), "produce")
	if err != nil {
		t.Fatal(err)
	}
	if p.arm["spool"].total != 1 || p.arm["raw"].total != 0 || p.other != 6 {
		t.Fatalf("produce: spool %+v raw %+v other %d", p.arm["spool"], p.arm["raw"], p.other)
	}
}

func TestIsSyscallGlue(t *testing.T) {
	for fn, want := range map[string]bool{
		"internal/runtime/syscall/linux.Syscall6":             true,
		"syscall.RawSyscall6":                                 true,
		"golang.org/x/sys/unix.Fstat":                         true,
		"runtime.exitsyscall":                                 true,
		"runtime.mallocgc":                                    false,
		"github.com/mqb-project/mqb/backend-os.sysUnlinkat":   false,
		"github.com/mqb-project/mqb/core.(*Consumer).measure": false,
	} {
		if got := isSyscallGlue(fn); got != want {
			t.Errorf("isSyscallGlue(%q) = %v, want %v", fn, got, want)
		}
	}
}

func TestPlaceOf(t *testing.T) {
	fault := []frame{{"clear_page_erms", true}, {"asm_exc_page_fault", true}, {"runtime.memmove", false}}
	if got := placeOf(fault); got != "kernel, page fault" {
		t.Errorf("a page fault's place = %q", got)
	}
	irq := []frame{{"pvm_irq_enable", true}, {"runtime.mallocgc", false}}
	if got := placeOf(irq); got != "kernel, other" {
		t.Errorf("a kernel sample outside a system call: place %q", got)
	}
}
