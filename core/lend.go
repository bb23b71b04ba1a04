package core

import (
	"math/bits"
	"sync"
)

// Lent payload buffers. By default every Delivery.Payload is a fresh
// buffer, which the Go runtime zeroes and the garbage collector reclaims:
// for large payloads that is most of the CPU a drain spends. A consumer
// told LendPayloadBuffers asks the caller for the buffer instead, sized
// from the open's fstat (no extra system call), and the caller takes it
// back once the delivery is acknowledged: a drain then reuses a fixed set
// of buffers, like a loop of raw read(2) calls into one buffer.

// LendPayloadBuffers makes the consumer read each payload into a buffer
// that get returns for the payload's size: Delivery.Payload is then
// get(size)[:size]. get is called with the consumer's lock held, once per
// payload read, never twice at once (an FS may read a batch's payloads on
// several threads; the consumer makes their calls take turns), not
// necessarily in the payloads' order, and must not call the consumer.
//
// The buffer belongs to the consumer, and then to the Delivery, until that
// delivery is acknowledged: after Ack (or after Close, for every delivery
// not acked) the caller owns Payload's memory again and may reuse it. A Nack
// does not give it back: a nacked delivery is delivered again as the same
// Delivery with the same Payload, so its buffer returns at its eventual Ack.
//
// A buffer whose capacity is below size, or nil, is not used: the payload
// is read into a new buffer as without lending (get may say "no" that
// way). A buffer lent for a payload that is then not delivered (its read
// failed, or its sidecar stopped the consumer) is not given back: the
// garbage collector takes it, and the payload's next read asks get again.
// get is not called for a file whose size is unknown at open (a
// backend whose files do not report it), for payloads left on disk by
// SetStreamAbove, nor for sidecars. nil turns lending off.
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
// buffer of at least the asked size (capacities are powers of two), and Put
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
	free       [31][][]byte // idle buffers by class: capacity 1<<class
	idle, keep int64
}

// NewBufferPool returns a pool that keeps up to keep bytes of idle buffers.
func NewBufferPool(keep int64) *BufferPool { return &BufferPool{keep: keep} }

// Get returns a buffer of length size and a capacity of the power of two at
// or above it; nil for sizes it does not pool (0, or 1 GiB and more).
func (p *BufferPool) Get(size int) []byte {
	if size <= 0 || size >= 1<<30 {
		return nil
	}
	class := bits.Len(uint(size - 1))
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
	return make([]byte, size, 1<<class)
}

// Put gives a buffer back to the pool, once: any slice of a buffer from Get
// will do, and so will nil (ignored). A buffer whose capacity is not a power of
// two (not from Get) is filed under the class below its capacity.
func (p *BufferPool) Put(b []byte) {
	if cap(b) == 0 || cap(b) >= 1<<31 {
		return
	}
	class := bits.Len(uint(cap(b))) - 1
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle+1<<class > p.keep {
		return
	}
	p.idle += 1 << class
	p.free[class] = append(p.free[class], b[:0:1<<class])
}
