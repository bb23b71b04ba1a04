package conformance_test

import (
	"flag"
	"os"
	"testing"
)

var long = flag.Bool("long", false, "explore more fault points, crash points and process kills (also MQB_CONFORMANCE_LONG=1)")

// helperEnv names the role a re-executed test binary plays (see
// helper_test.go); helperMain runs it, where helper processes are
// supported.
const helperEnv = "MQB_CONFORMANCE_HELPER"

var helperMain func(role string) int

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" && helperMain != nil {
		os.Exit(helperMain(role))
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
