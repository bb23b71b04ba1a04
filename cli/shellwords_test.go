package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The words completion sees are the shell's: quotes and backslashes
// removed, an open quote reported, and a quoted reply reads back as is.
func TestShellWords(t *testing.T) {
	t.Setenv("SPOOLS", "/var/spool")
	for line, want := range map[string][]string{
		`mqb copy --from dir-spool:///s\?fs`:          {"mqb", "copy", "--from", "dir-spool:///s?fs"},
		`mqb copy --from 'dir-spool:///s?a=1&b`:       {"mqb", "copy", "--from", "dir-spool:///s?a=1&b"},
		`mqb copy --from "dir-spool://$SPOOLS/a\"b" `: {"mqb", "copy", "--from", `dir-spool:///var/spool/a"b`, ""},
		`mqb  copy ${SPOOLS}x 'it'\''s' a\`:           {"mqb", "copy", "/var/spoolx", "it's", "a"},
		`mqb copy --to "a\b"`:                         {"mqb", "copy", "--to", `a\b`},
	} {
		words, _ := splitShellLine(line)
		assert.Equal(t, want, words, line)
	}
	_, raw := splitShellLine(`mqb copy --from 'dir-spool:///s?fs`)
	assert.Equal(t, `'dir-spool:///s?fs`, raw)
	for _, s := range []string{"dir-spool:///s?fsync=none&x=it's", `a"b$c\d e`} {
		for _, q := range []byte{0, '\'', '"'} {
			open := ""
			if q != 0 {
				open = string(q)
			}
			got, _ := dequote(open + shellQuote(s, q))
			assert.Equal(t, s, got, "quote %q in %q", s, open)
		}
	}
}
