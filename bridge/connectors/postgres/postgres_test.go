package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// testDSN is the server the tests use: the machine's PostgreSQL with trust
// authentication and a database named test, unless MQB_TEST_POSTGRES_DSN
// names another.
func testDSN() string {
	if d := os.Getenv("MQB_TEST_POSTGRES_DSN"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// needServer skips the test when PostgreSQL is unreachable, or fails it when
// MQB_REQUIRE_SERVICES=1.
func needServer(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testDSN())
	if err != nil {
		msg := fmt.Sprintf("PostgreSQL is not reachable at %s (%v); start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`", bridge.Redact(testDSN()), err)
		if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// newTable creates a table with a unique name from the column definitions
// and drops it when the test ends.
func newTable(t testing.TB, admin *pgx.Conn, defs string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "mqb_test_" + hex.EncodeToString(b[:])
	_, err := admin.Exec(context.Background(), fmt.Sprintf("CREATE TABLE %s (%s)", name, defs))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP TABLE IF EXISTS "+name)
	})
	return name
}

// endpoint decodes a URL the way a route does.
func endpoint(t testing.TB, raw string) (*option.Values, error) {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	env := bridge.NewEnv()
	Register(env)
	c, ok := env.ConnectorForScheme(u.Scheme)
	require.True(t, ok, "scheme %s", u.Scheme)
	fields, err := c.URLFields(u)
	if err != nil {
		return nil, err
	}
	return c.Schema.DecodeMap(fields)
}

// openTarget builds and connects a target on table with the extra query.
func openTarget(t testing.TB, table, query string) *Target {
	t.Helper()
	tg, err := buildTarget(t, testDSN()+"&table="+table+query)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tg.Connect(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background(), nil) })
	return tg
}

func buildTarget(t testing.TB, raw string) (*Target, error) {
	t.Helper()
	v, err := endpoint(t, raw)
	if err != nil {
		return nil, err
	}
	return newTarget(bridge.NewEnv(), v)
}

func msg(id, payload string, md map[string]string) *bridge.Message {
	return &bridge.Message{ID: id, Payload: []byte(payload), Metadata: md}
}

func count(t testing.TB, conn *pgx.Conn, table string) int {
	t.Helper()
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func write(t testing.TB, tg *Target, msgs ...*bridge.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return tg.WriteBatch(ctx, msgs)
}

func TestURLFields(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		want    map[string]any
		wantErr error
		errHas  string
	}{
		{name: "seed example", url: "postgres://user:pass@localhost/app?table=orders",
			want: map[string]any{"dsn": "postgres://user:pass@localhost/app", "table": "orders"}},
		{name: "connection parameters stay in the dsn", url: "postgresql://u@h:5433/db?sslmode=disable&table=t&id_column=message_id&application_name=mqb",
			want: map[string]any{"dsn": "postgresql://u@h:5433/db?application_name=mqb&sslmode=disable", "table": "t", "id_column": "message_id"}},
		{name: "unknown option", url: "postgres://h/db?table=t&tabel=x", wantErr: option.ErrInvalid, errHas: `"tabel"`},
		{name: "dsn in query", url: "postgres://h/db?table=t&dsn=x", wantErr: option.ErrInvalid, errHas: "YAML"},
		{name: "twice", url: "postgres://h/db?table=t&table=u", wantErr: option.ErrInvalid, errHas: "more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			require.NoError(t, err)
			got, err := urlFields(u)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), tt.errHas)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOptionsAreValidated(t *testing.T) {
	_, err := endpoint(t, "postgres://h/db?column=p")
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), `"table"`)

	_, err = endpoint(t, "postgres://h/db?table=t&unknown_keys=drop")
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), "ignore")

	_, err = buildTarget(t, "postgres://h/db?table=t&column=x&id_column=x")
	require.ErrorIs(t, err, option.ErrInvalid)
}

