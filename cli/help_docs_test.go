package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/mqb-project/mqb/bridge/connectors/dirspool"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// runHelp runs mqb with args and returns its standard output.
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, env: bridge.DefaultEnv}
	code := a.run(context.Background(), args)
	require.Zero(t, code, "mqb %s: exit status\n%s", strings.Join(args, " "), errOut.String())
	return out.String()
}

var flagLineRE = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)

// TestHelpShowsEveryDefault checks that the help of every command lists each
// of its flags with its default, and that `mqb help CMD` says the same as
// `mqb CMD --help`.
func TestHelpShowsEveryDefault(t *testing.T) {
	a := &app{env: bridge.DefaultEnv}
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		t.Run(strings.Join(append([]string{"mqb"}, path...), " "), func(t *testing.T) {
			help := runHelp(t, append(append([]string(nil), path...), "--help")...)
			flags := 0
			for _, line := range strings.Split(help, "\n") {
				m := flagLineRE.FindStringSubmatch(line)
				if m == nil || m[1] == "help" {
					continue
				}
				flags++
				assert.Contains(t, line, "(default ", "flag --%s has no default in the help", m[1])
			}
			if c.HasAvailableFlags() {
				assert.NotZero(t, flags, "no flags found in the help:\n%s", help)
			}
			if len(path) > 0 {
				assert.Equal(t, help, runHelp(t, append([]string{"help"}, path...)...), "mqb help %s differs from --help", strings.Join(path, " "))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(a.rootCommand(), nil)
}

// TestSpoolFieldsListsTheSchema checks that `mqb spool fields` prints every
// dir-spool field with its type, default and allowed values.
func TestSpoolFieldsListsTheSchema(t *testing.T) {
	out := runHelp(t, "spool", "fields")
	page := schemadoc.Page{Schema: dirspool.Schema, Allowed: dirspool.Allowed}
	lines := strings.Split(out, "\n")
	for _, f := range dirspool.Schema.Fields {
		found := false
		for _, line := range lines {
			cols := strings.Fields(line)
			if len(cols) >= 3 && cols[0] == f.Name && cols[1] == string(f.Type) && cols[2] == schemadoc.Default(f) {
				found = strings.Contains(line, page.AllowedText(f))
				break
			}
		}
		assert.True(t, found, "mqb spool fields: no line for %s %s %s %s", f.Name, f.Type, schemadoc.Default(f), page.AllowedText(f))
		assert.Contains(t, strings.Join(strings.Fields(out), " "), f.Doc, "mqb spool fields: the description of %s", f.Name)
	}
	js := runHelp(t, "spool", "fields", "--json")
	for _, f := range dirspool.Schema.Fields {
		assert.Contains(t, js, `"name": "`+f.Name+`"`, "mqb spool fields --json")
	}
}
