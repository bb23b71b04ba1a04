package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mqb-project/mqb/core/option"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mqb-project/mqb/bridge"
)

// defaultConnectTimeout bounds Connect when neither the context nor the DSN
// (connect_timeout) sets a limit.
const defaultConnectTimeout = 15 * time.Second

// column is what the target knows of one table column.
type column struct {
	name     string
	typ      string // format_type(), usable in a cast
	category string // pg_type.typcategory: S string, U user (json, jsonb), ...
	typname  string // pg_type.typname
	// generated is set for columns the database fills itself (GENERATED
	// ALWAYS ... STORED, GENERATED ALWAYS AS IDENTITY): they take no input.
	generated bool
}

// Target inserts batches into a PostgreSQL table, one transaction each.
type Target struct {
	log     *slog.Logger
	cfg     *pgx.ConnConfig
	where   string   // the redacted DSN, for messages
	secrets []string // passwords to scrub from any error text

	table       string // as the user gave it
	payloadCol  string
	idCol       string
	metaCol     string
	ignoreKeys  bool
	skipOnClash bool

	conn    *pgx.Conn
	rel     string             // the table's name as PostgreSQL prints it (quoted when needed)
	columns map[string]*column // by name
	sqls    map[string]string  // INSERT text by sorted key set
}

var (
	_ bridge.Target       = (*Target)(nil)
	_ bridge.SharedOutput = (*Target)(nil)
)

func newTarget(env *bridge.Env, v *option.Values) (*Target, error) {
	dsn := v.String("dsn")
	t := &Target{
		log:         env.Logger,
		where:       bridge.Redact(dsn),
		table:       v.String("table"),
		payloadCol:  v.String("column"),
		idCol:       v.String("id_column"),
		metaCol:     v.String("metadata_column"),
		ignoreKeys:  v.String("unknown_keys") == UnknownKeysIgnore,
		skipOnClash: v.String("on_conflict") == OnConflictSkip,
		sqls:        map[string]string{},
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	if strings.TrimSpace(t.table) == "" {
		return nil, &option.Error{Field: "table", Msg: "must name a table"}
	}
	names := map[string]string{}
	for _, f := range []struct{ opt, col string }{{"column", t.payloadCol}, {"id_column", t.idCol}, {"metadata_column", t.metaCol}} {
		if f.col == "" {
			continue
		}
		if other, dup := names[f.col]; dup {
			return nil, &option.Error{Field: f.opt, Value: f.col, Msg: "names the same column as " + other}
		}
		names[f.col] = f.opt
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, &option.Error{Field: "dsn", Value: t.where, Msg: "is not a valid connection string: " + scrub(err.Error(), secretsOf(dsn, nil))}
	}
	if v.String("password_file") != "" {
		if cfg.Password != "" {
			return nil, &option.Error{Field: "password_file", Msg: "cannot be combined with a password in dsn: give one of them"}
		}
		if cfg.Password, err = bridge.ReadSecretFile(v.String("password_file"), "password_file"); err != nil {
			return nil, err
		}
	}
	t.cfg = cfg
	t.secrets = secretsOf(dsn, cfg)
	return t, nil
}

// secretsOf lists the passwords that could appear in errors about dsn.
func secretsOf(dsn string, cfg *pgx.ConnConfig) []string {
	s := bridge.FindSecrets(dsn)
	if cfg != nil {
		s = append(s, cfg.Password)
	}
	return s
}

// scrub replaces every secret in text by xxxxx and folds it onto one line,
// dropping repeated lines (pgx reports each attempt of a connection, and
// sslmode=prefer makes two that fail alike).
func scrub(text string, secrets []string) string {
	text = bridge.Redact(text, secrets...)
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		return strings.Join(lines, "")
	}
	head, rest := lines[0], strings.Join(lines[1:], "; ")
	if strings.HasSuffix(head, ":") {
		return head + " " + rest
	}
	return head + "; " + rest
}

// cleanErr keeps err for errors.Is/As but makes its text safe: one line and
// no password.
type cleanErr struct {
	msg string
	err error
}

