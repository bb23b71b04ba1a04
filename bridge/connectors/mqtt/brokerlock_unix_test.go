//go:build unix

package mqtt

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// brokerLockPath is shared by every test package that uses the machine's
// broker (this one and the command's end-to-end tests), which go test runs
// in parallel: a test that restarts the broker holds the lock exclusively,
// the others hold it shared, so no test sees a restart it did not make.
var brokerLockPath = filepath.Join(os.TempDir(), "mqb-test-mqtt-broker.lock")

// lockBroker takes the broker lock until the test ends.
func lockBroker(t testing.TB, exclusive bool) {
	t.Helper()
	f, err := os.OpenFile(brokerLockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Logf("broker lock %s: %v (going on without it)", brokerLockPath, err)
		return
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Logf("broker lock %s: %v (going on without it)", brokerLockPath, err)
		return
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}
