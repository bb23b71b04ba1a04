package bridge_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// YAML syntax errors name the line with the mistake, not the line where
// the parser's enclosing construct began.
func TestYAMLErrorsNameTheLineOfTheMistake(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"quote left open", "input:\n  url: \"stdin://\noutput:\n  url: \"stdout://\"\n",
			`line 2: the " quote opened on this line is not closed on it (the YAML parser stopped at line 1: did not find expected key)`},
		{"key indented one space", "input:\n  url: stdin://\n output:\n  url: stdout://\n",
			"line 3: indented by 1 space(s), which lines up with no enclosing level (0, 2)"},
		{"tab", "input:\n  url: stdin://\noutput:\n\turl: stdout://\n",
			"line 4: a tab indents this line; YAML indents with spaces only"},
		{"unknown key", "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nbatch: {sise: 3}\n",
			`line 3: unknown key "sise" (valid: max_bytes, period, size); did you mean "size"?`},
		{"flow mapping left open: the parser is right", "input: {url: \"stdin://\"\noutput: {url: \"stdout://\"}\n",
			"line 1: did not find expected ',' or '}'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bridge.ParseConfig(strings.NewReader(tt.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
