package bridge_test

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mqb-project/mqb/core/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	_ "github.com/mqb-project/mqb/bridge/all"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// updateReference rewrites the generated part of docs/reference/<connector>.md
// (and creates a missing page from a template):
//
//	go test ./bridge -run TestReferencePages -update
var updateReference = flag.Bool("update", false, "rewrite the generated part of the connector pages under docs/reference")

const referenceDir = "../docs/reference/"

// refSpec says how a connector's page shows its fields. Fields the URL
// carries outside its query (a path, a host, user info) get their own URL
// builder; every other field is shown as a query parameter of base.
type refSpec struct {
	base     string                         // a valid URL of the connector
	urlParts map[string]func(string) string // field -> URL that sets it to the value
	examples map[string]string
	allowed  map[string]string
}

var refSpecs = map[string]refSpec{
	"file": {
		base:     "file:///data/orders.jsonl",
		urlParts: map[string]func(string) string{"path": prefix("file://")},
		examples: map[string]string{"path": "/data/orders.jsonl", "delimiter": ";", "content_type": "application/x-ndjson", "source": "orders", "file_mode": "0640"},
		allowed:  map[string]string{"path": "an absolute file path", "delimiter": "one character, not a quote or a line break"},
	},
	"dropzone": {
		base:     "dropzone:///data/incoming",
		urlParts: map[string]func(string) string{"path": prefix("dropzone://")},
		examples: map[string]string{"path": "/data/incoming", "delimiter": ";", "content_type": "application/x-ndjson", "source": "orders",
			"pattern": "*.jsonl", "poll_interval": "5s", "state_path": "/var/lib/mqb/incoming-state.json", "roll_count": "5000",
			"roll_interval": "1m", "prefix": "orders-", "extension": ".ndjson", "file_mode": "0640"},
		allowed: map[string]string{"path": "an absolute directory path", "delimiter": "one character, not a quote or a line break",
			"pattern": "a glob as in Go's path.Match", "state_path": "an absolute file path"},
	},
	"stdin": {
		base:     "stdin://",
		examples: map[string]string{"delimiter": ";", "content_type": "application/x-ndjson", "source": "orders"},
		allowed:  map[string]string{"delimiter": "one character, not a quote or a line break"},
	},
	"stdout": {
		base:     "stdout://",
		examples: map[string]string{"delimiter": ";"},
		allowed:  map[string]string{"delimiter": "one character, not a quote or a line break"},
	},
	"mqtt": {
		base: "mqtt://broker.local:1883?topic=telemetry",
		urlParts: map[string]func(string) string{
			"broker":   func(v string) string { return "mqtt://" + v + "?topic=telemetry" },
			"username": func(v string) string { return "mqtt://" + v + "@broker.local:1883?topic=telemetry" },
			"password": func(v string) string { return "mqtt://ingest:" + v + "@broker.local:1883?topic=telemetry" },
			"topic":    func(v string) string { return "mqtt://broker.local:1883?topic=" + schemadoc.QueryValue(v) },
		},
		examples: map[string]string{"broker": "broker.local:1883", "username": "ingest", "password": "secret", "topic": "sensors/+/temperature",
			"qos": "0", "client_id": "mqb-telemetry-1", "idle_timeout": "10s", "connect_timeout": "1m", "write_timeout": "1m",
			"keep_alive": "1m", "max_reconnect_interval": "30s", "ca_file": "/etc/mqb/ca.pem", "cert_file": "/etc/mqb/client.pem", "key_file": "/etc/mqb/client.key"},
		allowed: map[string]string{"broker": "`host` or `host:port` (required)", "topic": "an MQTT topic; a source may use `+` and `#` (required)"},
	},
	"postgres": {
		base: "postgres://mqb:secret@localhost:5432/app?table=orders",
		urlParts: map[string]func(string) string{
			"dsn": func(v string) string { return v + "?table=orders" },
			"table": func(v string) string {
				return "postgres://mqb:secret@localhost:5432/app?table=" + schemadoc.QueryValue(v)
			},
		},
		examples: map[string]string{"dsn": "postgres://mqb:secret@localhost:5432/app", "table": "sales.orders", "column": "doc",
			"id_column": "message_id", "metadata_column": "metadata"},
		allowed: map[string]string{"dsn": "a postgres:// URL or a `key=value` list (required)", "table": "a table name, optionally schema-qualified (required)"},
	},
	"nats": {
		base: "nats://localhost:4222?subject=orders.created",
		urlParts: map[string]func(string) string{
			"servers":  func(v string) string { return "nats://" + v + "?subject=orders.created" },
			"username": func(v string) string { return "nats://" + v + ":secret@localhost:4222?subject=orders.created" },
			"password": func(v string) string { return "nats://ingest:" + v + "@localhost:4222?subject=orders.created" },
			"token":    func(v string) string { return "nats://" + v + "@localhost:4222?subject=orders.created" },
			"subject":  func(v string) string { return "nats://localhost:4222?subject=" + schemadoc.QueryValue(v) },
		},
		examples: map[string]string{"servers": "nats1.local:4222,nats2.local:4222", "username": "ingest", "password": "secret", "token": "s3cr3t-token",
			"creds_file": "/etc/mqb/ingest.creds", "ca_file": "/etc/mqb/ca.pem", "cert_file": "/etc/mqb/client.pem", "key_file": "/etc/mqb/client.key",
			"subject": "orders.>", "stream": "ORDERS", "duplicate_window": "10m", "replicas": "3", "max_age": "720h", "max_bytes": "1073741824", "durable": "orders-to-spool", "ack_wait": "1m",
			"max_ack_pending": "500", "idle_timeout": "10s", "connect_timeout": "30s", "write_timeout": "1m"},
		allowed: map[string]string{"servers": "`host:port`, comma-separated (required)", "subject": "a NATS subject; a source may use `*` and `>` (required)"},
	},
}

