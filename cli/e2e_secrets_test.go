package cli_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// leak is the password every case below hides somewhere. It has no
// character that an escaping could change, so a plain search finds it in
// any output.
const leak = "Pw9Leak7Q"

// schemeQuery is what a URL of a scheme needs beyond its credentials to get
// past decoding (a required option) and to fail fast when it connects.
// Schemes missing here are still tested, with no extra options.
var schemeQuery = map[string]string{
	"mqtt": "topic=t&connect_timeout=200ms", "mqtts": "topic=t&connect_timeout=200ms",
	"nats": "subject=t&connect_timeout=200ms", "postgres": "table=t", "postgresql": "table=t",
}

// secretURLs returns, for scheme, URLs that carry the password well-formed
// and in every malformed way we know: a port that is not a number, an
// unclosed [, a bad % escape, a bare "#", "/" or "?" in the password, a ;
// separator, a password query parameter, an unknown option, a path where
// none belongs, and a token as user info when the scheme's connector reads
// one there.
func secretURLs(t *testing.T, scheme string) []string {
	t.Helper()
	c, ok := bridge.DefaultEnv.ConnectorForScheme(scheme)
	require.True(t, ok, scheme)
	q := schemeQuery[scheme]
	amp := func(s string) string {
		if q == "" {
			return s
		}
		return q + "&" + s
	}
	base := scheme + "://"
	path := ""
	if strings.HasPrefix(scheme, "postgres") {
		path = "/db"
	}
	urls := []string{
		base + "u:" + leak + "@127.0.0.1:1" + path + "?" + q,
		base + "u:" + leak + "@127.0.0.1:notaport" + path + "?" + q,
		base + "u:" + leak + "@[::1" + path + "?" + q,
		base + "u:" + leak + "@127.0.0.1:1" + path + "?" + amp("x=%zz"),
		base + "u:" + leak + "%zz@127.0.0.1:1" + path + "?" + q,
		base + "u:" + leak + "#x@127.0.0.1:1" + path + "?" + q,
		base + "u:1#" + leak + "@127.0.0.1:1" + path + "?" + q,
		base + "u:" + leak + "/x@127.0.0.1:1" + path + "?" + q,
		base + "u:" + leak + "?x@127.0.0.1:1" + path + "?" + q,
		base + "u:" + leak + "@127.0.0.1:1" + path + "?" + amp("a=1;b=2"),
		base + "127.0.0.1:1" + path + "?" + amp("password="+leak),
		base + "127.0.0.1:1" + path + "?" + amp("password="+leak+"%zz"),
		base + "127.0.0.1:1" + path + "?" + amp("token="+leak),
		base + "u:" + leak + "@127.0.0.1:1" + path + "?" + amp("no_such_option=1"),
		base + "u:" + leak + "@127.0.0.1:1/some/path?" + q,
	}
	if c.TokenUser {
		urls = append(urls, base+leak+"@127.0.0.1:1"+path+"?"+q, base+leak+"@127.0.0.1:notaport"+path+"?"+q,
			base+leak+"#x@127.0.0.1:1"+path+"?"+q)
	}
	return urls
}

// secretYAMLEndpoints returns route endpoints (YAML) that carry the
// password in a field: every field a connector marks Secret, and every
// string field holding a DSN or URL with a password, well-formed or not.
func secretYAMLEndpoints(t *testing.T) []string {
	t.Helper()
	env := bridge.DefaultEnv
	var out []string
	dsns := []string{
		"postgres://u:" + leak + "@127.0.0.1:1/db",
		"postgres://u:" + leak + "@127.0.0.1:notaport/db",
		"postgres://u:" + leak + "@[::1/db",
		"host=127.0.0.1 port=1 user=u password=" + leak,
		"host=127.0.0.1 port=notaport password='" + leak + "'",
	}
	for _, name := range env.Names() {
		c, _ := env.Connector(name)
		required := map[string]string{}
		for _, f := range c.Schema.Fields {
			if f.Required {
				required[f.Name] = "x"
			}
		}
		if _, ok := required["path"]; ok {
			required["path"] = "/nonexistent/mqb-secret-test"
		}
		if _, ok := c.Schema.Field("connect_timeout"); ok {
			required["connect_timeout"] = "200ms"
		}
		for _, f := range c.Schema.Fields {
			values := []string{leak}
			if !f.Secret {
				if f.Name != "dsn" {
					continue
				}
				values = dsns
			}
			for _, v := range values {
				fields := map[string]string{}
				for k, rv := range required {
					fields[k] = rv
				}
				fields[f.Name] = v
				out = append(out, yamlEndpoint(name, fields))
			}
		}
	}
	require.NotEmpty(t, out, "no connector has a secret field")
	return out
}

