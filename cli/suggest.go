package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqb-project/mqb/core/option"
)

var unknownCommandRE = regexp.MustCompile(`^unknown command "([^"]*)" for "([^"]*)"`)

// commandSuggestion rewrites cobra's unknown-command error, whose
// suggestion printed as "; ; Did you mean this?; copy;", as one sentence:
// unknown command "cpy" for "mqb"; did you mean "copy"? (see mqb --help).
func commandSuggestion(root *cobra.Command, err error) error {
	m := unknownCommandRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	cmd := root
	if path := strings.Fields(m[2]); len(path) > 1 {
		if c, _, ferr := root.Find(path[1:]); ferr == nil {
			cmd = c
		}
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", m[1], m[2])
	if c := option.Closest(m[1], names); c != "" {
		msg += fmt.Sprintf("; did you mean %q?", c)
	} else if len(names) > 0 {
		msg += fmt.Sprintf(" (commands: %s)", strings.Join(names, ", "))
	}
	return errors.New(msg + " (see " + m[2] + " --help)")
}

// flagSuggestion adds "did you mean --drain?" to pflag's unknown-flag
// error when a flag of cmd is a near miss.
func flagSuggestion(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if c := option.Closest(name, names); c != "" {
		return fmt.Errorf("%w; did you mean --%s?", err, c)
	}
	return err
}
