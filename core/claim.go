package core

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// roleClaim is a held PRODUCER or CONSUMER role.
type roleClaim struct {
	lock   Claim
	holder Holder
	slots  claimSlots
}

var hostname = func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}()

// acquireClaim locks file at the spool root. On success it returns the claim
// and the holder record the previous holder left (nil if none). It fails
// when the claim file cannot be read: its record may hold the sequence
// high-water mark.
func acquireClaim(fsys FS, spool, file, role string) (*roleClaim, *Holder, error) {
	lk, err := fsys.Lock(file)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, nil, &ClaimError{Spool: spool, File: file, Holder: readHolder(fsys, file)}
		}
		return nil, nil, fmt.Errorf("spool %s: take %s claim: %w", spool, file, err)
	}
	b, err := readAll(fsys, file)
	if err != nil {
		_ = lk.Release()
		return nil, nil, fmt.Errorf("spool %s: read %s claim: %w", spool, file, err)
	}
	prev, slots := parseClaimFile(b)
	c := &roleClaim{lock: lk, slots: slots, holder: Holder{Role: role, PID: os.Getpid(), Host: hostname, Since: time.Now().UTC().Truncate(time.Second)}}
	return c, prev, nil
}

// record writes the holder, with the given next sequence for a producer.
// The previous record stays readable until the new one is durable.
func (c *roleClaim) record(next *uint64) error {
	c.holder.NextSeq = next
	return c.update(true)
}

// update writes the holder as it is now; without sync the write may be
// lost to a power cut, leaving the previous record.
func (c *roleClaim) update(sync bool) error {
	return writeClaimSlot(c.lock, &c.slots, c.holder, sync)
}

func (c *roleClaim) release() error { return c.lock.Release() }

// readHolder reads the newest record in a claim file; nil when the file is
// missing, empty or holds no record.
func readHolder(fsys FS, file string) *Holder {
	b, err := readAll(fsys, file)
	if err != nil {
		return nil
	}
	h, _ := parseClaimFile(b)
	return h
}

// ReadHolder returns the holder record of a claim file (PRODUCER or
// CONSUMER) and whether the claim is held right now. It briefly tries the
// lock to find out, so it must not be called by the holder itself.
func ReadHolder(fsys FS, file string) (h *Holder, held bool, err error) {
	if _, err := fsys.Stat(file); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	h = readHolder(fsys, file)
	lk, err := fsys.Lock(file)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return h, true, nil
		}
		return h, false, err
	}
	return h, false, lk.Release()
}

func readAll(fsys FS, name string) ([]byte, error) { return readFile(fsys, name, 0) }

// maxReadHint bounds the size guess readFile trusts without a Stat.
const maxReadHint = 64 << 10

// readFile reads the whole file name into a new buffer. A SizedFile is
// read into a buffer of its size. Otherwise, when hint (the size the caller
// expects, such as the size of the previous payload) is between 1 and
// maxReadHint it skips the Stat and reads into a buffer of that size,
// finding the real size only when the file is larger.
func readFile(fsys FS, name string, hint int) ([]byte, error) {
	return readWhole(fsys, name, hint, noBuffer, nil)
}

// noBuffer is readWhole's buf for a read into new memory. A function
// declared once, unlike a closure, costs no allocation per read.
func noBuffer(int) []byte { return nil }

// readWhole reads the whole file name: into buf(size) when its size is
// known at open (WholeFileReader, or a SizedFile) and buf gives room for
// it, else into grow (or new memory) grown as needed.
func readWhole(fsys FS, name string, hint int, buf func(size int) []byte, grow []byte) ([]byte, error) {
	if wr, ok := fsys.(WholeFileReader); ok {
		return wr.ReadWholeFile(name, buf)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if sf, ok := f.(SizedFile); ok {
		if size := sf.OpenSize(); size >= 0 && size < 1<<30 {
			return readSized(f, int(size), buf(int(size)))
		}
	}
	return readGrowing(f, hint, grow)
}

// readSized reads a file that had size bytes when it was opened into a
// buffer of exactly that size, without a read that only finds the end. A
// file that shrank since is read to its end, one that grew to its size
// when opened: either way what a reader racing the writer could see.
func readSized(f File, size int, scratch []byte) ([]byte, error) {
	buf := scratch[:0]
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	n, err := io.ReadFull(f, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return buf[:n], err
}

// readGrowing reads f to its end into a buffer of the hinted size (see
// readFile), growing it as needed.
func readGrowing(f File, hint int, scratch []byte) ([]byte, error) {
	size, statted := hint, false
	if hint <= 0 || hint > maxReadHint {
		size, statted = statSize(f), true
	}
	buf := scratch[:0]
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+1) // +1 so that a read sees EOF without growing
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if scratch == nil && !statted && cap(buf) > 4096 && len(buf) < cap(buf)/2 {
				buf = append([]byte(nil), buf...) // do not hand out a mostly empty guess
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			if !statted {
				statted = true
				if sz := statSize(f); sz >= len(buf) {
					buf = slices.Grow(buf, sz+1-len(buf))
					continue
				}
			}
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// statSize returns the size of f, or 511 when it is unknown or too large to
// trust (the buffer then grows as it reads).
func statSize(f File) int {
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<30 {
		return int(fi.Size())
	}
	return 511
}