func yamlEndpoint(connector string, fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %q", k, fields[k])
	}
	return fmt.Sprintf("{%s: {%s}}", connector, strings.Join(parts, ", "))
}

func assertNoLeak(t *testing.T, r result, what string) {
	t.Helper()
	assert.NotContains(t, r.stdout, leak, "%s: stdout", what)
	assert.NotContains(t, r.stderr, leak, "%s: stderr", what)
}

// TestSecretsNeverPrinted runs the command on a password given in every
// registered scheme's URL (well-formed and malformed), in every secret
// YAML field and in DSNs, as a source and as a target, through copy, run
// and lint, with text and JSON logs at debug level: the password never
// appears in stdout or stderr.
func TestSecretsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), "{\"a\":1}\n")
	// No retries: a connect that fails ends the command at once.
	noRetry := writeFile(t, filepath.Join(dir, "noretry.yaml"),
		"input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\nretry: {max_retries: 0, budget: 0s}\n")
	debug := []string{"--log-level", "debug"}
	jsonDebug := []string{"--log-format", "json", "--log-level", "debug"}
	env := bridge.DefaultEnv
	for _, scheme := range env.Schemes() {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			urls := secretURLs(t, scheme)
			if c, _ := env.ConnectorForScheme(scheme); c.Schemes[0] != scheme {
				urls = urls[:4] // an alias: the main scheme runs every variant
			}
			for i, u := range urls {
				assertNoLeak(t, run(t, "", append(debug, "copy", "--config", noRetry, "--drain", "--from", u, "--to", "stdout://")...), "copy --from "+u)
				assertNoLeak(t, run(t, "", append(jsonDebug, "copy", "--config", noRetry, "--from", "file://"+in, "--to", u)...), "copy --to "+u)
				route := writeFile(t, filepath.Join(t.TempDir(), fmt.Sprintf("r%d.yaml", i)),
					fmt.Sprintf("input: {url: %q}\noutput: {url: %q}\n", "file://"+in, u))
				assertNoLeak(t, run(t, "", "lint", route), "lint "+u)
			}
		})
	}
	for i, ep := range secretYAMLEndpoints(t) {
		t.Run(fmt.Sprintf("yaml%d", i), func(t *testing.T) {
			t.Parallel()
			input := writeFile(t, filepath.Join(t.TempDir(), "in.yaml"),
				fmt.Sprintf("input: %s\noutput: {url: \"stdout://\"}\ndrain: true\nretry: {max_retries: 0, budget: 0s}\n", ep))
			output := writeFile(t, filepath.Join(t.TempDir(), "out.yaml"),
				fmt.Sprintf("input: {url: %q}\noutput: %s\nretry: {max_retries: 0, budget: 0s}\n", "file://"+in, ep))
			assertNoLeak(t, run(t, "", "lint", input), "lint "+ep)
			assertNoLeak(t, run(t, "", "lint", output), "lint "+ep)
			assertNoLeak(t, run(t, "", append(jsonDebug, "run", input)...), "run "+ep)
			assertNoLeak(t, run(t, "", append(debug, "copy", "--config", output)...), "copy --config "+ep)
		})
	}
}

// TestSecretsNotInMetrics scrapes /metrics while a route whose target URL
// holds a password runs (PostgreSQL trusts local connections, so the
// password is accepted and the route waits on its empty spool; the table
// must exist, or the route stops at connect before anything is served).
func TestSecretsNotInMetrics(t *testing.T) {
	table := svcTable(t, svcPostgres(t), "n int PRIMARY KEY")
	spool := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cp := start(t, "--log-format", "json", "--log-level", "debug", "copy", "--metrics-addr", addr,
		"--from", "dir-spool://"+spool+"?poll_interval=20ms",
		"--to", "postgres://postgres:"+leak+"@127.0.0.1:5432/test?sslmode=disable&table="+table)
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, "mqb_spool_backlog")
	}, 30*time.Second, 20*time.Millisecond, "stderr: %s", cp.stderr)
	assert.NotContains(t, body, leak)
	cp.signal(t, syscall.SIGTERM)
	cp.wait(t)
	assert.NotContains(t, cp.stderr.String(), leak)
}