func TestBatchInsertAndRedeliveryIsIdempotent(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, `message_id text PRIMARY KEY, sku text NOT NULL, qty int, price numeric,
		tags jsonb, created timestamptz DEFAULT now(), serial bigserial, meta jsonb`)
	tg := openTarget(t, table, "&id_column=message_id&metadata_column=meta")

	batch := []*bridge.Message{
		msg("m1", `{"sku":"A-1","qty":2,"price":9.5,"tags":["x","y"]}`, map[string]string{"source": "orders"}),
		msg("m2", `{"sku":"B-2","qty":1}`, nil),
		msg("m3", `{"sku":"C-3","qty":7,"price":1}`, map[string]string{"content_type": "application/json"}),
	}
	require.NoError(t, write(t, tg, batch...))
	assert.Equal(t, 3, count(t, admin, table))

	// The route redelivers the same batch (say the ack was lost in a crash).
	require.NoError(t, write(t, tg, batch...))
	assert.Equal(t, 3, count(t, admin, table), "a redelivered batch must not duplicate rows")

	// A batch overlapping the previous one adds only the new message.
	require.NoError(t, write(t, tg, batch[2], msg("m4", `{"sku":"D-4"}`, nil), msg("m4", `{"sku":"D-4"}`, nil)))
	assert.Equal(t, 4, count(t, admin, table))

	var (
		sku, meta, tags string
		qty             int
		price           string
		defaulted       bool
	)
	require.NoError(t, admin.QueryRow(context.Background(),
		"SELECT sku, qty, price::text, tags::text, meta::text, created IS NOT NULL AND serial > 0 FROM "+table+" WHERE message_id = 'm1'").
		Scan(&sku, &qty, &price, &tags, &meta, &defaulted))
	assert.Equal(t, "A-1", sku)
	assert.Equal(t, 2, qty)
	assert.Equal(t, "9.5", price)
	assert.JSONEq(t, `["x","y"]`, tags)
	assert.JSONEq(t, `{"source":"orders"}`, meta)
	assert.True(t, defaulted, "columns missing from the payload get their defaults")

	var nulls int
	require.NoError(t, admin.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE price IS NULL").Scan(&nulls))
	assert.Equal(t, 2, nulls, "m2 and m4 have no price")
}

func TestOnConflictWithoutIDColumn(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, `order_no int PRIMARY KEY, note text`)
	skip := openTarget(t, table, "")
	require.NoError(t, write(t, skip, msg("", `{"order_no":1,"note":"a"}`, nil)))
	require.NoError(t, write(t, skip, msg("", `{"order_no":1,"note":"a"}`, nil), msg("", `{"order_no":2}`, nil)))
	assert.Equal(t, 2, count(t, admin, table), "on_conflict=skip skips rows clashing on the table's own key")

	strict := openTarget(t, table, "&on_conflict=error")
	err := write(t, strict, msg("", `{"order_no":2}`, nil))
	require.ErrorIs(t, err, bridge.ErrPermanent, "retrying cannot fix a duplicate key")
	assert.Contains(t, err.Error(), "23505")

	// A value PostgreSQL cannot convert fails the batch for good; nothing
	// of it is written.
	err = write(t, skip, msg("", `{"order_no":3}`, nil), msg("", `{"order_no":"three"}`, nil))
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Contains(t, err.Error(), "22P02")
	assert.Equal(t, 2, count(t, admin, table))
	require.NoError(t, write(t, skip, msg("", `{"order_no":3}`, nil)), "the connection is still usable")
	assert.Equal(t, 3, count(t, admin, table))
}

