package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

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