func prefix(p string) func(string) string { return func(v string) string { return p + v } }

// pageName is the reference page of a connector: its YAML name with - for _.
func pageName(connector string) string {
	return referenceDir + strings.ReplaceAll(connector, "_", "-") + ".md"
}

func TestReferencePages(t *testing.T) {
	env := bridge.DefaultEnv
	for _, name := range env.Names() {
		c, _ := env.Connector(name)
		t.Run(name, func(t *testing.T) {
			if c.Schema == dirspool.Schema {
				// Its page is generated by dirspool's TestReferencePage; check
				// here what core cannot: the YAML spelling of each field.
				checkYAMLSpelling(t, c, "dir-spool:///var/spool/orders", map[string]string{"path": "/var/spool/orders"})
				return
			}
			spec, ok := refSpecs[name]
			require.True(t, ok, "connector %q has no entry in refSpecs (bridge/reference_test.go): add one so that %s documents it", name, pageName(name))
			urlFor := func(f option.Field, v string) string {
				if b, ok := spec.urlParts[f.Name]; ok {
					return b(v)
				}
				sep := "?"
				if strings.Contains(spec.base, "?") {
					sep = "&"
				}
				return spec.base + sep + f.Name + "=" + schemadoc.QueryValue(v)
			}
			page := schemadoc.Page{Schema: c.Schema, URL: urlFor, Examples: spec.examples, Allowed: spec.allowed}
			checkSpecNames(t, c.Schema, spec)
			checkURLSpelling(t, c, page)
			checkYAMLSpelling(t, c, spec.base, spec.examples)
			checkConnectorPage(t, c, schemadoc.Markdown(page))
		})
	}
}

func checkSpecNames(t *testing.T, s *option.Schema, spec refSpec) {
	t.Helper()
	for _, m := range []map[string]string{spec.examples, spec.allowed} {
		for name := range m {
			_, ok := s.Field(name)
			assert.True(t, ok, "refSpecs names %q, which is not a field of %s", name, s.Name)
		}
	}
	for name := range spec.urlParts {
		_, ok := s.Field(name)
		assert.True(t, ok, "refSpecs names %q, which is not a field of %s", name, s.Name)
	}
}

// checkURLSpelling resolves the example URL of every field and checks that
// it sets the field to the example value.
func checkURLSpelling(t *testing.T, c *bridge.Connector, page schemadoc.Page) {
	t.Helper()
	for _, f := range c.Schema.Fields {
		ex := page.Example(f)
		u := page.URL(f, ex)
		r, err := bridge.DefaultEnv.Resolve(bridge.Endpoint{URL: u})
		if !assert.NoError(t, err, "%s: example URL %s", f.Name, u) {
			continue
		}
		want, err := c.Schema.DecodeMap(requiredPlus(t, c, r.Values, f.Name, ex))
		if !assert.NoError(t, err, "%s: example value %q", f.Name, ex) {
			continue
		}
		assert.Equal(t, value(want, f), value(r.Values, f), "%s: what example URL %s sets it to", f.Name, u)
	}
}