func TestColumnMode(t *testing.T) {
	admin := needServer(t)
	for _, typ := range []string{"jsonb", "json", "text", "bytea", "varchar(200)"} {
		t.Run(typ, func(t *testing.T) {
			table := newTable(t, admin, "id uuid PRIMARY KEY, body "+typ+" NOT NULL, md json, at timestamptz DEFAULT now()")
			tg := openTarget(t, table, "&column=body&id_column=id&metadata_column=md")
			id1, id2 := core.NewMessageID(), core.NewMessageID()
			batch := []*bridge.Message{
				msg(id1, `{"any":"shape","n":[1,2]}`, map[string]string{"k": "v"}),
				msg(id2, `[1,2,3]`, nil),
			}
			require.NoError(t, write(t, tg, batch...))
			require.NoError(t, write(t, tg, batch...))
			assert.Equal(t, 2, count(t, admin, table))
			var body, md string
			require.NoError(t, admin.QueryRow(context.Background(),
				fmt.Sprintf("SELECT %s, md::text FROM %s WHERE id = $1", map[bool]string{true: "convert_from(body, 'UTF8')", false: "body::text"}[typ == "bytea"], table), id1).
				Scan(&body, &md))
			assert.JSONEq(t, `{"any":"shape","n":[1,2]}`, body)
			assert.JSONEq(t, `{"k":"v"}`, md)
		})
	}

	t.Run("binary payload into bytea", func(t *testing.T) {
		table := newTable(t, admin, "body bytea")
		tg := openTarget(t, table, "&column=body")
		payload := []byte{0, 1, 2, 0xff, 0xfe}
		require.NoError(t, tg.WriteBatch(context.Background(), []*bridge.Message{{Payload: payload}}))
		var got []byte
		require.NoError(t, admin.QueryRow(context.Background(), "SELECT body FROM "+table).Scan(&got))
		assert.Equal(t, payload, got)
	})

	t.Run("invalid JSON for a jsonb column", func(t *testing.T) {
		table := newTable(t, admin, "body jsonb")
		tg := openTarget(t, table, "&column=body")
		err := write(t, tg, msg("a", `{"ok":1}`, nil), msg("bad-one", `not json`, nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "message 2 of the batch (id bad-one)")
		assert.Contains(t, err.Error(), "not valid JSON")
		assert.Equal(t, 0, count(t, admin, table), "nothing of a failed batch is written")
	})

	t.Run("wrong column type", func(t *testing.T) {
		table := newTable(t, admin, "body int")
		tg, err := buildTarget(t, testDSN()+"&table="+table+"&column=body")
		require.NoError(t, err)
		err = tg.Connect(context.Background())
		require.ErrorIs(t, err, option.ErrInvalid)
		assert.Contains(t, err.Error(), "integer")
		_ = tg.Close(context.Background(), nil)
	})
}

// Once WriteBatch returns, the caller may reuse a payload's memory (the
// target is a bridge.PayloadForgetter, so a dir-spool source lends it
// buffers): what was written stays what the payload held at the call.
func TestPayloadMemoryIsFreeOnceWriteBatchReturns(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, "n bigserial PRIMARY KEY, body bytea")
	tg := openTarget(t, table, "&column=body")
	require.True(t, tg.ForgetsPayloads())
	bufs := make([][]byte, 10)
	for i := range bufs {
		bufs[i] = make([]byte, 32<<10)
	}
	var want [][]byte
	for batch := range 5 {
		msgs := make([]*bridge.Message, len(bufs))
		for i, b := range bufs {
			for j := range b {
				b[j] = byte(batch*len(bufs) + i + j)
			}
			msgs[i] = &bridge.Message{Payload: b}
			want = append(want, append([]byte(nil), b...))
		}
		require.NoError(t, write(t, tg, msgs...))
	}
	rows, err := admin.Query(context.Background(), "SELECT body FROM "+table+" ORDER BY n")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, bytes.Equal(want[i], got[i]), "row %d differs from the payload written", i)
	}
}

