// Package bridge moves messages between endpoints: a route reads batches from
// a Source, writes them to a Target, and acknowledges them at the source only
// once the target has made them durable. Endpoints are named by URL
// (dir-spool:///var/spool/orders?fsync=batch) or by YAML (dir_spool: {path:
// /var/spool/orders, fsync: batch}); both spellings are decoded by one option
// table per connector.
//
// A route from a YAML file, with every built-in connector registered:
//
//	import (
//		"github.com/mqb-project/mqb/bridge"
//		_ "github.com/mqb-project/mqb/bridge/all"
//	)
//
//	route, err := bridge.FromConfigFile("/etc/mqb/orders.yaml")
//	if err != nil {
//		return err // a *ConfigError: bad YAML, unknown connector or option
//	}
//	return route.Run(ctx) // nil at end of input; ErrInterrupted when ctx ends
//
// Connectors register themselves, by YAML name and URL schemes, in an Env:
// DefaultEnv for the command, NewEnv for tests and embedders. An Env also
// holds the spool backends (os, memfs, or one registered with
// RegisterBackend), chosen per spool by its backend option.
package bridge
