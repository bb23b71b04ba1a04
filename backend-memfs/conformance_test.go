package memfs_test

import (
	"testing"

	"github.com/spf13/afero"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// TestConformance runs the conformance suite, power-cut loops included (on
// the crash model), against memfs.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return memfs.New() })
}

// TestConformanceNewOn runs it on an FS that mirrors its tree into a
// caller's base by name, which stores bytes by another path than New's.
func TestConformanceNewOn(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return memfs.NewOn(afero.NewMemMapFs()) })
}
