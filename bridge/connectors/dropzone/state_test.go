//go:build unix

package dropzone_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
)

// TestStateAfterAnInterruptedSave starts a reader on each set of names a
// save can leave when it is interrupted, and checks that it resumes from
// the newest complete state and cleans up.
func TestStateAfterAnInterruptedSave(t *testing.T) {
	const (
		name = dropzone.DefaultStateFile
		tmp  = name + ".tmp"
		old  = name + ".old.tmp"
		a    = `{"done":["a.txt"]}`
		ab   = `{"done":["a.txt","b.txt"]}`
	)
	cases := []struct {
		what  string
		files map[string]string
		want  []string // records read
	}{
		{"nothing saved yet", nil, []string{"1", "2", "3"}},
		{"first save torn", map[string]string{tmp: `{"do`}, []string{"1", "2", "3"}},
		{"before the old state moved aside", map[string]string{name: a, tmp: ab}, []string{"2", "3"}},
		{"between the two renames", map[string]string{old: a, tmp: ab}, []string{"3"}},
		{"before the old state was removed", map[string]string{name: ab, old: a}, []string{"3"}},
		{"only the old state", map[string]string{old: a}, []string{"2", "3"}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "a.txt", "1\n")
			write(t, dir, "b.txt", "2\n")
			write(t, dir, "c.txt", "3\n")
			for n, content := range c.files {
				write(t, dir, n, content)
			}
			got := &collect{}
			require.NoError(t, runFrom(t, env(), "dropzone://"+dir+"?format=lines", got, 10))
			assert.Equal(t, c.want, got.payloads())
			_, hidden := listFiles(t, dir)
			assert.ElementsMatch(t, []string{name, name + ".lock"}, hidden, "no leftover of the save")
		})
	}
}