func (e *cleanErr) Error() string { return e.msg }
func (e *cleanErr) Unwrap() error { return e.err }

func (t *Target) errorf(err error, format string, args ...any) error {
	msg := fmt.Sprintf("postgres: %s: %s", fmt.Sprintf(format, args...), scrub(err.Error(), t.secrets))
	return &cleanErr{msg: msg, err: err}
}

// Connect opens the connection and looks up the table's columns once.
//
// A refusal that the same configuration gets again (bad credentials, a
// database or table that does not exist, a privilege missing) is a
// *bridge.ConfigError; the route retries other failures within its budget.
func (t *Target) Connect(ctx context.Context) error {
	err := t.dial(ctx)
	if err == nil {
		if err = t.describe(ctx); err != nil {
			_ = t.conn.Close(context.WithoutCancel(ctx))
			t.conn = nil
		}
	}
	if misconfigured(err) {
		return &bridge.ConfigError{Err: err}
	}
	return err
}

// misconfigured reports a server refusal at connect time that only a
// change of configuration fixes: invalid authorization (class 28), an
// invalid catalog name (3D), a missing table or privilege (42).
func misconfigured(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) != 5 {
		return false
	}
	switch pe.Code[:2] {
	case "28", "3D", "42":
		return true
	}
	return false
}

func (t *Target) dial(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok && t.cfg.ConnectTimeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultConnectTimeout)
		defer cancel()
	}
	conn, err := pgx.ConnectConfig(ctx, t.cfg)
	if err != nil {
		return t.errorf(err, "cannot connect")
	}
	t.conn = conn
	return nil
}

// describe resolves the table and its columns and checks the options
// against them.
func (t *Target) describe(ctx context.Context) error {
	if err := t.conn.QueryRow(ctx, `SELECT $1::regclass::text`, t.table).Scan(&t.rel); err != nil {
		return t.errorf(err, "table %q", t.table)
	}
	rows, err := t.conn.Query(ctx, `
SELECT a.attname, format_type(a.atttypid, a.atttypmod), ty.typcategory::text, ty.typname::text,
       a.attgenerated <> '' OR a.attidentity = 'a'
FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, t.rel)
	if err != nil {
		return t.errorf(err, "columns of %s", t.rel)
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*column, error) {
		c := &column{}
		return c, r.Scan(&c.name, &c.typ, &c.category, &c.typname, &c.generated)
	})
	if err != nil {
		return t.errorf(err, "columns of %s", t.rel)
	}
	t.columns = make(map[string]*column, len(cols))
	for _, c := range cols {
		t.columns[c.name] = c
	}
	if err := t.checkColumn("column", t.payloadCol, "json", "jsonb", "bytea"); err != nil {
		return err
	}
	if err := t.checkColumn("metadata_column", t.metaCol, "json", "jsonb"); err != nil {
		return err
	}
	if err := t.checkColumn("id_column", t.idCol); err != nil {
		return err
	}
	if t.idCol != "" && t.skipOnClash {
		var unique bool
		err := t.conn.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
  AND i.indexprs IS NULL AND a.attname = $2)`, t.rel, t.idCol).Scan(&unique)
		if err != nil {
			return t.errorf(err, "indexes of %s", t.rel)
		}
		if !unique {
			return &option.Error{Field: "id_column", Value: t.idCol, Msg: fmt.Sprintf(
				"table %s has no unique index on this column alone, so redelivered messages could not be skipped (CREATE UNIQUE INDEX ON %s (%s))",
				t.rel, t.rel, pgx.Identifier{t.idCol}.Sanitize())}
		}
	}
	return nil
}

