//go:build unix

package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	_ "github.com/mqb-project/mqb/bridge/all"
)

// The documentation examples are tests. Every fenced block tagged sh (or
// bash, shell) in README.md and docs/ is run with bash, in order, one
// sandbox directory per page; every YAML block that is a route file, or an
// endpoint of one, is parsed and resolved. A block that is not meant to run
// carries an HTML comment on the line before its fence:
//
//	<!-- not-run: why -->
//
// Absolute paths under the prefixes in sandboxPrefixes are moved into the
// sandbox, so `ls /var/spool/orders` looks at the spool the page's earlier
// `mqb copy` made there. Input files a command reads (--from file://...,
// dropzone://...) are created with a few records when the page has not made
// them. Server URLs (postgres, mqtt, nats) are pointed at the test servers
// (MQB_TEST_POSTGRES_DSN, MQB_TEST_MQTT_BROKER, MQB_TEST_NATS_SERVER); a
// block that needs a server that is not reachable is skipped, or fails when
// MQB_REQUIRE_SERVICES=1.

// sandboxPrefixes are the absolute directories that examples may use.
var sandboxPrefixes = []string{"/var/spool", "/var/lib/mqb", "/data", "/etc/mqb", "/srv", "/tmp"}

// The ways the README gets an mqb command, all replaced by the binary under
// test: go run ./cli/cmd/mqb, go build -o bin/mqb ./cli/cmd/mqb, bin/mqb.
var (
	goRunMQB   = regexp.MustCompile(`\bgo run \./cli/cmd/mqb\b`)
	goBuildMQB = regexp.MustCompile(`(?m)^\s*go build -o bin/mqb \./cli/cmd/mqb\s*$`)
	binMQB     = regexp.MustCompile(`(^|[\s;&|(])bin/mqb\b`)
)

// rewriteMQB makes every way of running mqb run the binary under test.
func rewriteMQB(script string) string {
	script = goBuildMQB.ReplaceAllString(script, "true # mqb is built by the test")
	script = goRunMQB.ReplaceAllString(script, "mqb")
	return binMQB.ReplaceAllString(script, "${1}mqb")
}

// onlyGoTest reports whether every command of a block runs go test: the
// test suite itself, which is not run from inside it.
func onlyGoTest(text string) bool {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "go test ") {
			return false
		}
		n++
	}
	return n > 0
}

// blockTimeout bounds one example block.
const blockTimeout = 60 * time.Second

var runnableLangs = map[string]bool{"sh": true, "bash": true, "shell": true}

type docBlock struct {
	file   string // relative to the repository root
	line   int    // line of the opening fence
	lang   string
	text   string
	notRun string // reason, from <!-- not-run: reason -->
}

var notRunRE = regexp.MustCompile(`^<!--\s*not-run:\s*(.+?)\s*-->$`)

// parseBlocks returns the fenced code blocks of a Markdown file.
func parseBlocks(t *testing.T, root, rel string) []docBlock {
	t.Helper()
	f, err := os.Open(filepath.Join(root, rel))
	require.NoError(t, err)
	defer f.Close()
	var (
		blocks   []docBlock
		cur      *docBlock
		fence    string
		lastText string // the last non-blank line outside a block
		buf      strings.Builder
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if cur == nil {
			if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
				fence = trim[:3]
				cur = &docBlock{file: rel, line: n, lang: strings.TrimSpace(strings.Trim(trim, "`~"))}
				if m := notRunRE.FindStringSubmatch(lastText); m != nil {
					cur.notRun = m[1]
				}
				buf.Reset()
				continue
			}
			if trim != "" {
				lastText = trim
			}
			continue
		}
		if strings.HasPrefix(trim, fence) && strings.Trim(trim, fence[:1]) == "" {
			cur.text = buf.String()
			blocks = append(blocks, *cur)
			cur, lastText = nil, ""
			continue
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	require.NoError(t, sc.Err())
	if cur != nil {
		assert.Fail(t, "unclosed code block", "%s:%d: code block is not closed", rel, cur.line)
	}
	return blocks
}

// docFiles returns README.md and every Markdown file under docs/, relative
// to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	if _, err := os.Stat(filepath.Join(root, "README.md")); err == nil {
		files = append(files, "README.md")
	}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

func TestDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documentation example; skipped with -short")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	files := docFiles(t, root)
	require.NotEmpty(t, files, "no documentation found under ../docs")
	bin := mqb // built once by TestMain (e2e_test.go)
	for _, rel := range files {
		blocks := parseBlocks(t, root, rel)
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			passes := 1
			if rel == "README.md" || strings.HasPrefix(rel, "docs/guide/") {
				passes = 2 // a reader who tries the tour or a guide again must get the same results
			}
			runPage(t, root, bin, blocks, passes)
		})
	}
}

// runPage runs the blocks of one page in order in one sandbox, passes
// times over.
func runPage(t *testing.T, root, bin string, blocks []docBlock, passes int) {
	sandbox := t.TempDir()
	for _, p := range sandboxPrefixes {
		require.NoError(t, os.MkdirAll(filepath.Join(sandbox, p), 0o755))
	}
	for _, d := range []string{"home", "tmp"} {
		require.NoError(t, os.MkdirAll(filepath.Join(sandbox, d), 0o755))
	}
	// Pages such as the README run from the repository root and read
	// examples/: give the sandbox a copy.
	if err := os.CopyFS(filepath.Join(sandbox, "examples"), os.DirFS(filepath.Join(root, "examples"))); !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	for pass := 1; pass <= passes; pass++ {
		if !runBlocks(t, bin, sandbox, blocks, pass) {
			return
		}
	}
}

// runBlocks runs the blocks of a page once; it reports false when a
// shell block failed, since later blocks build on it.
func runBlocks(t *testing.T, bin, sandbox string, blocks []docBlock, pass int) bool {
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		if pass > 1 {
			where = fmt.Sprintf("%s (pass %d)", where, pass)
		}
		switch {
		case b.notRun != "":
			t.Logf("%s: not run: %s", where, b.notRun)
		case runnableLangs[b.lang] && onlyGoTest(b.text):
			t.Logf("%s: not run: it runs the test suite itself", where)
		case runnableLangs[b.lang]:
			if !runShellBlock(t, bin, sandbox, where, b.text) {
				return false // later blocks build on this one
			}
		case b.lang == "yaml" || b.lang == "yml":
			checkYAMLBlock(t, where, b.text)
		case b.lang == "":
			assert.NotEqual(t, "mqb", firstCommand(b.text), "%s: an untagged block starts with an mqb command: tag it ```sh so that it is tested, or ```text if it is output", where)
		}
	}
	return true
}

func firstCommand(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			return f[0]
		}
	}
	return ""
}

// pathRE matches an absolute path under one of the sandbox prefixes, when it
// starts a word, a quoted string, a value, a shell default (${X:-/data})
// or the path of a URL.
var pathRE = func() *regexp.Regexp {
	alts := make([]string, len(sandboxPrefixes))
	for i, p := range sandboxPrefixes {
		alts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(^|[\s'"=:(/@,{-])((?:` + strings.Join(alts, "|") + `)(?:/|\b))`)
}()

// rewritePaths moves the sandbox prefixes into sandbox.
func rewritePaths(text, sandbox string) string {
	return pathRE.ReplaceAllString(text, "${1}"+sandbox+"${2}")
}

// A service is a server some examples talk to.
type service struct {
	schemes []string
	addr    func() string // host:port of the test server
}

var services = map[string]service{
	"PostgreSQL": {[]string{"postgres", "postgresql"}, func() string {
		u := postgresURL()
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "5432")
		}
		return u.Host
	}},
	"MQTT": {[]string{"mqtt", "mqtts"}, func() string { return envOr("MQB_TEST_MQTT_BROKER", "127.0.0.1:1883") }},
	"NATS": {[]string{"nats"}, func() string { return envOr("MQB_TEST_NATS_SERVER", "127.0.0.1:4222") }},
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func postgresURL() *url.URL {
	u, err := url.Parse(envOr("MQB_TEST_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"))
	if err != nil {
		panic(err)
	}
	return u
}

var serverURLRE = regexp.MustCompile(`\b(postgres|postgresql|mqtts?|nats)://[^\s'"]*`)

// rewriteServers points every server URL of text at the test servers and
// returns the services it needs.
func rewriteServers(text string) (string, []string) {
	need := map[string]bool{}
	out := serverURLRE.ReplaceAllStringFunc(text, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return raw
		}
		switch u.Scheme {
		case "postgres", "postgresql":
			need["PostgreSQL"] = true
			pg := postgresURL()
			q := pg.Query()
			for k, vs := range u.Query() {
				q[k] = vs
			}
			pg.RawQuery = strings.NewReplacer("%2A", "*", "%3E", ">", "%2F", "/").Replace(q.Encode())
			return pg.String()
		case "mqtt", "mqtts":
			need["MQTT"] = true
			u.Scheme = "mqtt"
			u.Host = services["MQTT"].addr()
			u.User = nil
		case "nats":
			need["NATS"] = true
			u.Host = services["NATS"].addr()
			u.User = nil
		}
		return u.String()
	})
	var names []string
	for n := range need {
		names = append(names, n)
	}
	sort.Strings(names)
	return out, names
}

