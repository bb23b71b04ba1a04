package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchReadModes drains in both read modes: the table names the mode
// of each consume row, the JSON cells do not collide, and an unknown mode
// is a usage error.
func TestBenchReadModes(t *testing.T) {
	base := []string{"bench", "--dir", t.TempDir(), "--op", "consume", "--fsync", "none",
		"--batch-size", "16", "--count", "32", "--rounds", "1"}
	r := ok(t, "", append(base, "--read", "lent,bytes")...)
	assert.Regexp(t, `(?m)^ *consume +none +16 +1KiB +lent `, r.stdout)
	assert.Regexp(t, `(?m)^ *consume +none +16 +1KiB +bytes `, r.stdout)

	r = ok(t, "", append(base, "--json")...)
	var rep struct {
		Results []struct{ Name, Read string } `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Results, 1, "the default is one read mode")
	assert.Equal(t, "lent", rep.Results[0].Read)
	assert.Regexp(t, `/read=lent$`, rep.Results[0].Name)

	r = run(t, "", append(base, "--read", "mmap")...)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, `--read "mmap": valid values are lent, bytes`)
}
