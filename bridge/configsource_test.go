package bridge_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

func TestParseConfigWith(t *testing.T) {
	env := map[string]string{"SPOOL": "/var/spool/orders", "EMPTY": "", "SIZE": "7"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name    string
		yaml    string
		sets    []string
		check   func(t *testing.T, c *bridge.Config)
		wantErr string
	}{
		{name: "variables and defaults",
			yaml: "input: {dir_spool: {path: \"${SPOOL}\", fsync: \"${FSYNC:-batch}\", naming_pattern: \"${EMPTY:-{seq:09}}\"}}\noutput: {url: \"stdout://\"}\nbatch: {size: ${SIZE}}\n",
			check: func(t *testing.T, c *bridge.Config) {
				assert.Equal(t, map[string]any{"path": "/var/spool/orders", "fsync": "batch", "naming_pattern": "{seq:09}"}, c.Input.Fields)
				assert.Equal(t, 7, c.Batch.Size)
			}},
		{name: "set but empty without a default is empty",
			yaml:  "input: {url: \"stdin://${EMPTY}\"}\noutput: {url: \"stdout://\"}\n",
			check: func(t *testing.T, c *bridge.Config) { assert.Equal(t, "stdin://", c.Input.URL) }},
		{name: "escaped", yaml: "input: {url: \"stdin://\"}\noutput: {stdout: {delimiter: \"$${X}\"}}\n",
			check: func(t *testing.T, c *bridge.Config) { assert.Equal(t, "${X}", c.Output.Fields["delimiter"]) }},
		{name: "every unset variable is named with its line",
			yaml:    "input: {url: \"${IN}\"}\noutput: {url: \"stdout://\"}\nbatch: {size: ${N}}\n",
			wantErr: "environment variable(s) not set and without a default: IN (line 1), N (line 3)"},
		{name: "not a name", yaml: "input: {url: \"${1X}\"}\n", wantErr: `line 1: "${1X}": not a variable reference`},
		{name: "sets override, keep types and make keys",
			yaml: "input: {url: \"stdin://\"}\noutput: {dir_spool: {path: /s}}\nbatch: {size: 3}\n",
			sets: []string{"batch.size=10", "output.dir_spool.fsync=none", "drain=true", "batch.period=200ms"},
			check: func(t *testing.T, c *bridge.Config) {
				assert.Equal(t, 10, c.Batch.Size)
				assert.True(t, c.Drain)
				assert.Equal(t, map[string]any{"path": "/s", "fsync": "none"}, c.Output.Fields)
				assert.EqualValues(t, 200_000_000, c.Batch.Period)
			}},
		{name: "a url replaces the endpoint", yaml: "input: {url: \"stdin://\"}\noutput: {dir_spool: {path: /s}}\n",
			sets:  []string{"output.url=stdout://?format=lines"},
			check: func(t *testing.T, c *bridge.Config) { assert.Equal(t, "stdout://?format=lines", c.Output.URL) }},
		{name: "sets alone make a route", sets: []string{"input.url=stdin://", "output.url=stdout://"},
			check: func(t *testing.T, c *bridge.Config) { assert.Equal(t, "stdout://", c.Output.URL) }},
		{name: "an option of another connector", yaml: "input: {url: \"stdin://\"}\noutput: {dir_spool: {path: /s}}\n",
			sets: []string{"output.file.path=/x"}, wantErr: "--set output.file.path=/x: output is a dir_spool endpoint, not file"},
		{name: "an unknown key set", yaml: "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\n",
			sets: []string{"batch.sise=3"}, wantErr: `unknown key "sise" (valid: max_bytes, period, size); did you mean "size"?`},
		{name: "not PATH=VALUE", yaml: "input: {url: \"stdin://\"}\n", sets: []string{"batch.size"}, wantErr: "expected PATH=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bridge.ParseConfigWith(strings.NewReader(tt.yaml), bridge.ParseOptions{Sets: tt.sets, LookupEnv: lookup})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, bridge.ErrConfig)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}
