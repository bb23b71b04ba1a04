//go:build linux

package file_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// TestOutputThatIsNoRegularFile: /dev/null takes every batch (it cannot be
// synced, locked or emptied, and need not be), two targets may share it,
// /dev/full fails the batch for good with the device's error, and a named
// pipe gets the records in order.
func TestOutputThatIsNoRegularFile(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"file:///dev/null?format=json", "file:///dev/null?format=raw&append=false", "file:///dev/null?format=csv"} {
		a, b := target(t, u), target(t, u)
		require.NoError(t, a.WriteBatch(ctx, msgs(`{"a":1}`, `{"a":2}`)), u)
		require.NoError(t, b.WriteBatch(ctx, msgs(`{"a":3}`)), u)
	}

	full := target(t, "file:///dev/full?format=json")
	err := full.WriteBatch(ctx, msgs(`{"a":1}`))
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Equal(t, "write to /dev/full: no space left on device", err.Error())

	fifo := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	pipe := newTarget(t, "file://"+fifo+"?format=json")
	require.NoError(t, pipe.Connect(ctx))
	require.NoError(t, pipe.WriteBatch(ctx, msgs(`{"a":1}`, `{"a":2}`)))
	require.NoError(t, pipe.WriteBatch(ctx, msgs(`{"a":3}`)))
	require.NoError(t, pipe.Close(ctx, nil))
	assert.Equal(t, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n", <-got)
}

// TestPipeWithoutReaderGivesUpWithTheContext: a named pipe that no program
// reads makes Connect wait, but not past its context (a plain open would
// wait in the kernel, deaf to Ctrl-C).
func TestPipeWithoutReaderGivesUpWithTheContext(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := newTarget(t, "file://"+fifo+"?format=json").Connect(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "is a named pipe that no program has opened for reading")
	assert.Less(t, time.Since(start), 5*time.Second)
}