// checkYAMLSpelling writes each field as the page shows it in YAML, inside a
// route file, and checks that it decodes like the URL spelling.
func checkYAMLSpelling(t *testing.T, c *bridge.Connector, base string, examples map[string]string) {
	t.Helper()
	baseRes, err := bridge.DefaultEnv.Resolve(bridge.Endpoint{URL: base})
	require.NoError(t, err, "base URL %s", base)
	page := schemadoc.Page{Schema: c.Schema, Examples: examples}
	for _, f := range c.Schema.Fields {
		ex := page.Example(f)
		var b strings.Builder
		fmt.Fprintf(&b, "input:\n  %s:\n", c.Name)
		for _, rf := range c.Schema.Fields {
			if rf.Required && rf.Name != f.Name {
				fmt.Fprintf(&b, "    %s: %s\n", rf.Name, schemadoc.YAMLValue(rf, fmt.Sprint(value(baseRes.Values, rf))))
			}
		}
		fmt.Fprintf(&b, "    %s: %s\noutput:\n  url: \"stdout://\"\n", f.Name, schemadoc.YAMLValue(f, ex))
		cfg, err := bridge.ParseConfig(strings.NewReader(b.String()))
		if !assert.NoError(t, err, "%s: YAML spelling:\n%s", f.Name, b.String()) {
			continue
		}
		r, err := bridge.DefaultEnv.Resolve(cfg.Input)
		if !assert.NoError(t, err, "%s: YAML spelling:\n%s", f.Name, b.String()) {
			continue
		}
		want, err := c.Schema.DecodeMap(requiredPlus(t, c, baseRes.Values, f.Name, ex))
		if !assert.NoError(t, err, "%s: example value %q", f.Name, ex) {
			continue
		}
		assert.Equal(t, value(want, f), value(r.Values, f), "%s: what YAML `%s: %s` gives", f.Name, f.Name, schemadoc.YAMLValue(f, ex))
	}
}

// requiredPlus returns the required fields of c as set in v, plus name=value.
func requiredPlus(t *testing.T, c *bridge.Connector, v *option.Values, name, val string) map[string]any {
	t.Helper()
	m := map[string]any{name: val}
	for _, f := range c.Schema.Fields {
		if f.Required && f.Name != name {
			m[f.Name] = fmt.Sprint(value(v, f))
		}
	}
	return m
}

func value(v *option.Values, f option.Field) any {
	switch f.Type {
	case option.TypeInt:
		return v.Int(f.Name)
	case option.TypeBool:
		return v.Bool(f.Name)
	case option.TypeDuration:
		return v.Duration(f.Name)
	case option.TypeFileMode:
		return v.FileMode(f.Name)
	case option.TypeSize:
		return v.Size(f.Name)
	}
	return v.String(f.Name)
}

// checkConnectorPage compares the generated part of the connector's page,
// or rewrites it with -update (creating the page when it is missing).
func checkConnectorPage(t *testing.T, c *bridge.Connector, generated string) {
	t.Helper()
	path := pageName(c.Name)
	old, err := os.ReadFile(path)
	exists := err == nil
	if os.IsNotExist(err) && *updateReference {
		old = []byte(pageTemplate(c))
	} else {
		require.NoError(t, err, "every connector needs a reference page; create it with: go test ./bridge -run TestReferencePages -update")
	}
	want, err := schemadoc.Splice(string(old), generated)
	require.NoError(t, err, path)
	if exists && want == string(old) {
		return
	}
	if *updateReference {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		t.Logf("rewrote %s", path)
		return
	}
	assert.Fail(t, "reference page out of date", "%s is out of date with the %s option table; run: go test ./bridge -run TestReferencePages -update\nfirst difference:\n%s",
		path, c.Name, firstDiff(string(old), want))
}

func pageTemplate(c *bridge.Connector) string {
	schemes := append([]string(nil), c.Schemes...)
	sort.Strings(schemes)
	return fmt.Sprintf("# %s: field reference\n\nURL schemes: %s. YAML key: `%s`.\n\n## Fields\n\n%s\n%s\n",
		c.Name, "`"+strings.Join(schemes, "`, `")+"`", c.Name, schemadoc.Begin, schemadoc.End)
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d\n  page: %s\n  want: %s", i+1, gl, wl)
		}
	}
	return "(none)"
}
