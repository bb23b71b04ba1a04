package postgres

import (
	"net/url"
	"sort"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
)

// Name is the connector's YAML key.
const Name = "postgres"

// Unknown-key policies of the unknown_keys option.
const (
	UnknownKeysError  = "error"
	UnknownKeysIgnore = "ignore"
)

// Conflict policies of the on_conflict option.
const (
	OnConflictSkip  = "skip"
	OnConflictError = "error"
)

// Schema is the option table of the PostgreSQL target. In a URL every field
// but dsn is a query parameter; the rest of the URL becomes dsn.
var Schema = &option.Schema{
	Name: Name,
	Fields: []option.Field{
		{Name: "dsn", Type: option.TypeString, Required: true,
			Doc: "The connection string given to pgx: a postgres:// URL or a `host=... dbname=...` keyword list. In URL form it is the endpoint URL without mqb's own options."},
		{Name: "table", Type: option.TypeString, Required: true,
			Doc: "The table to insert into, optionally schema-qualified (sales.orders). Quote mixed-case names as in SQL."},
		{Name: "column", Type: option.TypeString,
			Doc: "Store each whole payload in this json, jsonb, text or bytea column instead of spreading a JSON object over the columns."},
		{Name: "id_column", Type: option.TypeString,
			Doc: "Column that receives the message id. It needs a unique index or primary key of its own; a message whose id is already there is skipped, so redelivered batches insert nothing twice."},
		{Name: "metadata_column", Type: option.TypeString,
			Doc: "Column (json, jsonb or text) that receives the message metadata as a JSON object."},
		{Name: "unknown_keys", Type: option.TypeEnum, Default: UnknownKeysError, Enum: []string{UnknownKeysError, UnknownKeysIgnore},
			Doc: "What to do with a payload key that names no column: fail the batch (error) or drop the key (ignore)."},
		{Name: "password_file", Type: option.TypeString,
			Doc: "Read the password from this file (a mounted secret) instead of writing it in dsn; one trailing newline is dropped. pgx also reads PGPASSWORD and a passfile, as libpq does."},
		{Name: "on_conflict", Type: option.TypeEnum, Default: OnConflictSkip, Enum: []string{OnConflictSkip, OnConflictError},
			Doc: "skip: a row that collides with an existing one on id_column (or, without id_column, on any unique constraint) is not inserted; error: the collision fails the batch."},
	},
}

// passthrough are the connection parameters that a postgres:// URL may carry
// besides mqb's options; they stay in the DSN handed to pgx.
var passthrough = map[string]bool{
	"host": true, "port": true, "dbname": true, "database": true, "user": true, "password": true, "passfile": true,
	"connect_timeout": true, "sslmode": true, "sslkey": true, "sslcert": true, "sslcertmode": true, "sslrootcert": true,
	"sslnegotiation": true, "sslpassword": true, "sslsni": true, "krbspn": true, "krbsrvname": true,
	"target_session_attrs": true, "service": true, "servicefile": true, "min_protocol_version": true,
	"max_protocol_version": true, "channel_binding": true, "require_auth": true,
	"application_name": true, "search_path": true, "timezone": true, "options": true,
	"statement_timeout": true, "lock_timeout": true, "idle_in_transaction_session_timeout": true,
	"default_query_exec_mode": true, "statement_cache_capacity": true, "description_cache_capacity": true,
}

// Connector describes the PostgreSQL target.
var Connector = &bridge.Connector{
	Name:      Name,
	Schemes:   []string{"postgres", "postgresql"},
	Schema:    Schema,
	URLFields: urlFields,
	NewTarget: func(env *bridge.Env, v *option.Values) (bridge.Target, error) { return newTarget(env, v) },
}

// Register adds the PostgreSQL target to env.
func Register(env *bridge.Env) { env.Register(Connector) }

func init() { Register(bridge.DefaultEnv) }

// urlFields splits a postgres:// URL into mqb's options and the DSN.
func urlFields(u *url.URL) (map[string]any, error) {
	m, err := option.FromURL(u, option.PathOwn, "")
	if err != nil {
		return nil, err
	}
	keep := url.Values{}
	for k, v := range m {
		switch {
		case k == "dsn":
			return nil, &option.Error{Field: k, Msg: "is the URL itself in URL form; give it only in YAML"}
		case passthrough[k]:
			keep.Set(k, v.(string))
			delete(m, k)
		default:
			if _, ok := Schema.Field(k); !ok {
				return nil, &option.Error{Field: k, Msg: "unknown postgres option", Valid: validURLNames()}
			}
		}
	}
	d := *u
	d.RawQuery = keep.Encode()
	d.Fragment, d.RawFragment = "", ""
	m["dsn"] = d.String()
	return m, nil
}

func validURLNames() []string {
	var names []string
	for _, n := range Schema.Names() {
		if n != "dsn" {
			names = append(names, n)
		}
	}
	for n := range passthrough {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
