//go:build unix

package conformance_test

import (
	"regexp"
	"testing"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// The suite against the simplest backend there is. Its fault loops, which
// take half a minute on a real disk, run in long mode only: TestMemFS runs
// them on every run, and backend-os on a real disk.
func TestRootFS(t *testing.T) {
	var cfg conformance.Config
	if !longMode() {
		cfg.Skip = regexp.MustCompile(`^FaultInjection`)
	}
	conformance.RunConfig(t, cfg, func(t *testing.T) core.FS { return newRootFS(t) })
}

// The suite against memfs, whose crash model drives the power-cut loops.
func TestMemFS(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return memfs.New() })
}