// checkColumn checks that the column an option names exists, takes input,
// and (when types are given) has a string type or one of types.
func (t *Target) checkColumn(opt, name string, types ...string) error {
	if name == "" {
		return nil
	}
	c, ok := t.columns[name]
	if !ok {
		return &option.Error{Field: opt, Value: name, Msg: fmt.Sprintf("table %s has no such column", t.rel), Valid: t.columnNames()}
	}
	if c.generated {
		return &option.Error{Field: opt, Value: name, Msg: fmt.Sprintf("column of %s is generated by the database and takes no input", t.rel)}
	}
	if len(types) > 0 && c.category != "S" && !slices.Contains(types, c.typname) {
		return &option.Error{Field: opt, Value: name, Msg: fmt.Sprintf("column has type %s; it must be text-like or one of %s", c.typ, strings.Join(types, ", "))}
	}
	return nil
}

func (t *Target) columnNames() []string {
	names := make([]string, 0, len(t.columns))
	for n, c := range t.columns {
		if !c.generated {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// ForgetsPayloads says that WriteBatch keeps no payload once it returns
// (bridge.PayloadForgetter): the statements that hold them are made for the
// call, and pgx has sent their arguments to the server by the time the
// transaction ends, committed or not.
func (t *Target) ForgetsPayloads() bool { return true }

// Place names the table, so that a route whose output and dead_letter are
// one table is refused: a message the table refused would be refused there
// again. Loopback host names are taken as one host; a table name is
// compared as PostgreSQL folds it (unquoted parts in lower case), without
// guessing its schema.
func (t *Target) Place() (string, string) {
	host := t.cfg.Host
	if ip, err := netip.ParseAddr(host); host == "localhost" || (err == nil && ip.IsLoopback()) {
		host = "localhost"
	}
	return "postgresql", fmt.Sprintf("table %s of database %s at %s", foldName(t.table), t.cfg.Database,
		net.JoinHostPort(host, strconv.Itoa(int(t.cfg.Port))))
}

// SharedByRoutes says that routes of one run may write to one table
// (bridge.SharedOutput): the database takes concurrent writers.
func (t *Target) SharedByRoutes() {}

// foldName folds a possibly qualified table name as PostgreSQL does:
// unquoted parts to lower case, quoted ones as they are.
func foldName(name string) string {
	parts := strings.Split(strings.TrimSpace(name), ".")
	for i, p := range parts {
		if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
			parts[i] = p[1 : len(p)-1]
		} else {
			parts[i] = strings.ToLower(p)
		}
	}
	return strings.Join(parts, ".")
}

// WriteBatch inserts msgs in one transaction and returns nil only once it
// has committed.
func (t *Target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if t.columns == nil {
		return errors.New("postgres: WriteBatch before Connect")
	}
	batch, err := t.statements(msgs)
	if err != nil {
		// The payloads themselves do not fit: writing them again cannot help.
		return bridge.Reject(fmt.Errorf("postgres: table %s: %w", t.rel, err))
	}
	if t.conn == nil || t.conn.IsClosed() {
		if err := t.dial(ctx); err != nil {
			return err
		}
	}
	inserted, err := t.run(ctx, batch)
	if err != nil {
		if t.conn.IsClosed() || !isServerError(err) {
			// The connection's state is unknown: start over on the next batch.
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = t.conn.Close(cctx)
			cancel()
			t.conn = nil
		}
		err = t.errorf(err, "insert %d message(s) into %s", len(msgs), t.rel)
		switch {
		case rejected(err):
			return bridge.Reject(err)
		case permanent(err):
			return bridge.Permanent(err)
		}
		return err
	}
	if skipped := int64(len(msgs)) - inserted; skipped > 0 {
		t.log.Debug("postgres: rows already present were skipped", "table", t.rel, "skipped", skipped, "inserted", inserted)
	}
	return nil
}

// rejected reports a server error about what a row holds, which the same
// row would get again: bad data (class 22) or a violated constraint (23, but
// for a foreign key whose row may yet arrive).
func rejected(err error) bool {
	code := sqlState(err)
	switch {
	case len(code) != 5:
		return false
	case code[:2] == "22":
		return true
	case code[:2] == "23":
		return code != "23503"
	}
	return false
}

// permanent reports a server error about the table rather than a row, which
// every batch would get: an undefined table or column, or a privilege
// missing (class 42).
func permanent(err error) bool {
	code := sqlState(err)
	return len(code) == 5 && code[:2] == "42"
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	return pe.Code
}

func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// run executes the statements in one transaction and returns the number of
// rows inserted.
func (t *Target) run(ctx context.Context, batch *pgx.Batch) (n int64, err error) {
	tx, err := t.conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	br := tx.SendBatch(ctx, batch)
	for range batch.Len() {
		tag, err := br.Exec()
		if err != nil {
			_ = br.Close()
			return 0, err
		}
		n += tag.RowsAffected()
	}
	if err := br.Close(); err != nil {
		return 0, err
	}
	return n, tx.Commit(ctx)
}

// statements turns msgs into the INSERTs of one transaction.
func (t *Target) statements(msgs []*bridge.Message) (*pgx.Batch, error) {
	if t.payloadCol != "" {
		return t.wholePayload(msgs)
	}
	return t.spreadPayload(msgs)
}

func (t *Target) conflictClause() string {
	switch {
	case !t.skipOnClash:
		return ""
	case t.idCol != "":
		return " ON CONFLICT (" + pgx.Identifier{t.idCol}.Sanitize() + ") DO NOTHING"
	default:
		return " ON CONFLICT DO NOTHING"
	}
}

func describeMsg(i int, m *bridge.Message) string {
	if m.ID != "" {
		return fmt.Sprintf("message %d of the batch (id %s)", i+1, m.ID)
	}
	return fmt.Sprintf("message %d of the batch", i+1)
}

// wholePayload stores each payload in the column option's column, with one
// statement for the batch.
func (t *Target) wholePayload(msgs []*bridge.Message) (*pgx.Batch, error) {
	pc := t.columns[t.payloadCol]
	binary := pc.typname == "bytea"
	var (
		texts  []string
		blobs  [][]byte
		ids    []string
		metas  []string
		cols   = []string{pgx.Identifier{pc.name}.Sanitize()}
		exprs  = []string{"r.p::" + pc.typ}
		inputs = []string{"$1::text[]"}
		names  = []string{"p"}
	)
	if binary {
		inputs[0] = "$1::bytea[]"
	}
	for i, m := range msgs {
		switch {
		case binary:
			blobs = append(blobs, m.Payload)
		case (pc.typname == "json" || pc.typname == "jsonb") && !json.Valid(m.Payload):
			return nil, fmt.Errorf("%s: payload is not valid JSON, which column %s of type %s needs", describeMsg(i, m), pc.name, pc.typ)
		case !utf8.Valid(m.Payload) || bytes.IndexByte(m.Payload, 0) >= 0:
			return nil, fmt.Errorf("%s: payload is not UTF-8 text without NUL bytes, which column %s of type %s needs (use a bytea column)", describeMsg(i, m), pc.name, pc.typ)
		default:
			texts = append(texts, string(m.Payload))
		}
		if t.idCol != "" {
			ids = append(ids, m.ID)
		}
		if t.metaCol != "" {
			metas = append(metas, metadataJSON(m))
		}
	}
	args := []any{texts}
	if binary {
		args[0] = blobs
	}
	if t.idCol != "" {
		args = append(args, ids)
		cols = append(cols, pgx.Identifier{t.idCol}.Sanitize())
		exprs = append(exprs, "r.id::"+t.columns[t.idCol].typ)
		inputs = append(inputs, fmt.Sprintf("$%d::text[]", len(args)))
		names = append(names, "id")
	}
	if t.metaCol != "" {
		args = append(args, metas)
		cols = append(cols, pgx.Identifier{t.metaCol}.Sanitize())
		exprs = append(exprs, "r.md::"+t.columns[t.metaCol].typ)
		inputs = append(inputs, fmt.Sprintf("$%d::text[]", len(args)))
		names = append(names, "md")
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM unnest(%s) AS r(%s)%s",
		t.rel, strings.Join(cols, ", "), strings.Join(exprs, ", "), strings.Join(inputs, ", "), strings.Join(names, ", "), t.conflictClause())
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return b, nil
}

func metadataJSON(m *bridge.Message) string {
	md := m.Metadata
	if md == nil {
		md = map[string]string{}
	}
	b, _ := json.Marshal(md) // a string map always marshals
	return string(b)
}

// spreadPayload maps each JSON-object payload onto the table's columns.
// Consecutive messages with the same keys share one statement, in which
// PostgreSQL converts every JSON value to its column's type
// (jsonb_populate_recordset); a column that a message leaves out gets its
// default.
func (t *Target) spreadPayload(msgs []*bridge.Message) (*pgx.Batch, error) {
	b := &pgx.Batch{}
	var (
		runKey  string
		runKeys []string
		run     []json.RawMessage
	)
	flush := func() {
		if len(run) == 0 {
			return
		}
		if len(runKeys) == 0 {
			for range run {
				b.Queue("INSERT INTO " + t.rel + " DEFAULT VALUES" + t.conflictClause())
			}
		} else {
			arr, _ := json.Marshal(run) // raw messages that were valid JSON
			b.Queue(t.insertSQL(runKey, runKeys), string(arr))
		}
		run = run[:0]
	}
	for i, m := range msgs {
		row, keys, err := t.row(i, m)
		if err != nil {
			return nil, err
		}
		key := strings.Join(keys, "\x00")
		if len(run) > 0 && key != runKey {
			flush()
		}
		runKey, runKeys = key, keys
		run = append(run, row)
	}
	flush()
	return b, nil
}

// row decodes one payload into the JSON object given to PostgreSQL and the
// sorted column names it fills.
func (t *Target) row(i int, m *bridge.Message) (json.RawMessage, []string, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(m.Payload))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, nil, fmt.Errorf("%s: payload is not a JSON object (use column=NAME to store whole payloads)", describeMsg(i, m))
	}
	var unknown, generated []string
	for k := range obj {
		c, ok := t.columns[k]
		switch {
		case !ok:
			unknown = append(unknown, k)
		case c.generated:
			generated = append(generated, k)
		case k == t.idCol || k == t.metaCol:
			return nil, nil, fmt.Errorf("%s: payload key %q is also the column mqb fills from the message (id_column or metadata_column)", describeMsg(i, m), k)
		}
	}
	if len(generated) > 0 {
		sort.Strings(generated)
		return nil, nil, fmt.Errorf("%s: payload key(s) %s name column(s) that the database generates", describeMsg(i, m), quoteAll(generated))
	}
	if len(unknown) > 0 {
		if !t.ignoreKeys {
			sort.Strings(unknown)
			return nil, nil, fmt.Errorf("%s: payload key(s) %s are not columns of %s (set unknown_keys=ignore to drop them; columns: %s)",
				describeMsg(i, m), quoteAll(unknown), t.rel, strings.Join(t.columnNames(), ", "))
		}
		for _, k := range unknown {
			delete(obj, k)
		}
	}
	if t.idCol != "" {
		id, _ := json.Marshal(m.ID)
		obj[t.idCol] = id
	}
	if t.metaCol != "" {
		obj[t.metaCol] = json.RawMessage(metadataJSON(m))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", describeMsg(i, m), err)
	}
	return raw, keys, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// insertSQL returns (and caches) the statement that inserts a JSON array of
// objects with the given keys.
func (t *Target) insertSQL(cacheKey string, keys []string) string {
	if s, ok := t.sqls[cacheKey]; ok {
		return s
	}
	cols := make([]string, len(keys))
	for i, k := range keys {
		cols[i] = pgx.Identifier{k}.Sanitize()
	}
	list := strings.Join(cols, ", ")
	s := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM jsonb_populate_recordset(NULL::%s, $1::jsonb)%s",
		t.rel, list, list, t.rel, t.conflictClause())
	if len(t.sqls) < 256 {
		t.sqls[cacheKey] = s
	}
	return s
}

// Close closes the connection.
func (t *Target) Close(ctx context.Context, _ error) error {
	if t.conn == nil {
		return nil
	}
	err := t.conn.Close(ctx)
	t.conn = nil
	if err != nil {
		return t.errorf(err, "close")
	}
	return nil
}
