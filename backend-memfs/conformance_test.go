package memfs_test

import (
	"testing"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// TestConformance runs the conformance suite, power-cut loops included (on
// the crash model), against memfs.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return memfs.New() })
}
