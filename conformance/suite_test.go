package conformance_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

var long = flag.Bool("long", false, "explore more fault points, crash points and process kills (also MQB_CONFORMANCE_LONG=1)")

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	flag.Parse()
	if *long {
		os.Setenv("MQB_CONFORMANCE_LONG", "1")
	}
	os.Exit(m.Run())
}

func longMode() bool {
	v := os.Getenv("MQB_CONFORMANCE_LONG")
	return *long || (v != "" && v != "0" && v != "false")
}

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
