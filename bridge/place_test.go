package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
	"github.com/mqb-project/mqb/bridge/connectors/file"
	"github.com/mqb-project/mqb/bridge/connectors/stdio"
)

// placeEnv knows the connectors that are Placed.
func placeEnv() *bridge.Env {
	e := bridge.NewEnv()
	dirspool.Register(e)
	dropzone.Register(e)
	file.Register(e)
	stdio.Register(e)
	return e
}

// placeRoute is the configuration of a route from in to out, with dead as
// its dead letter unless dead's URL is empty.
func placeRoute(in, out, dead bridge.Endpoint) *bridge.Config {
	c := &bridge.Config{Input: in, Output: out}
	if dead.URL != "" {
		c.DeadLetter = &dead
	}
	return c
}

// requireRefused requires err to be nil when refused is empty, and else a
// same-place configuration error (exit 2) that says refused.
func requireRefused(t *testing.T, err error, refused string) {
	t.Helper()
	if refused == "" {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, bridge.ErrSamePlace)
	require.ErrorIs(t, err, bridge.ErrConfig, "a usage error: exit 2")
	assert.Contains(t, err.Error(), refused)
}

// TestSameDirectoryRefused: a route whose source and target are one
// directory, however the two are spelled, is a configuration error.
func TestSameDirectoryRefused(t *testing.T) {
	e := placeEnv()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	require.NoError(t, os.Symlink(real, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(root, filepath.Join(root, "rootlink")))
	other := filepath.Join(root, "other")

	spool := func(p string) bridge.Endpoint { return bridge.Endpoint{URL: "dir-spool://" + p} }
	for _, tc := range []struct {
		name     string
		in, out  bridge.Endpoint
		refused  bool
		mentions string
	}{
		{"same path", spool(real), spool(real), true, real},
		{"alias schemes", bridge.Endpoint{URL: "spool://" + real}, bridge.Endpoint{URL: "dirspool://" + real}, true, real},
		{"trailing slash", spool(real), spool(real + "/"), true, real},
		{"dot dot", spool(real), spool(real + "/sub/.."), true, real},
		{"symlink", spool(filepath.Join(root, "link")), spool(real), true, filepath.Join(root, "link")},
		{"symlinked parent of a missing spool", spool(filepath.Join(root, "rootlink", "new")), spool(filepath.Join(root, "new")), true, filepath.Join(root, "new")},
		{"YAML and URL", bridge.Endpoint{Connector: "dir_spool", Fields: map[string]any{"path": real}}, spool(real + "/"), true, real},
		{"memfs same path", spool(real + "?backend=memfs"), spool(real + "?backend=memfs"), true, real},
		{"dropzone to dropzone", bridge.Endpoint{URL: "dropzone://" + real}, bridge.Endpoint{URL: "dropzone://" + filepath.Join(root, "link")}, true, real},
		{"spool to dropzone in one directory", spool(real), bridge.Endpoint{URL: "dropzone://" + real + "/"}, true, real},
		{"other directory", spool(real), spool(other), false, ""},
		{"memfs and os", spool(real + "?backend=memfs"), spool(real), false, ""},
		{"dropzone to another dropzone", bridge.Endpoint{URL: "dropzone://" + real}, bridge.Endpoint{URL: "dropzone://" + other}, false, ""},
		{"file to itself", bridge.Endpoint{URL: "file://" + real + "/o.jsonl"}, bridge.Endpoint{URL: "file://" + filepath.Join(root, "link", "o.jsonl") + "?format=json"}, true, filepath.Join(real, "o.jsonl")},
		{"file to another file", bridge.Endpoint{URL: "file://" + real + "/o.jsonl"}, bridge.Endpoint{URL: "file://" + real + "/p.jsonl"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(&bridge.Config{Input: tc.in, Output: tc.out})
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, bridge.ErrSamePlace)
			require.ErrorIs(t, err, bridge.ErrConfig, "a usage error: exit 2")
			assert.Contains(t, err.Error(), tc.mentions)
		})
	}
}

// TestDeadLetterPlaceRefused: the dead-letter endpoint may be neither the
// input (the route would read its dead letters back) nor the output
// (refused messages would land among the delivered ones).
func TestDeadLetterPlaceRefused(t *testing.T) {
	e := placeEnv()
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	require.NoError(t, os.Mkdir(out, 0o700))
	require.NoError(t, os.Symlink(out, filepath.Join(root, "outlink")))
	spool := func(p string) bridge.Endpoint { return bridge.Endpoint{URL: "dir-spool://" + p} }
	fileAt := func(p string) bridge.Endpoint { return bridge.Endpoint{URL: "file://" + p} }
	for _, tc := range []struct {
		name               string
		in, out, dead      bridge.Endpoint
		mentions, conflict string
	}{
		{"dead letters into the input", spool(in), spool(out), spool(in + "/"), in, "the input and the dead_letter"},
		{"dead letters into the output spool", spool(in), spool(out), spool(filepath.Join(root, "outlink")), out, "the output and the dead_letter"},
		{"dead letters into the output file", spool(in), fileAt(out + ".jsonl"), fileAt(out + ".jsonl?format=lines"), out + ".jsonl", "refused messages would land among the delivered ones"},
		{"file input and file dead letters", fileAt(in + ".jsonl"), spool(out), fileAt(in + ".jsonl"), in + ".jsonl", "the input and the dead_letter"},
		{"output and dead letters on standard output", spool(in), bridge.Endpoint{URL: "stdout://"}, bridge.Endpoint{URL: "stdout://?format=raw"}, "standard output", "the output and the dead_letter are both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(&bridge.Config{Input: tc.in, Output: tc.out, DeadLetter: &tc.dead})
			require.ErrorIs(t, err, bridge.ErrSamePlace)
			require.ErrorIs(t, err, bridge.ErrConfig, "a usage error: exit 2")
			assert.Contains(t, err.Error(), tc.mentions)
			assert.Contains(t, err.Error(), tc.conflict)
		})
	}
	_, err := e.NewRoute(&bridge.Config{Input: spool(in), Output: spool(out), DeadLetter: &bridge.Endpoint{URL: "dir-spool://" + root + "/dead"}})
	require.NoError(t, err, "three places")
}

