package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

func (a *app) lintCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "lint ROUTE.yaml",
		Short: "Check a route file without running it",
		Long: `lint reads a route file and checks it as run would — YAML keys, connector
names, every option's name, type and value, absolute paths, naming patterns —
without opening any endpoint. It prints the resolved route and exits 0, or
prints what is wrong and exits 2.`,
		Args: exactArgs(1, "one route file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.readConfig(args[0], nil)
			if err != nil {
				return err
			}
			a.rememberSecrets(c.Input, c.Output)
			route, err := a.env.NewRoute(c)
			if err != nil {
				return &bridge.ConfigError{Where: args[0], Err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s -> %s\n", args[0], route.Input, route.Output)
			return nil
		},
	}
}
