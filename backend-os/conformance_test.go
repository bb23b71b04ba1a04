//go:build linux

package osfs_test

import (
	"testing"

	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// TestConformance runs the conformance suite against the real filesystem,
// each check on fresh temporary directories.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return newFS(t, t.TempDir()) })
}