// TestFileInMessageDirectoryRefused: a route whose output or dead-letter
// file lies in the drop zone or spool it reads or writes, under a name read
// there as a message, or is the zone's state file, is refused; a name the
// zone skips (hidden, or not matching its pattern) is not, nor a spool in a
// subdirectory, since zones and spools read files only.
func TestFileInMessageDirectoryRefused(t *testing.T) {
	e := placeEnv()
	zone := t.TempDir()
	zoneLink := filepath.Join(t.TempDir(), "zonelink")
	require.NoError(t, os.Symlink(zone, zoneLink))
	in := bridge.Endpoint{URL: "dropzone://" + zone}
	csvOnly := bridge.Endpoint{URL: "dropzone://" + zone + "?pattern=*.csv"}
	fileAt := func(p string) bridge.Endpoint { return bridge.Endpoint{URL: "file://" + p} }
	other := bridge.Endpoint{URL: "dir-spool://" + t.TempDir()}
	outSpool := bridge.Endpoint{URL: "dir-spool://" + zone}
	outZone := bridge.Endpoint{URL: "dropzone://" + zone}
	for _, tc := range []struct {
		name          string
		in, out, dead bridge.Endpoint
		refused       string
	}{
		{"output file in the zone", in, fileAt(zone + "/all.jsonl"), bridge.Endpoint{}, "the output " + zone + "/all.jsonl is a file inside the input"},
		{"dead-letter file in the zone", in, other, fileAt(zone + "/bad.jsonl"), "the dead_letter " + zone + "/bad.jsonl is a file inside the input"},
		{"output file matching the pattern", csvOnly, fileAt(zone + "/x/../all.csv"), bridge.Endpoint{}, "is a file inside the input " + zone},
		{"zone named through a symbolic link", bridge.Endpoint{URL: "dropzone://" + zoneLink}, fileAt(zone + "/all.jsonl"), bridge.Endpoint{}, "is a file inside the input " + zone},
		{"output file not matching the pattern", csvOnly, fileAt(zone + "/all.jsonl"), bridge.Endpoint{}, ""},
		{"hidden output file", in, fileAt(zone + "/.all.jsonl"), bridge.Endpoint{}, ""},
		{"output file beside the zone", in, fileAt(filepath.Dir(zone) + "/all.jsonl"), bridge.Endpoint{}, ""},
		{"output file in the input spool", bridge.Endpoint{URL: "dir-spool://" + zone}, fileAt(zone + "/000000007.bin"), bridge.Endpoint{}, "is a file inside the input " + zone},
		{"dead-letter spool in the zone", in, other, bridge.Endpoint{URL: "dir-spool://" + zone + "/dead"}, ""},
		{"dead-letter spool in the input spool", bridge.Endpoint{URL: "dir-spool://" + zone}, other, bridge.Endpoint{URL: "dir-spool://" + zone + "/dead"}, ""},
		{"output file is the zone's state file", in, fileAt(zone + "/.mqb-dropzone-state.json"), bridge.Endpoint{}, "the input's state file and the output are both " + zone + "/.mqb-dropzone-state.json"},
		{"dead-letter file in the output spool", other, outSpool, fileAt(zone + "/000000099.bin"), "the dead_letter " + zone + "/000000099.bin is a file inside the output " + zone + ", whose files are read as messages, even while it is half written"},
		{"output file in the dead-letter spool", other, fileAt(zone + "/x.jsonl"), outSpool, "the output " + zone + "/x.jsonl is a file inside the dead_letter " + zone},
		{"dead-letter file in the output zone", other, outZone, fileAt(zone + "/bad.jsonl"), "is a file inside the output " + zone},
		{"output file in the dead-letter zone", other, fileAt(zoneLink + "/all.jsonl"), outZone, "is a file inside the dead_letter " + zone},
		{"output file in a shard directory of the input spool", outSpool, fileAt(zone + "/000/000000009.bin"), bridge.Endpoint{}, "the output " + zone + "/000/000000009.bin is a file inside the input " + zone},
		{"dead-letter file in a shard directory of the output spool", other, outSpool, fileAt(zone + "/000/x.bin"), "is a file inside the output " + zone},
		{"dead-letter file in a subdirectory of the output zone", other, outZone, fileAt(zone + "/old/bad.jsonl"), ""},
		{"output file in a subdirectory of the input zone", in, fileAt(zone + "/old/all.jsonl"), bridge.Endpoint{}, ""},
		{"hidden dead-letter file in the output zone", other, outZone, fileAt(zone + "/.bad.jsonl"), ""},
		{"dead-letter file beside the output spool", other, outSpool, fileAt(filepath.Dir(zone) + "/bad.jsonl"), ""},
		{"dead-letter file is a state file kept elsewhere", bridge.Endpoint{URL: "dropzone://" + zone + "?state_path=" + filepath.Dir(zone) + "/s.json"}, other, fileAt(filepath.Dir(zone) + "/s.json"), "the input's state file and the dead_letter are both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(placeRoute(tc.in, tc.out, tc.dead))
			requireRefused(t, err, tc.refused)
		})
	}
}
