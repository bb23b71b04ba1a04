package cli

import (
	"errors"

	"github.com/mqb-project/mqb/bridge"
)

// readConfig reads the route file at path ("-": standard input) with
// environment variables substituted and the --set overrides applied.
func (a *app) readConfig(path string, sets []string) (*bridge.Config, error) {
	o := bridge.ParseOptions{Sets: sets}
	if path != "-" {
		return bridge.ParseConfigFileWith(path, o)
	}
	c, err := bridge.ParseConfigWith(a.stdin, o)
	if err != nil {
		return nil, &bridge.ConfigError{Where: "standard input", Err: err}
	}
	if readsStdin(c.Input) {
		return nil, &bridge.ConfigError{Where: "standard input", Err: errors.New("the route reads stdin://, but standard input holds the route file: give the route file by name")}
	}
	return c, nil
}

func readsStdin(ep bridge.Endpoint) bool {
	if ep.URL != "" {
		return len(ep.URL) >= 6 && ep.URL[:6] == "stdin:"
	}
	return ep.Connector == "stdin"
}

// configName is how a route file is named in errors and metrics.
func configName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}
