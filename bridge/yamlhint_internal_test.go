package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Quotes, comments, lists and block scalars that are valid YAML are not
// taken for mistakes.
func TestYAMLMistakeLeavesValidYAMLAlone(t *testing.T) {
	for _, src := range []string{
		"# a route\ninput:\n  url: 'stdin://?x=it''s' # comment with \"\noutput:\n  stdout: {format: \"lines\"}\n",
		"a:\n  b:\n    c: 1\n  d: 2\ne: \"x\\\"y\"\n",
		"list:\n  - url: x\n    fsync: none\n  - url: y\nnext: 1\n",
		"doc: |\n  free text with \" and '\n     odd indents\nafter: 1\n",
		"flow: {a: 1,\n  b: 2}\nx: 1\n",
	} {
		line, hint := yamlMistake(src)
		assert.Zero(t, line, "%q: %s", src, hint)
	}
}
