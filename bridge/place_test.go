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
)

// TestSameDirectoryRefused: a route whose source and target are one
// directory, however the two are spelled, is a configuration error.
func TestSameDirectoryRefused(t *testing.T) {
	e := bridge.NewEnv()
	dirspool.Register(e)
	dropzone.Register(e)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(&bridge.Config{Input: tc.in, Output: tc.out})
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, bridge.ErrSameDirectory)
			require.ErrorIs(t, err, bridge.ErrConfig, "a usage error: exit 2")
			assert.Contains(t, err.Error(), tc.mentions)
		})
	}
}
