//go:build !linux && !darwin && !freebsd

package osfs_test

import (
	"errors"
	"runtime"
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// TestNewRefuses checks the one error a spool gets where the backend does
// not run (compiled by CI for Windows; nothing here runs it).
func TestNewRefuses(t *testing.T) {
	fsys, err := osfs.New(t.TempDir(), osfs.Options{CreateRoot: true})
	if fsys != nil || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("New = %v, %v; want nil and an error matching errors.ErrUnsupported", fsys, err)
	}
	want := "the os backend does not support " + runtime.GOOS + " yet; use backend=memfs for tests"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
