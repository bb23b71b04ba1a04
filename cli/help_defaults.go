package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// showAllDefaults makes the help of cmd and of every command below it show
// the default of every flag. pflag prints "(default ...)" only when the
// default is not the zero value; this adds it for the others, so that the
// help lists each flag with its default as the documentation does.
func showAllDefaults(cmd *cobra.Command) {
	add := func(f *pflag.Flag) {
		if f.Name == "help" || strings.Contains(f.Usage, "(default") || !zeroDefault(f) {
			return
		}
		def := f.DefValue
		if def == "" || def == "[]" {
			def = "none"
		}
		f.Usage += " (default " + def + ")"
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.PersistentFlags().VisitAll(add)
	for _, c := range cmd.Commands() {
		showAllDefaults(c)
	}
}

// zeroDefault reports whether pflag leaves the default of f out of the help.
func zeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]", "<nil>":
		return true
	}
	return false
}
