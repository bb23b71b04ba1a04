package bridge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

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
			"the routes form a cycle (route r0 writes " + root + "/s2, which route r1 reads; route r1 writes " + root + "/s1, which route r0 reads), so every message would go round them forever"},
		{"three routes through a file", []*bridge.Config{placeRoute(sp("a"), file("f.jsonl"), none), placeRoute(file("f.jsonl"), sp("b"), none), placeRoute(sp("b"), sp("a"), none)},
			"route r0 writes " + root + "/f.jsonl, which route r1 reads; route r1 writes " + root + "/b, which route r2 reads; route r2 writes " + root + "/a, which route r0 reads"},
		{"a cycle without the first route", []*bridge.Config{placeRoute(sp("a"), sp("b"), none), placeRoute(sp("c"), sp("d"), none), placeRoute(sp("d"), sp("c"), none)},
			"(route r1 writes " + root + "/d, which route r2 reads; route r2 writes " + root + "/c, which route r1 reads)"},
		{"a redrive of dead letters", []*bridge.Config{placeRoute(sp("in"), sp("out"), sp("dead")), placeRoute(sp("dead"), sp("in"), none)}, ""},
		{"a chain", []*bridge.Config{placeRoute(sp("a"), sp("b"), none), placeRoute(sp("b"), sp("c"), none), placeRoute(sp("c"), sp("d"), none)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			var routes []*bridge.Route
			for i, c := range tc.configs {
				r, err := e.NewRoute(c)
				require.NoError(t, err)
				names, routes = append(names, fmt.Sprintf("r%d", i)), append(routes, r)
			}
			requireRefused(t, bridge.RoutesApart(names, routes), tc.refused)
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
			var routes []*bridge.Route
			for _, c := range []*bridge.Config{tc.a, tc.b} {
				r, err := e.NewRoute(c)
				require.NoError(t, err)
				routes = append(routes, r)
			}
			requireRefused(t, bridge.RoutesApart([]string{"a", "b"}, routes), tc.refused)
		})
	}
}
