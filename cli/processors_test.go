package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --jq and a route file's pipeline reshape, split and drop messages; a
// dropped message is acknowledged (the spool is left empty), and a
// processor error stops the route naming the message, losing nothing.
func TestProcessors(t *testing.T) {
	dir := t.TempDir()
	spool := "dir-spool://" + filepath.Join(dir, "in")
	in := `{"order":1,"items":[{"sku":"a","qty":2},{"sku":"b","qty":0}]}` + "\n" + `{"order":2,"items":[]}` + "\n"

	t.Run("--jq", func(t *testing.T) {
		ok(t, in, "copy", "--from", "stdin://?format=json", "--to", spool)
		r := ok(t, "", "copy", "--drain", "--from", spool, "--to", "stdout://", "--jq", `.order as $o | .items[] | select(.qty > 0) | {order: $o, sku}`)
		assert.Equal(t, `{"order":1,"sku":"a"}`+"\n", r.stdout)
		assert.Contains(t, ok(t, "", "spool", "stat", filepath.Join(dir, "in")).stdout, "backlog   0 chunk(s)", "the dropped order was acknowledged")
	})
	t.Run("route file", func(t *testing.T) {
		ok(t, in, "copy", "--from", "stdin://?format=json", "--to", spool)
		route := writeFile(t, filepath.Join(dir, "r.yaml"), `input: {url: "`+spool+`"}
output: {url: "stdout://"}
drain: true
pipeline:
  processors:
    - filter: '(.items | length) > 0'
    - metadata: {set: {team: sales}}
    - jq: '{order, team: $meta.team}'
`)
		r := ok(t, "", "run", route)
		assert.Equal(t, `{"order":1,"team":"sales"}`+"\n", r.stdout)
	})
	t.Run("an error stops the route and names the message", func(t *testing.T) {
		ok(t, "not json\n", "copy", "--from", "stdin://", "--to", spool)
		r := run(t, "", "copy", "--drain", "--from", spool, "--to", "stdout://", "--jq", ".")
		assert.Equal(t, 1, r.code)
		assert.Regexp(t, `processor jq "\." on message [0-9a-f-]+: the payload is not JSON`, r.stderr)
		assert.Empty(t, r.stdout)
		require.Contains(t, ok(t, "", "spool", "stat", filepath.Join(dir, "in")).stdout, "backlog   1 chunk(s)")
	})
	t.Run("a bad program is a usage error", func(t *testing.T) {
		r := run(t, "", "copy", "--from", "stdin://", "--to", "stdout://", "--jq", ".a[")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, `--jq: jq program ".a[": unexpected EOF`)
	})
}
