package conformance_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	osfs "github.com/mqb-project/mqb/backend-os"
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

// scratchDir returns a fresh directory for one test: below
// MQB_CONFORMANCE_DIR when it is set (a mount to test, say), else a
// temporary one. It is removed when the test ends.
func scratchDir(t testing.TB) string {
	t.Helper()
	base := os.Getenv("MQB_CONFORMANCE_DIR")
	if base == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(base, "mqb-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestOSDir runs the suite with backend-os on the filesystem that holds
// MQB_CONFORMANCE_DIR, for example a network mount. Set
// MQB_CONFORMANCE_SHARED_LOCKS=1 where claims do not conflict within one
// process (flock on NFS). The process tests use that directory too.
func TestOSDir(t *testing.T) {
	if os.Getenv("MQB_CONFORMANCE_DIR") == "" {
		t.Skip("set MQB_CONFORMANCE_DIR to a directory on the filesystem to test")
	}
	cfg := conformance.Config{SharedLocks: os.Getenv("MQB_CONFORMANCE_SHARED_LOCKS") == "1"}
	conformance.RunConfig(t, cfg, func(t *testing.T) core.FS {
		fsys, err := osfs.New(scratchDir(t), osfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Close() })
		return fsys
	})
}
