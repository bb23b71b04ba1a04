package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mqb run with several route files runs them side by side; one failing
// route does not stop the others unless --fail-fast is given.
func TestSeveralRoutesInOneProcess(t *testing.T) {
	dir := t.TempDir()
	spool := func(name string) string { return filepath.Join(dir, name) }
	route := func(name, in, out string, drain bool) string {
		d := ""
		if drain {
			d = "drain: true\n"
		}
		return writeFile(t, filepath.Join(dir, name+".yaml"), "input: {url: \""+in+"\"}\noutput: {url: \""+out+"\"}\n"+d)
	}
	ok(t, "a1\na2\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool("a"))
	ok(t, "b1\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool("b"))
	a := route("orders", "dir-spool://"+spool("a"), "file://"+spool("a.out"), true)
	b := route("invoices", "dir-spool://"+spool("b"), "file://"+spool("b.out"), true)

	t.Run("both run", func(t *testing.T) {
		r := ok(t, "", "run", a, b)
		assert.Equal(t, "a1\na2\n", readFile(t, spool("a.out")))
		assert.Equal(t, "b1\n", readFile(t, spool("b.out")))
		assert.Contains(t, r.stderr, `msg="route finished" route=orders read=2`)
		assert.Contains(t, r.stderr, `msg="route finished" route=invoices read=1`)
	})

	// A second consumer of spool a fails on the CONSUMER claim at once. The
	// first is a separate mqb that keeps waiting for more, so the clash does
	// not depend on which route of the run gets the claim first.
	ok(t, "a3\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool("a"))
	holder := start(t, "copy", "--from", "dir-spool://"+spool("a")+"?poll_interval=20ms", "--to", "file://"+spool("held.out"))
	require.Eventually(t, func() bool { return strings.Contains(holder.stderr.String(), "route started") },
		30*time.Second, 10*time.Millisecond, "the holder starts")
	clash := route("clash", "dir-spool://"+spool("a"), "stdout://", true)
	waiting := route("waiting", "dir-spool://"+spool("never")+"?poll_interval=20ms", "stdout://", false)
	t.Run("a failure leaves the others running", func(t *testing.T) {
		ok(t, "b2\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool("b"))
		r := run(t, "", "run", clash, b)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "CONSUMER claim is held")
		assert.Equal(t, "b1\nb2\n", readFile(t, spool("b.out")), "invoices ran to its end")
		assert.Equal(t, 1, strings.Count(r.stderr, "mqb: "), "one error line: %s", r.stderr)
	})
	t.Run("--fail-fast stops the others", func(t *testing.T) {
		start := time.Now()
		r := run(t, "", "run", "--fail-fast", waiting, clash)
		assert.Less(t, time.Since(start), 10*time.Second, "the waiting route was stopped")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "route waiting: route interrupted: route ")
		assert.Contains(t, r.stderr, "failed and --fail-fast is set")
	})
	holder.signal(t, os.Interrupt)
	assert.Equal(t, 130, holder.wait(t))
	assert.Equal(t, "a3\n", readFile(t, spool("held.out")), "the holder delivered what it held")
	t.Run("names must differ", func(t *testing.T) {
		other := filepath.Join(dir, "sub")
		require.NoError(t, os.Mkdir(other, 0o700))
		dup := writeFile(t, filepath.Join(other, "orders.yaml"), readFile(t, a))
		r := run(t, "", "run", a, dup)
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, `would both be route "orders"`)
	})
	t.Run("a shared dead letter starts nothing", func(t *testing.T) {
		withDead := func(name, in, out string) string {
			return writeFile(t, filepath.Join(dir, name+".yaml"), "input: {url: \""+in+"\"}\noutput: {url: \""+out+
				"\"}\ndead_letter: {url: \"dir-spool://"+spool("dead")+"\"}\ndrain: true\n")
		}
		x := withDead("x", "dir-spool://"+spool("b"), "file://"+spool("x.out"))
		y := withDead("y", "dir-spool://"+spool("never"), "file://"+spool("y.out"))
		r := run(t, "", "run", x, y)
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "route x's dead_letter and route y's dead_letter both write to "+spool("dead")+", which takes one writer at a time")
		assert.NotContains(t, r.stderr, "route started")
		assert.NoFileExists(t, spool("x.out"))
	})
	t.Run("a bad file starts nothing", func(t *testing.T) {
		bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "input: {url: \"nope://\"}\noutput: {url: \"stdout://\"}\n")
		r := run(t, "", "run", b, bad)
		assert.Equal(t, 2, r.code)
		assert.NotContains(t, r.stderr, "route started")
	})
}
