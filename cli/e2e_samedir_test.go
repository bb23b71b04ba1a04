package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSameSpoolRefused: lint, copy and run refuse a route that reads and
// writes one spool or one drop zone, with exit 2, however the two paths are
// spelled, and write nothing.
func TestSameSpoolRefused(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	require.NoError(t, os.Mkdir(spool, 0o700))
	require.NoError(t, os.Symlink(spool, filepath.Join(dir, "link")))
	for name, pair := range map[string][2]string{
		"alias and trailing slash": {"dir-spool://" + spool, "spool://" + spool + "/"},
		"dot dot":                  {"dir-spool://" + spool, "dirspool://" + dir + "/x/../spool"},
		"symlink":                  {"dir-spool://" + filepath.Join(dir, "link"), "dir-spool://" + spool},
		"drop zones":               {"dropzone://" + spool, "dropzone://" + filepath.Join(dir, "link") + "/"},
	} {
		t.Run(name, func(t *testing.T) {
			route := writeFile(t, filepath.Join(t.TempDir(), "route.yaml"), "input: {url: \""+pair[0]+"\"}\noutput: {url: \""+pair[1]+"\"}\ndrain: true\n")
			for _, args := range [][]string{
				{"lint", route},
				{"run", route},
				{"copy", "--drain", "--from", pair[0], "--to", pair[1]},
			} {
				r := run(t, "", args...)
				assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
				assert.Contains(t, r.stderr, "read what it writes forever", args)
			}
			entries, err := os.ReadDir(spool)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing is written")
		})
	}
}
