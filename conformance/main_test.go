package conformance_test

import (
	"flag"
	"os"
	"testing"
)

var long = flag.Bool("long", false, "explore more fault points and crash points (also MQB_CONFORMANCE_LONG=1)")

func TestMain(m *testing.M) {
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
