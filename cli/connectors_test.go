package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectorsAndFields(t *testing.T) {
	r := ok(t, "", "connectors")
	for _, want := range []string{"dir_spool  dir-spool, spool, dirspool  yes     yes", "postgres ", "stdin ", "stdout ", "nats ", "mqtt ", "dropzone ", "file "} {
		assert.Contains(t, r.stdout, want)
	}
	var list []struct {
		Name    string   `json:"name"`
		Source  bool     `json:"source"`
		Target  bool     `json:"target"`
		Options []string `json:"options"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, "", "connectors", "--json").stdout), &list))
	require.Len(t, list, 8)
	for _, c := range list {
		if c.Name == "postgres" {
			assert.False(t, c.Source)
			assert.True(t, c.Target)
			assert.Contains(t, c.Options, "dsn")
		}
	}

	for _, name := range []string{"nats", "nats://", "NATS"} {
		r = ok(t, "", "fields", name)
		assert.Contains(t, r.stdout, "servers")
		assert.Contains(t, r.stdout, "creds_file")
	}
	assert.Contains(t, ok(t, "", "fields", "dir_spool").stdout, "naming_pattern")
	r = run(t, "", "fields", "natz")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `did you mean "nats"?`)
}

// The shell completion of --from and --to offers schemes, then option
// names after ? or &, then the allowed values of an option.
func TestEndpointCompletion(t *testing.T) {
	complete := func(word string) []string {
		out := ok(t, "", "__complete", "copy", "--to", word).stdout
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, lines)
		assert.Equal(t, ":6", lines[len(lines)-1], "no space, no file names")
		for i, l := range lines[:len(lines)-1] {
			lines[i], _, _ = strings.Cut(l, "\t") // the description shells show beside it
		}
		return lines[:len(lines)-1]
	}
	assert.Contains(t, ok(t, "", "__complete", "copy", "--to", "dir-spool:///x?fs").stdout,
		"dir-spool:///x?fsync=\tWhen writes and deletes are flushed to stable storage", "an option comes with the start of its documentation")
	assert.Equal(t, []string{"dir-spool://", "dirspool://"}, complete("di"))
	assert.Contains(t, complete(""), "postgres://")
	assert.Equal(t, []string{"dir-spool:///x?fsync=none&shard_depth=", "dir-spool:///x?fsync=none&shard_width="}, complete("dir-spool:///x?fsync=none&sh"))
	assert.Equal(t, []string{"nats://h?subject="}, complete("nats://h?subj"))
	assert.Equal(t, []string{"dir-spool:///x?fsync=none", "dir-spool:///x?fsync=batch", "dir-spool:///x?fsync=chunk"}, complete("dir-spool:///x?fsync="))
	assert.Equal(t, []string{"file:///x?append=true", "file:///x?append=false"}, complete("file:///x?append="))
	assert.Empty(t, complete("kafka://x?a"))
}
