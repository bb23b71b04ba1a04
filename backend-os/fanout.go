//go:build linux || darwin || freebsd

package osfs

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mqb-project/mqb/core"
)

// Reading a batch of large files on more than one thread. Copying a large
// file out of the page cache costs the CPU far more than opening it, and
// a consumer that reads a batch ahead (core's readAhead) holds every
// payload until the batch is acknowledged, so each copy lands in memory
// that left the caches a batch ago. One thread then waits on memory most
// of the time; two or more keep more copies in flight. ReadWholeFiles
// fans the rest of a batch out once a file it read shows the files are
// large.

// fanOutAbove is the least size of a file read by ReadWholeFiles for the
// rest of its reads to be shared among threads: below it the
// system calls cost more than the copy, and waking a thread costs more
// than it saves.
const fanOutAbove = 32 << 10

// fanOutMin is the least number of reads left for a fan-out.
const fanOutMin = 4

// maxReaders caps the threads that read one batch.
const maxReaders = 4

// readers returns how many threads may share the reads of one
// ReadWholeFiles call: 1 (no fan-out) when the Go scheduler has one thread
// to give, or when a read borrows a Probe (scratch that reads may share).
func readers(reads []core.WholeRead) int {
	n := min(runtime.GOMAXPROCS(0), maxReaders)
	if n < 2 || len(reads) <= fanOutMin {
		return 1
	}
	for i := range reads {
		if cap(reads[i].Probe) > 0 {
			return 1
		}
	}
	return n
}

// fansOut reports whether the reads left after r, a read just made, are
// worth sharing among threads: r's file was large and enough are left.
func fansOut(r *core.WholeRead, left int) bool {
	return left >= fanOutMin && len(r.Data) >= fanOutAbove
}

// readFannedOut reads reads with n goroutines (the caller's among them),
// each taking the next read not yet taken. It returns how many reads the
// sequential loop would have tried: up to and including the first that
// stops it (core.WholeRead.Stops). Reads past that one, which a goroutine
// may have made meanwhile, are undone: their files closed, their Data
// dropped. The caller holds rootMu.
func (f *FS) readFannedOut(reads []core.WholeRead, n int) int {
	var next atomic.Int64
	var stop atomic.Int64 // reads at or after it are not wanted
	stop.Store(int64(len(reads)))
	read := func() {
		for {
			i := next.Add(1) - 1
			if i >= stop.Load() {
				return
			}
			r := &reads[i]
			f.readOneOf(r)
			if r.Stops() {
				lowerTo(&stop, i+1)
			}
		}
	}
	var wg sync.WaitGroup
	for range n - 1 {
		wg.Go(read)
	}
	read()
	wg.Wait()
	tried := int(stop.Load())
	for i := tried; i < len(reads); i++ {
		undoRead(&reads[i])
	}
	return tried
}

// lowerTo sets v to x when x is below it.
func lowerTo(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if x >= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// undoRead forgets a read made past the one that stopped a batch: as if
// it had not been tried. A lent buffer it used is not given back (see
// core.Consumer.LendPayloadBuffers).
func undoRead(r *core.WholeRead) {
	if r.Kept != nil {
		r.Kept.Close()
	}
	r.Data, r.Left, r.Kept, r.Err = nil, 0, nil, nil
}
