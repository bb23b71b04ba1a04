//go:build unix

package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// pipeWait is how often openPipe tries again while a named pipe has no
// reader.
const pipeWait = 100 * time.Millisecond

// openPipe opens the named pipe at path for writing once a program opens it
// for reading, and gives up when ctx ends. A plain open would wait for the
// reader inside the kernel, where neither Ctrl-C nor a shutdown reaches it.
// The pipe stays non-blocking: Go's poller waits for room to write.
func openPipe(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.ENXIO) { // ENXIO: no reader yet
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open output: %s is a named pipe that no program has opened for reading: %w", path, context.Cause(ctx))
		case <-time.After(pipeWait):
		}
	}
}
