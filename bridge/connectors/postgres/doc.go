// Package postgres is the PostgreSQL target of mqb: it inserts each batch of
// messages into a table in one transaction and reports the batch written only
// after COMMIT has succeeded, so the source acknowledges nothing that is not
// durable in the database.
//
// A JSON-object payload is spread over the table's columns (its keys must
// name columns; unknown keys are an error unless unknown_keys=ignore). With
// column=NAME the whole payload is stored in that one json, jsonb, text or
// bytea column instead. id_column stores the message id; with a unique index
// on it, a batch delivered again after a crash inserts nothing twice.
//
// The endpoint is a PostgreSQL connection URL whose query may carry the
// options below as well as the usual connection parameters (sslmode,
// connect_timeout, application_name...):
//
//	mqb copy --drain \
//	  --from 'dir-spool:///var/spool/orders?stop_on_done=true' \
//	  --to 'postgres://app:secret@db.internal/app?table=orders&id_column=message_id'
//
// The same endpoint in a route file:
//
//	output:
//	  postgres:
//	    dsn: postgres://app:secret@db.internal/app
//	    table: orders
//	    id_column: message_id
//
// Register adds the connector to an Env; importing the package adds it to
// bridge.DefaultEnv.
package postgres