// requireServices skips (or, with MQB_REQUIRE_SERVICES=1, fails) when a
// server is not reachable. It reports whether the block can run.
func requireServices(t *testing.T, where string, names []string) bool {
	t.Helper()
	for _, n := range names {
		if n == "MQTT" {
			svcLockBroker(t) // keep the MQTT connector's tests from restarting the broker meanwhile
		}
		addr := services[n].addr()
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			msg := fmt.Sprintf("%s: needs %s at %s: %v", where, n, addr, err)
			if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
				assert.Fail(t, "service unreachable", msg)
			} else {
				t.Log(msg + " (skipped; set MQB_REQUIRE_SERVICES=1 to fail instead)")
			}
			return false
		}
		c.Close()
	}
	return true
}

var inputURLRE = regexp.MustCompile(`--from[ =]['"]?((?:file|dropzone|dir-spool|spool|dirspool)://[^\s'"]+)`)

// makeInputs creates the input files, directories and spools the block
// reads and the page has not made yet.
func makeInputs(t *testing.T, bin, sandbox, text string) {
	t.Helper()
	for _, m := range inputURLRE.FindAllStringSubmatch(text, -1) {
		u, err := url.Parse(m[1])
		if err != nil {
			continue
		}
		format := u.Query().Get("format")
		switch u.Scheme {
		case "dir-spool", "spool", "dirspool":
			if _, err := os.Stat(u.Path); err == nil {
				continue
			}
			seedSpool(t, bin, sandbox, u)
		case "file":
			if _, err := os.Stat(u.Path); err == nil {
				continue
			}
			writeFixture(t, u.Path, format)
		case "dropzone":
			if entries, err := os.ReadDir(u.Path); err == nil && len(entries) > 0 {
				continue
			}
			name := "orders-1.txt"
			switch format {
			case "json":
				name = "orders-1.jsonl"
			case "csv":
				name = "orders-1.csv"
			}
			writeFixture(t, filepath.Join(u.Path, name), format)
		}
	}
}

// consumerOnly are the spool options that only a consumer reads.
var consumerOnly = []string{"stop_on_done", "drain_on_read", "bad_sidecar", "poll_interval"}

// seedSpool writes three messages into the spool that u reads, with u's
// layout, and a DONE sentinel when u waits for one.
func seedSpool(t *testing.T, bin, sandbox string, u *url.URL) {
	t.Helper()
	src := filepath.Join(sandbox, "tmp", "seed-orders.jsonl")
	writeFixture(t, src, "json")
	to := *u
	q := to.Query()
	if q.Get("stop_on_done") == "true" {
		q.Set("emit_done", "success")
	}
	for _, k := range consumerOnly {
		q.Del(k)
	}
	to.RawQuery = q.Encode()
	out, err := exec.Command(bin, "copy", "--drain", "--from", "file://"+src+"?format=json", "--to", to.String()).CombinedOutput()
	require.NoError(t, err, "seeding %s:\n%s", to.String(), out)
}

