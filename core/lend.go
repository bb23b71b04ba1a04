package core

import (
	"math/bits"
	"sync"
)

// Lent payload buffers. By default every Delivery.Payload is a fresh
// buffer, which the Go runtime zeroes and the garbage collector reclaims:
// for large payloads that is most of the CPU a drain spends. A consumer
// told LendPayloadBuffers asks the caller for the buffer instead, and the
// caller takes it back once the delivery is acknowledged: a drain then
// reuses a fixed set of buffers, like a loop of raw read(2) calls into one
// buffer. Lending adds no system call: the size comes from the open's
// fstat, or, when the consumer asks before the file's size is known
// (WholeRead.LendFirst), from the last payload, and then a payload that
// ends inside the buffer needs no fstat at all.

// LendPayloadBuffers makes the consumer read each payload into a buffer
// that get returns: Delivery.Payload is then get(n)[:size]. n is the
// payload's size, or, asked once the file is open but before its size is
// known, one more than the size of the payload read before it; a payload
// that then does not fit makes the consumer ask again, for its size. get
// is called with the consumer's lock held, never twice at once (an FS may
// read a batch's payloads on several threads; the consumer makes their
// calls take turns), not necessarily in the payloads' order, and must not
// call the consumer.
//
// The buffer belongs to the consumer, and then to the Delivery, until that
// delivery is acknowledged: after Ack (or after Close, for every delivery
// not acked) the caller owns Payload's memory again and may reuse it. A Nack
// does not give it back: a nacked delivery is delivered again as the same
// Delivery with the same Payload, so its buffer returns at its eventual Ack.
//
// A buffer whose capacity is below the size, or nil, is not used: the
// payload is read into a new buffer as without lending (get may say "no"
// that way). A buffer that is not used, or lent for a payload that is then
// not delivered (its read failed, or its sidecar stopped the consumer), is
// not given back: the garbage collector takes it, and the payload's next
// read asks get again. Besides the ask before the size is known, get is not
// called for a file whose size is unknown at open (a backend whose files
// do not report it), for payloads left on disk by SetStreamAbove, nor for
// sidecars. nil turns lending off.
func (c *Consumer) LendPayloadBuffers(get func(size int) []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lend = takingTurns(get)
}

// takingTurns returns get made safe to call from several goroutines: the
// calls take turns. nil stays nil.
func takingTurns(get func(size int) []byte) func(size int) []byte {
	if get == nil {
		return nil
	}
	var mu sync.Mutex
	return func(size int) []byte {
		mu.Lock()
		defer mu.Unlock()
		return get(size)
	}
}

// readLent is readFile reading a file of known size into a buffer from get.
func readLent(fsys FS, name string, hint int, get func(int) []byte) ([]byte, error) {
	return readWhole(fsys, name, hint, get, nil)
}

// BufferPool is a ready-made lender for LendPayloadBuffers: Get returns a
// buffer of at least the asked size, at most a quarter larger, and Put
// takes back a buffer once its delivery is acknowledged:
//
//	pool := core.NewBufferPool(256 << 20)
//	c.LendPayloadBuffers(pool.Get)
//	...
//	c.Ack(ds...)
//	for _, d := range ds { pool.Put(d.Payload) }
//
// It keeps idle buffers up to a total capacity of keep bytes and drops the
// rest; it is safe for concurrent use. Get and Put allocate nothing once
// the pool holds the buffers a workload has in flight.
type BufferPool struct {
	mu         sync.Mutex
	free       [poolClasses][][]byte // idle buffers by class (classCap)
	idle, keep int64
}

// The pool's classes are four steps per power of two: capacities of 1, 1.25,
// 1.5 and 1.75 times it, from 16 bytes. Get pools sizes below 1 GiB, so
// the largest class it hands out, and Put takes back, holds 1 GiB (the
// array has room up to 1.75 GiB, so no index needs a check). A consumer asks
// for one byte more than the last payload (payloadRead), so that a payload
// of the same size ends inside the buffer: with classes only at powers of
// two, a payload of exactly 64 KiB would take a buffer of 128 KiB.
const (
	poolStepBits = 2 // 1<<poolStepBits classes per power of two
	poolMinBits  = 4 // the smallest class holds 1<<poolMinBits bytes
	poolClasses  = (31 - poolMinBits) << poolStepBits
	poolMaxSize  = 1 << 30 // Get pools sizes below it
)

// classCap returns the capacity of class c.
func classCap(c int) int {
	exp, step := c>>poolStepBits+poolMinBits, c&(1<<poolStepBits-1)
	return (1<<poolStepBits + step) << (exp - poolStepBits)
}

// classAbove returns the smallest class whose capacity is at least size.
func classAbove(size int) int {
	if size <= 1<<poolMinBits {
		return 0
	}
	c := classBelow(size)
	if classCap(c) < size {
		c++
	}
	return c
}

// classBelow returns the largest class whose capacity is at most size, or
// -1 when size is below the smallest class.
func classBelow(size int) int {
	if size < 1<<poolMinBits {
		return -1
	}
	exp := bits.Len(uint(size)) - 1 // 1<<exp <= size < 2<<exp
	step := (size >> (exp - poolStepBits)) & (1<<poolStepBits - 1)
	return (exp-poolMinBits)<<poolStepBits + step
}

// NewBufferPool returns a pool that keeps up to keep bytes of idle buffers.
func NewBufferPool(keep int64) *BufferPool { return &BufferPool{keep: keep} }

// Get returns a buffer of length size and the capacity of the smallest
// class that holds it; nil for sizes it does not pool (0, or 1 GiB and
// more).
func (p *BufferPool) Get(size int) []byte {
	if size <= 0 || size >= poolMaxSize {
		return nil
	}
	class := classAbove(size)
	p.mu.Lock()
	if n := len(p.free[class]); n > 0 {
		b := p.free[class][n-1]
		p.free[class][n-1] = nil
		p.free[class] = p.free[class][:n-1]
		p.idle -= int64(cap(b))
		p.mu.Unlock()
		return b[:size]
	}
	p.mu.Unlock()
	return make([]byte, size, classCap(class))
}

// Put gives a buffer back to the pool, once: any slice of a buffer from Get
// will do, and so will nil (ignored). A buffer whose capacity is no class's
// (not from Get) is filed under the class below its capacity.
func (p *BufferPool) Put(b []byte) {
	class := putClass(cap(b))
	if class < 0 {
		return
	}
	size := classCap(class)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle+int64(size) > p.keep {
		return
	}
	p.idle += int64(size)
	p.free[class] = append(p.free[class], b[:0:size])
}

// putClass returns the class Put files a buffer of the given capacity
// under: the largest at or below it, up to the 1 GiB class that Get hands
// out for its largest sizes; -1 when the pool does not keep it.
func putClass(capacity int) int {
	c := classBelow(capacity)
	if c < 0 || classCap(c) > poolMaxSize {
		return -1
	}
	return c
}
