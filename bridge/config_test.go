package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/bridge/connectors/file"
)

func testEnv() *bridge.Env {
	e := bridge.NewEnv()
	dirspool.Register(e)
	file.Register(e)
	return e
}

func TestConfigURLAndYAMLAreEquivalent(t *testing.T) {
	e := testEnv()
	a, err := e.Resolve(bridge.Endpoint{URL: "dir-spool:///var/spool/t?naming_pattern={seq:012}&shard_depth=2&shard_width=3&fsync=batch"})
	require.NoError(t, err)
	c, err := bridge.ParseConfig(strings.NewReader(`
input:
  dir_spool: {path: /var/spool/t, naming_pattern: "{seq:012}", shard_depth: 2, shard_width: 3, fsync: batch}
output:
  url: "file:///tmp/out.jsonl?format=json"
batch: {size: 10, period: 250ms, max_bytes: 8MiB}
drain: true
retry: {initial_interval: 10ms, max_interval: 1s, max_retries: -1, budget: 5m}
`))
	require.NoError(t, err)
	b, err := e.Resolve(c.Input)
	require.NoError(t, err)
	assert.Equal(t, a.Values, b.Values)
	assert.Equal(t, a.Connector, b.Connector)

	r, err := e.NewRoute(c)
	require.NoError(t, err)
	assert.Equal(t, 10, r.BatchSize)
	assert.Equal(t, 250*time.Millisecond, r.BatchPeriod)
	assert.Equal(t, int64(8<<20), r.BatchMaxBytes)
	assert.True(t, r.Drain)
	assert.Equal(t, bridge.RetryPolicy{Initial: 10 * time.Millisecond, Max: time.Second, MaxRetries: -1, Budget: 5 * time.Minute}, *r.Retry)
	assert.Equal(t, "file:///tmp/out.jsonl?format=json", r.Output)
}

func TestConfigErrors(t *testing.T) {
	e := testEnv()
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"unknown top-level key", "input: {url: \"dir-spool:///a\"}\noutput: {url: \"dir-spool:///b\"}\nbatchsize: 3\n", `line 3: unknown key "batchsize" (valid: batch, dead_letter, drain, input, max_deliveries, output, pipeline, retry, shutdown_timeout)`},
		{"unknown batch key", "input: {url: \"dir-spool:///a\"}\noutput: {url: \"dir-spool:///b\"}\nbatch: {count: 3}\n", `unknown key "count" (valid: max_bytes, period, size)`},
		{"bad size", "input: {url: \"dir-spool:///a\"}\noutput: {url: \"dir-spool:///b\"}\nbatch: {max_bytes: lots}\n", `line 3: "lots" is not a size such as 1048576, 512KiB or 10GB`},
		{"negative size", "input: {url: \"dir-spool:///a\"}\noutput: {url: \"dir-spool:///b\"}\nbatch: {max_bytes: -1}\n", `batch: max_bytes must be 1 or more (got -1)`},
		{"bad duration", "input: {url: \"dir-spool:///a\"}\noutput: {url: \"dir-spool:///b\"}\nbatch: {period: soon}\n", `line 3: "soon" is not a duration`},
		{"two keys in an endpoint", "input: {url: \"dir-spool:///a\", file: {path: /x}}\noutput: {url: \"dir-spool:///b\"}\n", "line 1: an endpoint must hold exactly one key"},
		{"missing output", "input: {url: \"dir-spool:///a\"}\n", "output: is missing"},
		{"syntax", "input: [\n", "did not find expected node content"},
		{"empty", "", "the configuration is empty"},
		{"unknown connector", "input: {dir_spol: {path: /a}}\noutput: {url: \"dir-spool:///b\"}\n", `line 1: input: no connector named "dir_spol" (valid: dir_spool, file, or url)`},
		{"unknown scheme", "input: {url: \"kafka://broker/t\"}\noutput: {url: \"dir-spool:///b\"}\n", `unknown scheme "kafka" in kafka://broker/t (valid: dir-spool, dirspool, file, spool)`},
		{"unknown option", "input: {dir_spool: {path: /a, fsynk: none}}\noutput: {url: \"dir-spool:///b\"}\n", `line 1: input: dir_spool: option "fsynk": unknown dir_spool option (valid:`},
		{"nested option", "input: {dir_spool: {path: {a: 1}}}\noutput: {url: \"dir-spool:///b\"}\n", `option "path" must be a single value`},
		{"relative path", "input: {dir_spool: {path: spool}}\noutput: {url: \"dir-spool:///b\"}\n", "must be an absolute path"},
		{"# in a URL", "input: {url: \"dir-spool:///a#1\"}\noutput: {url: \"dir-spool:///b\"}\n", `line 1: input: "dir-spool:///a#1" holds a "#", which would end the URL there: write it as %23`},
		{"URL that does not parse", "input: {url: \"dir-spool://h:x/a\"}\noutput: {url: \"dir-spool:///b\"}\n", `"dir-spool://h:x/a" is not a valid URL; write a "/", "?", "@", "%" or space inside a user name, password or value as %2F`},
		{"near miss of a scheme", "input: {url: \"dir-spol://h:x/a\"}\noutput: {url: \"dir-spool:///b\"}\n", `is not a valid URL; did you mean dir-spool://?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.FromConfig(strings.NewReader(tc.yaml))
			require.ErrorIs(t, err, bridge.ErrConfig)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestRedactedDisplay(t *testing.T) {
	e := testEnv()
	_, err := e.Resolve(bridge.Endpoint{URL: "pg://user:secret@db/app"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
	assert.Contains(t, err.Error(), "pg://user:xxxxx@db/app")
}
