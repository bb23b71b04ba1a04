//go:build linux

package osfs

import "golang.org/x/sys/unix"

// kernelCopy says that copyFileRange can move bytes between files.
const kernelCopy = true

// copyFileRange copies up to limit bytes from the offset of src to the
// offset of dst with copy_file_range(2), advancing both. It reports
// handled false, with nothing copied, when the kernel cannot copy between
// these two files (another filesystem on kernels that refuse it, a pipe, a
// filesystem without support, a file that reports no data such as in
// /proc), so that the caller falls back to read and write.
func copyFileRange(dst, src int, limit int64) (written int64, handled bool, err error) {
	for limit > 0 {
		n, err := unix.CopyFileRange(src, nil, dst, nil, int(min(limit, 1<<30)), 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			if written == 0 && cannotCopy(err) {
				return 0, false, nil
			}
			return written, true, err
		case n == 0: // the end of src, or a file that hides its size
			return written, written > 0, nil
		}
		written += int64(n)
		limit -= int64(n)
	}
	return written, true, nil
}

// cannotCopy reports whether a copy_file_range error means "not between
// these files" rather than a failed copy.
func cannotCopy(err error) bool {
	switch err {
	case unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EIO, unix.EOPNOTSUPP, unix.EPERM, unix.EBADF:
		return true
	}
	return false
}
