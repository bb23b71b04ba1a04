package cli

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

func (a *app) runCommand() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run ROUTE.yaml|-",
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
dropzone, stdin, stdout, ...) whose fields are the options of its URL query.

${VAR} in the file is the environment variable VAR, ${VAR:-default} with a
default; --set PATH=VALUE overrides a key (--set batch.size=10, --set
output.dir_spool.fsync=batch). A file name of - reads the route from
standard input.`,
		Example: `  mqb run route.yaml
  ORDERS=/var/spool/orders mqb run --set batch.size=500 route.yaml
  generate-route | mqb run -`,
		Args: exactArgs(1, "one route file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.readConfig(args[0], rf.sets)
			if err != nil {
				return err
			}
			a.rememberSecrets(c.Input.URL, c.Output.URL)
			route, err := a.env.NewRoute(c)
			if err != nil {
				return &bridge.ConfigError{Where: configName(args[0]), Err: err}
			}
			return a.runRoute(cmd.Context(), "run", routeName(args[0]), c, route, &rf)
		},
	}
	rf.register(cmd)
	return cmd
}

// routeName names the route of a route file in metrics: the file name
// without its extension (orders for /etc/mqb/orders.yaml).
func routeName(path string) string {
	if path == "-" {
		return "stdin"
	}
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
