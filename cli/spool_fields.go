package cli

import (
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// fieldInfo is one option of the directory spool, as --json prints it.
type fieldInfo struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Default  string   `json:"default"`
	Required bool     `json:"required,omitempty"`
	Allowed  string   `json:"allowed"`
	Enum     []string `json:"enum,omitempty"`
	Doc      string   `json:"doc"`
}

func (a *app) spoolFieldsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fields",
		Short: "List every option of a directory spool URL or route file",
		Long: `fields prints every option of the directory spool: its name, type, default
and allowed values, then what it does. The same name is a query parameter
of a dir-spool:// URL and a key under dir_spool: in a route file. The list
comes from the option table the command decodes options with, so it is
always the one this mqb accepts; docs/reference/dir-spool.md holds the same
table.`,
		Example: `  mqb spool fields
  mqb spool fields --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.printFields(schemadoc.Page{Schema: dirspool.Schema, Allowed: dirspool.Allowed}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the fields as a JSON array")
	return cmd
}