func TestUnknownKeys(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, "sku text, qty int")

	strict := openTarget(t, table, "")
	err := write(t, strict, msg("m1", `{"sku":"A","qty":1}`, nil), msg("m2", `{"sku":"B","colour":"red","size":3}`, nil))
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Contains(t, err.Error(), `"colour", "size"`)
	assert.Contains(t, err.Error(), "message 2 of the batch (id m2)")
	assert.Contains(t, err.Error(), "unknown_keys=ignore")
	assert.Equal(t, 0, count(t, admin, table))

	lax := openTarget(t, table, "&unknown_keys=ignore")
	require.NoError(t, write(t, lax, msg("m1", `{"sku":"A","qty":1}`, nil), msg("m2", `{"sku":"B","colour":"red","size":3}`, nil)))
	assert.Equal(t, 2, count(t, admin, table))

	for _, payload := range []string{`[1,2]`, `"text"`, `null`, `{"sku":"A"} trailing`, `not json`} {
		err := write(t, lax, msg("x", payload, nil))
		require.Error(t, err, payload)
		assert.Contains(t, err.Error(), "not a JSON object", payload)
	}
}

func TestConnectChecksTable(t *testing.T) {
	admin := needServer(t)
	ctx := context.Background()

	tg, err := buildTarget(t, testDSN()+"&table=mqb_no_such_table")
	require.NoError(t, err)
	err = tg.Connect(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist")
	assert.ErrorIs(t, err, bridge.ErrConfig, "a missing table is not retried: exit 2")
	_ = tg.Close(ctx, nil)

	table := newTable(t, admin, "message_id text, body jsonb")
	tg, err = buildTarget(t, testDSN()+"&table="+table+"&id_column=message_id")
	require.NoError(t, err)
	err = tg.Connect(ctx)
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), "CREATE UNIQUE INDEX")
	_ = tg.Close(ctx, nil)

	tg, err = buildTarget(t, testDSN()+"&table="+table+"&id_column=nope")
	require.NoError(t, err)
	err = tg.Connect(ctx)
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), "no such column")
	_ = tg.Close(ctx, nil)
}

// TestWriteBatchReturnsOnlyAfterCommit plays the route: it acknowledges at
// the source only when WriteBatch returns nil. A second connection holds a
// lock that stalls the insert; WriteBatch must not return until its
// transaction has committed, and every row must be visible to another
// session at the moment the acknowledgement happens.
func TestWriteBatchReturnsOnlyAfterCommit(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, "message_id text PRIMARY KEY, n int")
	tg := openTarget(t, table, "&id_column=message_id")

	observer, err := pgx.Connect(context.Background(), testDSN())
	require.NoError(t, err)
	defer observer.Close(context.Background())

	var seenAtAck = -1
	ack := bridge.AckFunc(func(ctx context.Context, err error) error {
		if err == nil {
			seenAtAck = count(t, observer, table)
		}
		return nil
	})

	locker, err := admin.Begin(context.Background())
	require.NoError(t, err)
	_, err = locker.Exec(context.Background(), "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	var batch []*bridge.Message
	for i := range 50 {
		batch = append(batch, msg(fmt.Sprintf("m%02d", i), fmt.Sprintf(`{"n":%d}`, i), nil))
	}
	done := make(chan error, 1)
	go func() { done <- write(t, tg, batch...) }()

	select {
	case err := <-done:
		t.Fatalf("WriteBatch returned (%v) while its insert could not commit", err)
	case <-time.After(400 * time.Millisecond):
	}
	require.NoError(t, locker.Commit(context.Background()))

	werr := <-done
	require.NoError(t, werr)
	require.NoError(t, ack(context.Background(), werr))
	assert.Equal(t, 50, seenAtAck, "all rows are committed when the source is acknowledged")
}

