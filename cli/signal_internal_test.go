package cli

import (
	"bytes"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A signal that comes within signalEcho of the first is the same request
// to stop (timeout(1) sends SIGTERM to the process and to its group); one
// that comes later exits at once, without settling.
func TestSignalEcho(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	sigs := make(chan os.Signal, 3)
	exited := make(chan int, 1)
	var cancels atomic.Int32
	done := make(chan struct{})
	go func() {
		a.watchSignals(sigs, func(error) { cancels.Add(1) }, func(code int) { exited <- code })
		close(done)
	}()
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	time.Sleep(signalEcho / 2)
	select {
	case code := <-exited:
		t.Fatalf("the echo of the first signal exited with %d", code)
	default:
	}
	time.Sleep(signalEcho)
	sigs <- syscall.SIGINT
	assert.Equal(t, 130, <-exited, "a later second signal exits")
	close(sigs)
	<-done
	assert.Equal(t, int32(1), cancels.Load(), "the run was cancelled once")
	assert.Equal(t, "mqb: second interrupt: exiting without settling\n", stderr.String())
}
