package cli

import (
	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

func (a *app) runCommand() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run ROUTE.yaml",
		Short: "Run the route a YAML file describes",
		Long: `run builds the route a YAML file describes and runs it until its input ends
(drain: true, end of file, stop_on_done) or it is interrupted.

  input:
    file: {path: /data/orders.jsonl, format: json}
  output:
    url: "dir-spool:///var/spool/orders?emit_done=success"
  batch: {size: 100, period: 200ms}
  drain: true

Each endpoint holds one key: url, or a connector name (dir_spool, file,
dropzone, stdin, stdout, ...) whose fields are the options of its URL query.`,
		Args: exactArgs(1, "one route file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := bridge.ParseConfigFile(args[0])
			if err != nil {
				return err
			}
			a.rememberSecrets(c.Input, c.Output)
			route, err := a.env.NewRoute(c)
			if err != nil {
				return &bridge.ConfigError{Where: args[0], Err: err}
			}
			return a.runRoute(cmd.Context(), route, &rf)
		},
	}
	rf.register(cmd)
	return cmd
}
