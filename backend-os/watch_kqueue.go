//go:build (darwin || freebsd) && !mqb_portable

package osfs

import (
	"io/fs"
	"sync"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

var _ core.DirWatcher = (*FS)(nil)

// kqueue reports NOTE_WRITE on a directory's descriptor when an entry is
// added, removed or renamed in it, and NOTE_DELETE when the directory itself
// goes. (fsnotify is not used: to report writes to files, its kqueue
// backend opens every file of a watched directory, a descriptor per queued
// message, and it watches by path.)
const (
	watchFflags = unix.NOTE_WRITE | unix.NOTE_DELETE
	wakeIdent   = 0 // the EVFILT_USER event that wakes the reader to stop
)

// WatchDir watches the directory name: after an entry is created in it or
// renamed into it (and also after one is removed: kqueue does not tell them
// apart), the DirWatch's channel receives a value. Signals are coalesced
// (the channel holds at most one), so a receiver should look at the whole
// directory each time. The watch follows the directory found at the time of
// the call, not the name, through a descriptor of it, and goes quiet if the
// directory is removed. One kqueue and one goroutine serve all watches of an
// FS; Close on the FS stops them.
func (f *FS) WatchDir(name string) (core.DirWatch, error) {
	var dw *dirWatch
	err := f.do("watch", name, func(rootfd int) error {
		w, err := f.getWatcher()
		if err != nil {
			return err
		}
		fd, err := f.openBeneath(rootfd, name, watchOpenFlags|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		dw, err = w.add(fd, name)
		if err != nil {
			unix.Close(fd)
		}
		return err
	}, name)
	if err != nil {
		return nil, err
	}
	return dw, nil
}

// getWatcher returns the FS's kqueue watcher, starting it on first use.
func (f *FS) getWatcher() (*watcher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fs.ErrClosed
	}
	if f.watcher == nil {
		w, err := newWatcher()
		if err != nil {
			return nil, err
		}
		f.watcher = w
	}
	return f.watcher, nil
}

// watcher owns one kqueue and the goroutine that waits on it and signals
// the DirWatches registered for each directory descriptor.
type watcher struct {
	kq   int
	done chan struct{} // closed when the reader has returned

	mu     sync.Mutex
	fds    map[int]*dirWatch // by the descriptor each DirWatch owns
	closed bool
}

func newWatcher() (*watcher, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(kq)
	wake := make([]unix.Kevent_t, 1)
	unix.SetKevent(&wake[0], wakeIdent, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if err := kevent(kq, wake, nil); err != nil {
		unix.Close(kq)
		return nil, err
	}
	w := &watcher{kq: kq, done: make(chan struct{}), fds: make(map[int]*dirWatch)}
	go w.run()
	return w, nil
}

// kevent registers changes, or waits for events when events is not empty.
func kevent(kq int, changes, events []unix.Kevent_t) error {
	return ignoringEINTR(func() error {
		_, err := unix.Kevent(kq, changes, events, nil)
		return err
	})
}

// add watches the directory open as fd, which the DirWatch then owns.
func (w *watcher) add(fd int, name string) (*dirWatch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fs.ErrClosed
	}
	ev := make([]unix.Kevent_t, 1)
	unix.SetKevent(&ev[0], fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR)
	ev[0].Fflags = watchFflags
	if err := kevent(w.kq, ev, nil); err != nil {
		return nil, err
	}
	dw := &dirWatch{w: w, fd: fd, name: name, c: make(chan struct{}, 1)}
	w.fds[fd] = dw
	return dw, nil
}

// remove unregisters dw and closes its descriptor, which drops its kevent.
// Under w.mu, so that a reused descriptor number is never taken for dw's.
func (w *watcher) remove(dw *dirWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fds[dw.fd] != dw {
		return // the directory was removed, or w is closed
	}
	delete(w.fds, dw.fd)
	unix.Close(dw.fd)
}

func (w *watcher) run() {
	defer close(w.done)
	events := make([]unix.Kevent_t, 64)
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Kevent(w.kq, nil, events, nil)
			return err
		})
		if err != nil {
			w.signalAll() // unexpected: wake everyone to rescan
			return
		}
		for _, ev := range events[:n] {
			if ev.Filter == unix.EVFILT_USER {
				return // close
			}
			w.event(int(ev.Ident), ev.Fflags)
		}
	}
}

// event handles what kqueue reported for the descriptor fd.
func (w *watcher) event(fd int, fflags uint32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	dw := w.fds[fd]
	if dw == nil {
		return // closed meanwhile
	}
	if fflags&unix.NOTE_WRITE != 0 {
		dw.signal()
	}
	if fflags&unix.NOTE_DELETE != 0 {
		delete(w.fds, fd) // the directory is gone: nothing more will come
		unix.Close(fd)
	}
}

func (w *watcher) signalAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, dw := range w.fds {
		dw.signal()
	}
}

// close stops the reader, waits for it to return, and closes every
// descriptor.
func (w *watcher) close() {
	ev := make([]unix.Kevent_t, 1)
	unix.SetKevent(&ev[0], wakeIdent, unix.EVFILT_USER, 0)
	ev[0].Fflags = unix.NOTE_TRIGGER
	if kevent(w.kq, ev, nil) == nil {
		<-w.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for fd := range w.fds {
		unix.Close(fd)
	}
	clear(w.fds)
	unix.Close(w.kq)
}

// dirWatch is one live watch, returned by WatchDir.
type dirWatch struct {
	w    *watcher
	fd   int
	name string
	c    chan struct{}
	once sync.Once
}

// signal wakes the receiver without blocking: a pending signal already
// covers this one.
func (d *dirWatch) signal() {
	select {
	case d.c <- struct{}{}:
	default:
	}
}

// C receives a value after the directory's entries changed. It is never
// closed.
func (d *dirWatch) C() <-chan struct{} { return d.c }

// Close stops the watch. Values already in C stay there. A second Close
// fails with an error matching fs.ErrClosed.
func (d *dirWatch) Close() error {
	err := error(&fs.PathError{Op: "watch close", Path: d.name, Err: fs.ErrClosed})
	d.once.Do(func() {
		d.w.remove(d)
		err = nil
	})
	return err
}
