package file

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
)

// The committed mark: after each batch is synced the target records the
// output's size in an extended attribute of the file (where the system and
// the filesystem have them). A writer killed in the middle of a batch
// leaves part of a record after the mark; the next target that opens the
// file cuts that partial last line off (cutTornTail), and only that: a
// file without the mark (a file the user made, a filesystem without extended
// attributes) is never cut, nor are whole lines, nor anything the mark says
// was committed.
const markAttr = "user.mqb.committed"

// readMark returns the committed size recorded on f, and whether there is
// one.
func readMark(f *os.File) (int64, bool) {
	b, ok := getMark(f)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && n >= 0
}

// writeMark records size as committed on f. Where extended attributes are
// not supported it does nothing: the mark only ever lets a torn tail be
// cut, so without it the file is left as it is.
func writeMark(f *os.File, size int64) { setMark(f, []byte(strconv.FormatInt(size, 10))) }

// cutTornTail cuts off a partial last line that lies after the committed
// mark of f, whose size is size, and returns the new size and how many
// bytes it cut. It reads the file through a descriptor of its own, since
// f is opened for writing only.
func cutTornTail(f *os.File, size int64) (int64, int64, error) {
	mark, ok := readMark(f)
	if !ok || size <= mark {
		return size, 0, nil
	}
	r, err := os.Open(f.Name())
	if err != nil {
		return size, 0, fmt.Errorf("read the end of %s: %w", f.Name(), err)
	}
	defer r.Close()
	tail := make([]byte, size-mark)
	if _, err := r.ReadAt(tail, mark); err != nil && err != io.EOF {
		return size, 0, fmt.Errorf("read the end of %s: %w", f.Name(), err)
	}
	if len(tail) == 0 || tail[len(tail)-1] == '\n' {
		return size, 0, nil // whole lines: records of a batch never acknowledged, or lines another program appended
	}
	keep := mark + int64(bytes.LastIndexByte(tail, '\n')+1)
	if err := f.Truncate(keep); err != nil {
		return size, 0, fmt.Errorf("cut the partial record at the end of %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return size, 0, err
	}
	return keep, size - keep, nil
}
