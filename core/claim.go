package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// claim is a held PRODUCER or CONSUMER role.
type claim struct {
	lock   Claim
	holder Holder
}

var hostname = func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}()

// acquireClaim locks file at the spool root. On success it returns the claim
// and the holder record the previous holder left (nil if none or unreadable).
func acquireClaim(fsys FS, spool, file, role string) (*claim, *Holder, error) {
	lk, err := fsys.Lock(file)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, nil, &ClaimError{Spool: spool, File: file, Holder: readHolder(fsys, file)}
		}
		return nil, nil, fmt.Errorf("spool %s: take %s claim: %w", spool, file, err)
	}
	prev := readHolder(fsys, file)
	c := &claim{lock: lk, holder: Holder{Role: role, PID: os.Getpid(), Host: hostname, Since: time.Now().UTC().Truncate(time.Second)}}
	return c, prev, nil
}

// record writes the holder, with the given next sequence for a producer.
func (c *claim) record(next *uint64) error {
	c.holder.NextSeq = next
	b, err := json.Marshal(c.holder)
	if err != nil {
		return err
	}
	return c.lock.Write(append(b, '\n'))
}

func (c *claim) release() error { return c.lock.Release() }

// readHolder reads the JSON record in a claim file; nil when the file is
// missing, empty or not a record.
func readHolder(fsys FS, file string) *Holder {
	b, err := readAll(fsys, file)
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
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

func readAll(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<30 {
		size = int(fi.Size()) + 1 // +1 so ReadAll sees EOF without growing
	}
	buf := make([]byte, 0, size)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
