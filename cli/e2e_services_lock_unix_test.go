//go:build unix

package cli_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// svcLockBroker holds, shared, the lock that the MQTT connector's tests
// (bridge/connectors/mqtt) take exclusively while they restart the broker,
// so that go test running both packages at once cannot restart the broker
// under these tests.
func svcLockBroker(t *testing.T) {
	t.Helper()
	path := filepath.Join(os.TempDir(), "mqb-test-mqtt-broker.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Logf("broker lock %s: %v (going on without it)", path, err)
		return
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		t.Logf("broker lock %s: %v (going on without it)", path, err)
		return
	}
	t.Cleanup(func() { f.Close() })
}