func TestReconnectsAfterConnectionLoss(t *testing.T) {
	admin := needServer(t)
	table := newTable(t, admin, "message_id text PRIMARY KEY, n int")
	tg := openTarget(t, table, "&id_column=message_id")
	require.NoError(t, write(t, tg, msg("a", `{"n":1}`, nil)))

	_, err := admin.Exec(context.Background(), "SELECT pg_terminate_backend($1)", tg.conn.PgConn().PID())
	require.NoError(t, err)

	// The batch in flight when the connection died fails (the route nacks
	// and retries it); the retry reconnects and succeeds.
	first := write(t, tg, msg("b", `{"n":2}`, nil))
	if first != nil {
		require.NoError(t, write(t, tg, msg("b", `{"n":2}`, nil)))
	}
	assert.Equal(t, 2, count(t, admin, table))
}

func closedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func TestConnectErrorsRedactThePassword(t *testing.T) {
	const password = "Sup3r-S3cret-pw"
	tests := []struct {
		name   string
		dsn    string
		server bool
		want   string
	}{
		{name: "connection refused", dsn: fmt.Sprintf("postgres://mqb:%s@127.0.0.1:%d/test?sslmode=disable&table=t", password, closedPort(t)),
			want: "connection refused"},
		{name: "password in the query", dsn: fmt.Sprintf("postgres://127.0.0.1:%d/test?user=mqb&password=%s&sslmode=disable&table=t", closedPort(t), password),
			want: "connection refused"},
		{name: "bad credentials", dsn: "postgres://mqb_no_such_role:" + password + "@127.0.0.1:5432/test?sslmode=disable&table=t",
			server: true, want: "mqb_no_such_role"},
		// sslmode=prefer tries twice and localhost may resolve twice: the
		// same failure is reported once.
		{name: "bad credentials, several attempts", dsn: "postgres://mqb_no_such_role:" + password + "@localhost:5432/test?table=t",
			server: true, want: "mqb_no_such_role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.server {
				needServer(t)
			}
			tg, err := buildTarget(t, tt.dsn)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = tg.Connect(ctx)
			require.Error(t, err)
			text := err.Error()
			t.Log(text)
			assert.NotContains(t, text, password)
			assert.NotContains(t, text, "\n", "one line")
			assert.Contains(t, text, "cannot connect")
			assert.Contains(t, text, tt.want)
			if tt.server {
				assert.Equal(t, 1, strings.Count(text, "does not exist"), "each failure once")
			}
			var pgErr interface{ SQLState() string }
			if tt.server {
				assert.True(t, errors.As(err, &pgErr), "the server's error stays reachable")
			}
			assert.Equal(t, tt.server, errors.Is(err, bridge.ErrConfig),
				"bad credentials are configuration (not retried, exit 2); a refused connection is retried by the route")
			assert.False(t, strings.Contains(fmt.Sprintf("%+v", err), password))
		})
	}
}

func TestQualifiedMixedCaseNames(t *testing.T) {
	admin := needServer(t)
	schema := newTable(t, admin, "x int") // only for a unique name
	schema = strings.Replace(schema, "mqb_test_", "mqb_schema_", 1)
	ctx := context.Background()
	_, err := admin.Exec(ctx, fmt.Sprintf(`CREATE SCHEMA %s; CREATE TABLE %s."Orders" ("Order Id" int PRIMARY KEY, "Note" text, "Msg" text UNIQUE)`, schema, schema))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })

	tg := openTarget(t, url.QueryEscape(schema+`."Orders"`), "&id_column=Msg")
	require.NoError(t, write(t, tg, msg("a", `{"Order Id":1,"Note":"it's \"quoted\""}`, nil), msg("b", `{"Order Id":2}`, nil)))
	require.NoError(t, write(t, tg, msg("a", `{"Order Id":1}`, nil)))
	var note string
	require.NoError(t, admin.QueryRow(ctx, fmt.Sprintf(`SELECT "Note" FROM %s."Orders" WHERE "Msg" = 'a'`, schema)).Scan(&note))
	assert.Equal(t, `it's "quoted"`, note)
	assert.Equal(t, 2, count(t, admin, schema+`."Orders"`))
}
