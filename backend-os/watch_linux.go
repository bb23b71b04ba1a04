//go:build linux && !mqb_portable

package osfs

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/mqb-project/mqb/core"
	"golang.org/x/sys/unix"
)

// watchMask selects the events that mean "an entry appeared".
const watchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR

// WatchDir watches the directory name: after an entry is created in it or
// renamed into it, the DirWatch's channel receives a value. Signals are
// coalesced (the channel holds at most one), so a receiver should look at the
// whole directory each time. The watch follows the directory found at the
// time of the call, not the name: it goes with the directory if that is
// renamed, and goes quiet if it is removed. One inotify instance and one
// goroutine serve all watches of an FS; Close on the FS stops them.
func (f *FS) WatchDir(name string) (core.DirWatch, error) {
	var dw *dirWatch
	err := f.do("watch", name, func(rootfd int) error {
		w, err := f.getWatcher()
		if err != nil {
			return err
		}
		fd, err := f.openBeneath(rootfd, name, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		dw, err = w.add(fd, name, filepath.Join(f.root, name), f.noProcFD)
		return err
	}, name)
	if err != nil {
		return nil, err
	}
	return dw, nil
}

// getWatcher returns the FS's inotify watcher, starting it on first use.
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

// watcher owns one inotify descriptor and the goroutine that reads it and
// signals the DirWatches registered for each watch descriptor.
type watcher struct {
	file *os.File // non-blocking, so Close wakes the reader
	rc   syscall.RawConn
	done chan struct{} // closed when the reader has returned

	mu  sync.Mutex
	wds map[int32]map[*dirWatch]struct{}
}

func newWatcher() (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	file := os.NewFile(uintptr(fd), "inotify")
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, err
	}
	w := &watcher{file: file, rc: rc, done: make(chan struct{}), wds: make(map[int32]map[*dirWatch]struct{})}
	go w.run()
	return w, nil
}

// add watches the directory open as dirfd. inotify only takes a path, so it
// is given the /proc/self/fd link of dirfd, which names exactly the
// directory that was resolved inside the root. Without /proc it falls back
// to the lexical path, refusing only a link in its last element: a watch is
// only a wake-up hint, so a raced swap could at worst cause spurious or
// missed wake-ups, never expose data.
func (w *watcher) add(dirfd int, name, lexical string, noProcFD bool) (*dirWatch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var wd int
	var err error
	cerr := w.rc.Control(func(ifd uintptr) {
		err = unix.ENOENT
		if !noProcFD {
			wd, err = unix.InotifyAddWatch(int(ifd), "/proc/self/fd/"+strconv.Itoa(dirfd), watchMask)
		}
		if err == unix.ENOENT {
			wd, err = unix.InotifyAddWatch(int(ifd), lexical, watchMask|unix.IN_DONT_FOLLOW)
		}
	})
	if cerr != nil {
		return nil, fs.ErrClosed
	}
	if err != nil {
		return nil, err
	}
	dw := &dirWatch{w: w, wd: int32(wd), name: name, c: make(chan struct{}, 1)}
	set := w.wds[dw.wd]
	if set == nil {
		// inotify gives the same descriptor to every watch of one inode.
		set = make(map[*dirWatch]struct{})
		w.wds[dw.wd] = set
	}
	set[dw] = struct{}{}
	return dw, nil
}

// remove unregisters dw and drops the inotify watch with its last DirWatch.
func (w *watcher) remove(dw *dirWatch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.wds[dw.wd]
	if _, ok := set[dw]; !ok {
		return // the kernel dropped the watch (IN_IGNORED) or w is closed
	}
	delete(set, dw)
	if len(set) > 0 {
		return
	}
	delete(w.wds, dw.wd)
	// Under w.mu, so that add cannot reuse the descriptor in between.
	// EINVAL (already gone) and a closed watcher are both fine.
	_ = w.rc.Control(func(ifd uintptr) { _, _ = unix.InotifyRmWatch(int(ifd), uint32(dw.wd)) })
}

func (w *watcher) run() {
	defer close(w.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.signal(-1) // unexpected: wake everyone to rescan
			}
			return
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			// struct inotify_event: s32 wd, u32 mask, u32 cookie, u32 len, name.
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:]))
			b = b[min(size, len(b)):]
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				w.signal(-1) // events were lost
			case mask&unix.IN_IGNORED != 0:
				w.forget(wd)
			case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				w.signal(wd)
			}
		}
	}
}

// signal wakes the DirWatches of wd, or all of them for wd -1, without
// blocking: a pending signal already covers this one.
func (w *watcher) signal(wd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, set := range w.wds {
		if wd != -1 && id != wd {
			continue
		}
		for dw := range set {
			select {
			case dw.c <- struct{}{}:
			default:
			}
		}
	}
}

// forget drops a watch the kernel has removed (its directory is gone).
func (w *watcher) forget(wd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wds, wd)
}

// close stops the reader and waits for it to return.
func (w *watcher) close() {
	w.file.Close()
	<-w.done
	w.mu.Lock()
	clear(w.wds)
	w.mu.Unlock()
}

// dirWatch is one live watch, returned by WatchDir.
type dirWatch struct {
	w    *watcher
	wd   int32
	name string
	c    chan struct{}
	once sync.Once
}

// C receives a value after an entry was created in or renamed into the
// directory. It is never closed.
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
