package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// routesApart builds a route of each config, named a, b, c... and returns
// what RoutesApart says of them.
func routesApart(t *testing.T, e *bridge.Env, configs ...*bridge.Config) error {
	t.Helper()
	var names []string
	var routes []*bridge.Route
	for i, c := range configs {
		r, err := e.NewRoute(c)
		require.NoError(t, err)
		names, routes = append(names, string(rune('a'+i))), append(routes, r)
	}
	return bridge.RoutesApart(names, routes)
}

// TestRoutesInACycleRefused: routes whose outputs lead back to their own
// input are refused, naming each step; a dead letter fed back to an input
// (a redrive) and a chain that ends are not.
func TestRoutesInACycleRefused(t *testing.T) {
	e := placeEnv()
	root := t.TempDir()
	sp := func(name string) bridge.Endpoint { return bridge.Endpoint{URL: "dir-spool://" + root + "/" + name} }
	file := func(name string) bridge.Endpoint { return bridge.Endpoint{URL: "file://" + root + "/" + name} }
	none := bridge.Endpoint{}
	for _, tc := range []struct {
		name    string
		configs []*bridge.Config
		refused string
	}{
		{"two spools", []*bridge.Config{placeRoute(sp("s1"), sp("s2"), none), placeRoute(sp("s2"), sp("s1/"), none)},
			"the routes form a cycle (route a writes " + root + "/s2, which route b reads; route b writes " + root + "/s1, which route a reads), so every message would go round them forever"},
		{"three routes through a file", []*bridge.Config{placeRoute(sp("a"), file("f.jsonl"), none), placeRoute(file("f.jsonl"), sp("b"), none), placeRoute(sp("b"), sp("a"), none)},
			"route a writes " + root + "/f.jsonl, which route b reads; route b writes " + root + "/b, which route c reads; route c writes " + root + "/a, which route a reads"},
		{"a cycle without the first route", []*bridge.Config{placeRoute(sp("a"), sp("b"), none), placeRoute(sp("c"), sp("d"), none), placeRoute(sp("d"), sp("c"), none)},
			"(route b writes " + root + "/d, which route c reads; route c writes " + root + "/c, which route b reads)"},
		{"a redrive of dead letters", []*bridge.Config{placeRoute(sp("in"), sp("out"), sp("dead")), placeRoute(sp("dead"), sp("in"), none)}, ""},
		{"a chain", []*bridge.Config{placeRoute(sp("a"), sp("b"), none), placeRoute(sp("b"), sp("c"), none), placeRoute(sp("c"), sp("d"), none)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, routesApart(t, e, tc.configs...), tc.refused)
		})
	}
}

// TestRoutesApart: routes run side by side may not share a written spool,
// drop zone or file, nor a read spool or drop-zone state file, however the
// paths are spelled; a route reading what another writes may.
func TestRoutesApart(t *testing.T) {
	e := placeEnv()
	root := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(root, link))
	ep := func(url string) bridge.Endpoint { return bridge.Endpoint{URL: url} }
	sp := func(name string) bridge.Endpoint { return ep("dir-spool://" + root + "/" + name) }
	route := func(in, out bridge.Endpoint, dead ...bridge.Endpoint) *bridge.Config {
		return placeRoute(in, out, append(dead, bridge.Endpoint{})[0])
	}
	for _, tc := range []struct {
		name    string
		a, b    *bridge.Config
		refused string
	}{
		{"one dead-letter spool", route(sp("in1"), sp("out1"), sp("dead")), route(sp("in2"), sp("out2"), ep("spool://"+link+"/dead/")),
			"route a's dead_letter and route b's dead_letter both write to " + root + "/dead, which takes one writer at a time"},
		{"output of one, dead letter of the other", route(sp("in1"), sp("out")), route(sp("in2"), sp("out2"), sp("out")),
			"route a's output and route b's dead_letter both write to " + root + "/out"},
		{"one output file", route(sp("in1"), ep("file://"+root+"/o.jsonl")), route(sp("in2"), ep("file://"+link+"/o.jsonl")),
			"route a's output and route b's output both write to " + root + "/o.jsonl"},
		{"one output drop zone", route(sp("in1"), ep("dropzone://"+root+"/z")), route(sp("in2"), ep("dropzone://"+root+"/z")),
			"both write to " + root + "/z"},
		{"one input spool", route(sp("in"), sp("out1")), route(sp("in"), sp("out2")),
			"route a's input and route b's input both read " + root + "/in, which takes one reader at a time"},
		{"one drop-zone state file", route(ep("dropzone://"+root+"/z"), sp("out1")), route(ep("dropzone://"+root+"/z"), sp("out2")),
			"route a's input's state file and route b's input's state file both read " + root + "/z/.mqb-dropzone-state.json"},
		{"standard output", route(sp("in1"), ep("stdout://")), route(sp("in2"), ep("stdout://")), ""},
		{"standard input", route(ep("stdin://"), sp("out1")), route(ep("stdin://"), sp("out2")),
			"route a's input and route b's input both read standard input, which takes one reader at a time"},
		{"one drop zone, two state files", route(ep("dropzone://"+root+"/z"), sp("out1")), route(ep("dropzone://"+root+"/z?state_path="+root+"/b.json"), sp("out2")), ""},
		{"a pipeline", route(sp("in"), sp("mid"), sp("dead1")), route(sp("mid"), sp("out"), sp("dead2")), ""},
		{"apart", route(sp("in1"), sp("out1")), route(sp("in2"), sp("out2")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, routesApart(t, e, tc.a, tc.b), tc.refused)
		})
	}
}

// TestFileInAnotherRoutesDirectoryRefused: a route may not write a file
// into a spool or drop zone that another route reads or writes.
func TestFileInAnotherRoutesDirectoryRefused(t *testing.T) {
	e := placeEnv()
	root := t.TempDir()
	ep := func(url string) bridge.Endpoint { return bridge.Endpoint{URL: url} }
	none := bridge.Endpoint{}
	for _, tc := range []struct {
		name    string
		a, b    *bridge.Config
		refused string
	}{
		{"a dead-letter file in another route's input spool", placeRoute(ep("dir-spool://"+root+"/in"), ep("dir-spool://"+root+"/out"), none),
			placeRoute(ep("stdin://"), ep("stdout://"), ep("file://"+root+"/in/000/000000001.bin")),
			"route b's dead_letter " + root + "/in/000/000000001.bin is a file inside route a's input " + root + "/in, whose files are read as messages, even while it is half written: give route b's dead_letter another path"},
		{"an output file in another route's output zone", placeRoute(ep("dir-spool://"+root+"/in"), ep("dropzone://"+root+"/z"), none),
			placeRoute(ep("stdin://"), ep("file://"+root+"/z/b.jsonl"), none),
			"route b's output " + root + "/z/b.jsonl is a file inside route a's output " + root + "/z"},
		{"a hidden file in another route's zone", placeRoute(ep("dir-spool://"+root+"/in"), ep("dropzone://"+root+"/z"), none),
			placeRoute(ep("stdin://"), ep("file://"+root+"/z/.b.jsonl"), none), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireRefused(t, routesApart(t, e, tc.a, tc.b), tc.refused)
		})
	}
}
