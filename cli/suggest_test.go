package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A misspelt option, value, scheme, connector, flag or command gets a
// "did you mean" on the one line of the error.
func TestMistakesGetSuggestions(t *testing.T) {
	dir := t.TempDir()
	yaml := func(name, content string) string { return writeFile(t, filepath.Join(dir, name), content) }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"option", []string{"copy", "--from", "stdin://", "--to", "dir-spool://" + dir + "/s?fsnc=batch"}, `option "fsnc": unknown dir_spool option (valid: atomic,`},
		{"option hint", []string{"copy", "--from", "stdin://", "--to", "dir-spool://" + dir + "/s?fsnc=batch"}, `; did you mean "fsync"?`},
		{"value", []string{"copy", "--from", "stdin://", "--to", "dir-spool://" + dir + "/s?fsync=bach"}, `did you mean "batch"?`},
		{"YAML name as scheme", []string{"copy", "--from", "dir_spool://" + dir + "/s", "--to", "stdout://"}, "did you mean dir-spool://?"},
		{"scheme", []string{"copy", "--from", "stdn://", "--to", "stdout://"}, "did you mean stdin://?"},
		{"YAML connector", []string{"lint", yaml("c.yaml", "input: {dir_spol: {path: /x}}\noutput: {url: \"stdout://\"}\n")}, "did you mean dir_spool?"},
		{"YAML key", []string{"lint", yaml("k.yaml", "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nbatch: {sise: 3}\n")}, `k.yaml: line 3: unknown key "sise" (valid: max_bytes, period, size); did you mean "size"?`},
		{"YAML open quote", []string{"lint", yaml("q.yaml", "input:\n  url: \"stdin://\noutput:\n  url: \"stdout://\"\n")}, `q.yaml: line 2: the " quote opened on this line is not closed on it`},
		{"flag", []string{"copy", "--dran", "--from", "stdin://", "--to", "stdout://"}, "unknown flag: --dran; did you mean --drain?"},
		{"global flag", []string{"copy", "--log-formt", "json"}, "did you mean --log-format?"},
		{"command", []string{"cpy"}, `unknown command "cpy" for "mqb"; did you mean "copy"? (see mqb --help)`},
		{"far from any command", []string{"frobnicate"}, `unknown command "frobnicate" for "mqb" (commands: bench,`},
		{"spool command", []string{"spool", "sta", dir}, `unknown spool command "sta" (valid: stat, ls, peek, fields); did you mean "stat"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			assert.NotContains(t, r.stderr, "; ;")
		})
	}
}