// writeFixture writes three records in format (guessed from the extension
// when empty).
func writeFixture(t *testing.T, path, format string) {
	t.Helper()
	if format == "" {
		switch filepath.Ext(path) {
		case ".jsonl", ".ndjson":
			format = "json"
		case ".csv":
			format = "csv"
		}
	}
	var data string
	switch format {
	case "json":
		data = `{"order_id":1,"item":"book","qty":2}` + "\n" + `{"order_id":2,"item":"pen","qty":10}` + "\n" + `{"order_id":3,"item":"lamp","qty":1}` + "\n"
	case "csv":
		data = "order_id,item,qty\n1,book,2\n2,pen,10\n3,lamp,1\n"
	default:
		data = "first line\nsecond line\nthird line\n"
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// rmRE finds rm commands, whose arguments must all be in the sandbox.
var rmRE = regexp.MustCompile(`(?m)(?:^|[;&|]\s*)rm\s+([^;&|\n]*)`)

// runShellBlock runs one block with bash; it reports whether it passed.
func runShellBlock(t *testing.T, bin, sandbox, where, text string) bool {
	t.Helper()
	script := rewriteMQB(rewritePaths(text, sandbox))
	script, need := rewriteServers(script)
	for _, m := range rmRE.FindAllStringSubmatch(script, -1) {
		for _, arg := range strings.Fields(m[1]) {
			if !strings.HasPrefix(arg, "-") && !strings.HasPrefix(strings.Trim(arg, `'"`), sandbox) {
				assert.Fail(t, "rm outside the sandbox", "%s: refusing to run: rm of %s, outside the sandbox (add its prefix to sandboxPrefixes)", where, arg)
				return false
			}
		}
	}
	if len(need) > 0 && !requireServices(t, where, need) {
		return false
	}
	makeInputs(t, bin, sandbox, script)

	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = sandbox
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(sandbox, "home"),
		"TMPDIR="+filepath.Join(sandbox, "tmp"),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		assert.Fail(t, "example timed out", "%s: example did not finish within %v (a route without --drain or stop_on_done waits forever; mark such blocks <!-- not-run: reason -->)\n--- script\n%s--- output\n%s", where, blockTimeout, script, out.String())
		return false
	}
	if !assert.NoError(t, err, "%s: example failed\n--- script\n%s--- output\n%s", where, script, out.String()) {
		return false
	}
	return true
}

// checkYAMLBlock parses a YAML block that is a route file, a part of one
// (input: or output: alone) or one endpoint (dir_spool: {...}), and
// resolves its endpoints. Other YAML is left alone.
func checkYAMLBlock(t *testing.T, where, text string) {
	t.Helper()
	top := map[string]bool{} // the top-level keys
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' {
			continue
		}
		if k, _, ok := strings.Cut(line, ":"); ok {
			top[strings.TrimSpace(k)] = true
		}
	}
	routeKeys := map[string]bool{"input": true, "output": true, "batch": true, "drain": true, "retry": true, "shutdown_timeout": true, "pipeline": true}
	isRoute := len(top) > 0
	for k := range top {
		isRoute = isRoute && routeKeys[k]
	}
	doc := text
	switch {
	case isRoute:
		if _, ok := top["input"]; !ok {
			doc += "input:\n  url: \"stdin://\"\n"
		}
		if _, ok := top["output"]; !ok {
			doc += "output:\n  url: \"stdout://\"\n"
		}
	case len(top) == 1:
		var name string
		for k := range top {
			name = k
		}
		if _, ok := bridge.DefaultEnv.Connector(name); !ok {
			return
		}
		var b strings.Builder
		b.WriteString("input:\n")
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			b.WriteString("  " + line + "\n")
		}
		b.WriteString("output:\n  url: \"stdout://\"\n")
		doc = b.String()
	default:
		return
	}
	cfg, err := bridge.ParseConfig(strings.NewReader(doc))
	if !assert.NoError(t, err, "%s: not a valid route:\n%s", where, doc) {
		return
	}
	for _, ep := range []bridge.Endpoint{cfg.Input, cfg.Output} {
		_, err := bridge.DefaultEnv.Resolve(ep)
		assert.NoError(t, err, "%s: endpoint %s", where, ep)
	}
}

// pendingPages are pages that other work will add; links to them are
// reported, not failed, until they exist.
var pendingPages = map[string]bool{}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`)
)

// TestDocLinks checks that every relative link in README.md and docs/
// points at a file that exists and, with a #fragment, at one of its
// headings.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchorCache[rel]; ok {
			return a
		}
		a := map[string]bool{}
		data, _ := os.ReadFile(filepath.Join(root, rel))
		inCode := false
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if m := headingRE.FindStringSubmatch(line); m != nil && !inCode {
				base := githubAnchor(m[1])
				id := base
				for i := 1; a[id]; i++ {
					id = fmt.Sprintf("%s-%d", base, i)
				}
				a[id] = true
			}
		}
		anchorCache[rel] = a
		return a
	}
	for _, rel := range docFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		inCode := false
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := rel
				if file != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), file)))
				}
				where := fmt.Sprintf("%s:%d", rel, i+1)
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					if pendingPages[dest] {
						t.Logf("%s: link to %s, which is not written yet", where, dest)
						continue
					}
					assert.Fail(t, "broken link", "%s: link to %s: no such file", where, target)
					continue
				}
				if frag != "" && strings.HasSuffix(dest, ".md") {
					assert.True(t, anchorsOf(dest)[frag], "%s: link to %s: %s has no heading with anchor #%s", where, target, dest, frag)
				}
			}
		}
	}
}

// githubAnchor returns the anchor GitHub gives a heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
