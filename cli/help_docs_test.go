package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// runHelp runs mqb with args and returns its standard output.
func runHelp(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, env: bridge.DefaultEnv}
	if code := a.run(context.Background(), args); code != 0 {
		t.Fatalf("mqb %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
	}
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
				if !strings.Contains(line, "(default ") {
					t.Errorf("flag --%s has no default in the help:\n%s", m[1], line)
				}
			}
			if c.HasAvailableFlags() && flags == 0 {
				t.Errorf("no flags found in the help:\n%s", help)
			}
			if len(path) > 0 {
				if viaHelp := runHelp(t, append([]string{"help"}, path...)...); viaHelp != help {
					t.Errorf("mqb help %s differs from --help:\n%s\n---\n%s", strings.Join(path, " "), viaHelp, help)
				}
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
	page := schemadoc.Page{Schema: core.SpoolSchema, Allowed: schemadoc.SpoolAllowed}
	lines := strings.Split(out, "\n")
	for _, f := range core.SpoolSchema.Fields {
		found := false
		for _, line := range lines {
			cols := strings.Fields(line)
			if len(cols) >= 3 && cols[0] == f.Name && cols[1] == string(f.Type) && cols[2] == schemadoc.Default(f) {
				found = strings.Contains(line, page.AllowedText(f))
				break
			}
		}
		if !found {
			t.Errorf("mqb spool fields: no line for %s %s %s %s", f.Name, f.Type, schemadoc.Default(f), page.AllowedText(f))
		}
		if !strings.Contains(strings.Join(strings.Fields(out), " "), f.Doc) {
			t.Errorf("mqb spool fields: the description of %s is missing", f.Name)
		}
	}
	js := runHelp(t, "spool", "fields", "--json")
	for _, f := range core.SpoolSchema.Fields {
		if !strings.Contains(js, `"name": "`+f.Name+`"`) {
			t.Errorf("mqb spool fields --json: %s is missing", f.Name)
		}
	}
}
