package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
)

func (a *app) runCommand() *cobra.Command {
	var rf runFlags
	var failFast bool
	cmd := &cobra.Command{
		Use:   "run ROUTE.yaml|- [ROUTE.yaml...]",
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
standard input.

Several route files run at the same time in one process, each with its own
claims and its own route label in logs and metrics (the file name without
its extension). Two of them may not write to one spool, drop zone or file,
nor read one spool: run refuses that before starting any. A route that
fails leaves the others running unless --fail-fast is given; the exit
status is that of the worst route.`,
		Example: `  mqb run route.yaml
  ORDERS=/var/spool/orders mqb run --set batch.size=500 route.yaml
  generate-route | mqb run -
  mqb run --fail-fast orders.yaml invoices.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(fmt.Errorf("%s expects one or more route files; see %s --help", cmd.CommandPath(), cmd.CommandPath()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			jobs, err := a.routeJobs(args, rf.sets)
			if err != nil {
				return err
			}
			return a.runRoutes(cmd.Context(), jobs, &rf, failFast)
		},
	}
	cmd.Flags().BoolVar(&failFast, "fail-fast", false, "with several route files: stop every route as soon as one fails")
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

// routeJobs reads and builds every route before any runs, so that a
// mistake in one file starts nothing.
func (a *app) routeJobs(paths, sets []string) ([]routeJob, error) {
	var jobs []routeJob
	names := map[string]string{}
	for _, path := range paths {
		name := routeName(path)
		if other, dup := names[name]; dup {
			return nil, usage(fmt.Errorf("%s and %s would both be route %q in logs and metrics: rename one", other, path, name))
		}
		names[name] = path
		c, err := a.readConfig(path, sets)
		if err != nil {
			return nil, err
		}
		a.rememberSecrets(c.Input, c.Output)
		route, err := a.env.NewRoute(c)
		if err != nil {
			return nil, &bridge.ConfigError{Where: configName(path), Err: err}
		}
		jobs = append(jobs, routeJob{label: "run", name: name, cfg: c, route: route})
	}
	routeNames, routes := make([]string, len(jobs)), make([]*bridge.Route, len(jobs))
	for i, j := range jobs {
		routeNames[i], routes[i] = j.name, j.route
	}
	if err := bridge.RoutesApart(routeNames, routes); err != nil {
		return nil, err
	}
	return jobs, nil
}
