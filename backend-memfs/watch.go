package memfs

import (
	"syscall"

	"github.com/mqb-project/mqb/core"
)

// WatchDir reports, on the returned watch's channel, every entry created in
// or renamed into the directory name (files, directories and claim files
// alike) from now on. Reports are coalesced: the channel has a buffer of one
// and a report finding it full is dropped, so one receive may stand for many
// changes. The watch follows the directory if it is renamed; it goes quiet if
// the directory is removed. It fails with fs.ErrNotExist when name is missing
// and syscall.ENOTDIR when it is not a directory. Watches are not carried over
// by Crash.
func (f *FS) WatchDir(name string) (core.DirWatch, error) {
	const op = "watch"
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d, err := f.lookup(op, name)
	if err != nil {
		return nil, err
	}
	if d.kind != kindDir {
		return nil, pathErr(op, name, syscall.ENOTDIR)
	}
	w := &watch{fsys: f, dir: d, ch: make(chan struct{}, 1)}
	if d.watchers == nil {
		d.watchers = map[*watch]struct{}{}
	}
	d.watchers[w] = struct{}{}
	return w, nil
}

// notify wakes the watches of d; f.mu is held.
func (f *FS) notify(d *node) {
	for w := range d.watchers {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
}

type watch struct {
	fsys *FS
	dir  *node
	ch   chan struct{}
}

// C returns the channel that receives a value after the directory gained an
// entry. It is never closed, not even by Close.
func (w *watch) C() <-chan struct{} { return w.ch }

// Close stops the watch: no report is sent after it returns. Closing twice is
// harmless.
func (w *watch) Close() error {
	w.fsys.mu.Lock()
	defer w.fsys.mu.Unlock()
	delete(w.dir.watchers, w)
	return nil
}
