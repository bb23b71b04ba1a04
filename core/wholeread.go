package core

// How a consumer reads a chunk's files through a WholeFileReader. Small
// files go through a probe (WholeRead.Probe): read before their size is
// known, they cost open, read and close, where sizing them first costs an
// fstat more. The consumer guesses from the last payload and sidecar it
// read whether a file is small.
//
// A consumer that lends buffers (LendPayloadBuffers) reads a large payload
// the same way (WholeRead.LendFirst): the buffer is lent once the file is
// open, for one byte more than the last payload, so that a payload no
// larger ends inside it, costing no fstat. A payload that fills it is
// sized by the fstat and read into a buffer lent for its size; the first
// one goes to the garbage collector.

// probeMax is the largest last payload size for which the next payload is
// read through the probe: up to it, copying the bytes out of the probe
// costs less than the fstat it saves. The probe holds twice that, so that
// payloads may grow a little and still end inside it.
const probeMax = 8 << 10

// minSideRoom is the least room given to a sidecar buffer, so that a sidecar
// that grew a little since the last still ends inside it.
const minSideRoom = 512

// payloadRead returns how to read the payload name: through the probe when
// the last payload was small (or none was read yet), else, when the
// consumer lends, into a buffer lent once the file is open, for one byte
// more than the last payload, which serves as its own probe.
func (c *Consumer) payloadRead(name string) WholeRead {
	w := WholeRead{Name: name, Lend: c.lend, LeaveAbove: c.streamAbove}
	switch {
	case c.payHint <= probeMax:
		if c.probe == nil {
			c.probe = make([]byte, 2*probeMax)
		}
		w.Probe = c.probe
	case c.lend != nil && (c.streamAbove == 0 || int64(c.payHint) <= c.streamAbove):
		w.LendFirst = c.payHint + 1
	}
	return w
}

// sidecarRead returns how to read the sidecar name: into buf, which serves
// as its own probe once it has room for more than the last sidecar read.
func (c *Consumer) sidecarRead(name string, buf []byte) WholeRead {
	if cap(buf) <= c.sideHint {
		buf = make([]byte, 0, max(minSideRoom, 2*c.sideHint))
	}
	return WholeRead{Name: name, Into: buf, Optional: true}
}

// readOne reads one file as ReadWholeFiles reads a batch, so that a file
// read alone gets the same probe, and returns how it went.
func (c *Consumer) readOne(wr WholeFileReader, w WholeRead) WholeRead {
	c.one[0] = w
	wr.ReadWholeFiles(c.one[:])
	r := c.one[0]
	c.one[0] = WholeRead{} // hold no payload past its delivery
	return r
}

// expectLarge reports whether a consumer that streams large payloads
// (SetStreamAbove) left the last one on disk: then the next is likely
// large too, and one Stat measures it for less than opening it would.
func (c *Consumer) expectLarge() bool {
	return c.streamAbove > 0 && int64(c.payHint) > c.streamAbove
}
