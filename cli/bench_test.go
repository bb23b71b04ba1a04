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

// TestBenchRoundSize: without --count each case's rounds are sized by
// --round-time, and the table says so; a negative count, a round time of
// zero, and a round time beside a fixed count are usage errors.
func TestBenchRoundSize(t *testing.T) {
	base := []string{"bench", "--dir", t.TempDir(), "--op", "produce", "--fsync", "none", "--batch-size", "16", "--rounds", "1"}
	r := ok(t, "", append(base, "--round-time", "1ns")...)
	assert.Contains(t, r.stdout, "256 messages per case and round (sized for rounds of 1ns)")

	for _, tc := range []struct{ args, want []string }{
		{[]string{"--count", "-1"}, []string{"--count -1: must be 0"}},
		{[]string{"--round-time", "0s"}, []string{"--round-time 0s: must be above 0"}},
		{[]string{"--count", "64", "--round-time", "1s"}, []string{"--round-time sizes rounds only with --count 0", "--count 64 fixes them"}},
	} {
		r := run(t, "", append(base, tc.args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		for _, w := range tc.want {
			assert.Contains(t, r.stderr, w, tc.args)
		}
	}
}
