//go:build linux || darwin || freebsd

package osfs

import (
	"io"
	"math"
	"syscall"
)

// ReadFrom copies r into the file until r ends (io.Copy calls it). When r
// is another file of this backend, an *os.File, or an *io.LimitedReader of
// one, and the system can (copy_file_range on Linux), the bytes move in the
// kernel and never pass through this process's memory. Otherwise they are
// copied through a buffer of copyBuffer bytes.
func (f *file) ReadFrom(r io.Reader) (int64, error) {
	src, limit := r, int64(math.MaxInt64)
	lr, limited := r.(*io.LimitedReader)
	if limited {
		src, limit = lr.R, lr.N
	}
	if limit <= 0 {
		return 0, nil
	}
	n, handled, err := f.copyFrom(src, limit)
	if limited {
		lr.N -= n
	}
	if handled || err != nil {
		return n, err
	}
	m, err := io.CopyBuffer(writeOnly{f}, r, make([]byte, copyBuffer))
	return n + m, err
}

// copyBuffer is the buffer of a copy the kernel cannot do.
const copyBuffer = 256 << 10

// writeOnly hides ReadFrom from io.CopyBuffer, which would call it again.
type writeOnly struct{ io.Writer }

// withSourceFD calls fn with the descriptor of src when src is a file with
// one, and reports whether it did.
func withSourceFD(src io.Reader, fn func(fd int)) bool {
	switch s := src.(type) {
	case *file:
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.fd < 0 {
			return false // its Read reports the closed file
		}
		fn(s.fd)
		return true
	case syscall.Conn:
		rc, err := s.SyscallConn()
		if err != nil {
			return false
		}
		called := false
		if rc.Control(func(fd uintptr) { fn(int(fd)); called = true }) != nil {
			return false
		}
		return called
	}
	return false
}

// copyFrom moves up to limit bytes from src to f in the kernel. handled
// is false, with nothing copied, when src has no descriptor or the kernel
// cannot copy between the two files: the caller then copies by hand.
func (f *file) copyFrom(src io.Reader, limit int64) (n int64, handled bool, err error) {
	if !kernelCopy {
		return 0, false, nil
	}
	withSourceFD(src, func(sfd int) {
		f.mu.RLock()
		defer f.mu.RUnlock()
		if f.fd < 0 {
			n, handled, err = 0, true, f.closedErr("write")
			return
		}
		n, handled, err = copyFileRange(f.fd, sfd, limit)
		err = pathErr("copy_file_range", f.name, err)
	})
	return n, handled, err
}
