// Package bridge moves messages between endpoints: a route reads batches from
// a Source, writes them to a Target, and acknowledges them at the source only
// once the target has made them durable. Endpoints are named by URL
// (dir-spool:///var/spool/orders?fsync=batch) or by YAML (dir_spool: {path:
// /var/spool/orders, fsync: batch}); both spellings are decoded by one option
// table per connector.
package bridge
