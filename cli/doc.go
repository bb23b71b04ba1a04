// Package cli is the mqb command: it moves messages between endpoints named
// by URL or by a route file, and inspects directory spools.
//
//	mqb copy --drain --from 'file:///data/orders.jsonl?format=json' \
//	    --to 'dir-spool:///var/spool/orders?emit_done=success'
//	mqb run route.yaml
//	mqb lint route.yaml
//	mqb spool stat /var/spool/orders
//
// Data goes to standard output; logs, progress and errors to standard
// error. Exit codes: 0 success, 1 runtime failure, 2 usage or configuration
// error, 130 and 143 interrupted by SIGINT and SIGTERM.
//
// The binary is cli/cmd/mqb; Main runs the command for it and for tests.
package cli
