package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEnv runs mqb with extra environment variables and stdin.
func runEnv(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(mqb, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running mqb %v: %v", args, err)
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// Route files take ${VAR} and ${VAR:-default} from the environment, keys
// from --set, and the whole file from standard input with -.
func TestConfigFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	route := writeFile(t, filepath.Join(dir, "route.yaml"), `input:
  dir_spool: {path: "${SPOOL_DIR}", stop_on_done: "${STOP:-true}"}
output:
  file: {path: "${OUT_DIR}/out.txt", append: false}
batch:
  size: ${BATCH}
drain: true
`)
	ok(t, "a\nb\nc\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)

	t.Run("lint names every unset variable", func(t *testing.T) {
		r := runEnv(t, []string{"SPOOL_DIR=" + spool}, "", "lint", route)
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "route.yaml: environment variable(s) not set and without a default: OUT_DIR (line 4), BATCH (line 6)")
	})
	env := []string{"SPOOL_DIR=" + spool, "OUT_DIR=" + dir, "BATCH=2"}
	t.Run("lint", func(t *testing.T) {
		r := runEnv(t, env, "", "lint", route)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "dir_spool:"+spool+" -> file:"+dir+"/out.txt")
	})
	t.Run("run with --set", func(t *testing.T) {
		r := runEnv(t, env, "", "run", "--set", "batch.size=1", "--set", "output.file.path="+dir+"/set.txt", route)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "a\nb\nc\n", readFile(t, filepath.Join(dir, "set.txt")))
		assert.Contains(t, r.stderr, "batch_size=1")
	})
	t.Run("run - reads the route from stdin", func(t *testing.T) {
		ok(t, "d\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)
		r := runEnv(t, env, readFile(t, route), "run", "-")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "d\n", readFile(t, filepath.Join(dir, "out.txt")))
	})
	t.Run("copy --config - with --set", func(t *testing.T) {
		ok(t, "e\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)
		r := runEnv(t, env, readFile(t, route), "copy", "--config", "-", "--set", "output.url=stdout://")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "e\n", r.stdout)
	})
	t.Run("--set without --config", func(t *testing.T) {
		r := run(t, "", "copy", "--from", "stdin://", "--to", "stdout://", "--set", "batch.size=1")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "--set overrides a key of the route file: it needs --config")
	})
	t.Run("a route from stdin cannot read stdin", func(t *testing.T) {
		r := run(t, "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\n", "run", "-")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "standard input holds the route file")
	})
}

// Every connector that takes a password reads it from a file as well:
// the file is read when the route is built, so lint reports a bad one.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	pw := writeFile(t, filepath.Join(dir, "pw"), "s3cret\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct{ name, endpoint, want string }{
		{"mqtt", `{url: "mqtt://u@127.0.0.1:1883?topic=t&password_file=` + missing + `"}`, `option "password_file" = "` + missing + `": cannot be read`},
		{"nats token", `{nats: {servers: "nats://127.0.0.1:4222", subject: s, token_file: "` + missing + `"}}`, `option "token_file" = "` + missing + `": cannot be read`},
		{"nats both", `{nats: {servers: "nats://127.0.0.1:4222", subject: s, password: x, password_file: "` + pw + `"}}`, `option "password_file": cannot be combined with password`},
		{"postgres", `{url: "postgres://u:inline@127.0.0.1/test?table=t&password_file=` + pw + `"}`, `option "password_file": cannot be combined with a password in dsn`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			route := writeFile(t, filepath.Join(dir, "r.yaml"), "input: {url: \"stdin://\"}\noutput: "+tc.endpoint+"\n")
			r := run(t, "", "lint", route)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "inline")
		})
	}
	route := writeFile(t, filepath.Join(dir, "ok.yaml"), "input: {url: \"stdin://\"}\noutput: {url: \"mqtt://u@127.0.0.1:1883?topic=t&password_file="+pw+"\"}\n")
	ok(t, "", "lint", route)
}
