package dirspool_test

import (
	"errors"
	"flag"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// update rewrites the generated part of docs/reference/dir-spool.md:
//
//	go test ./bridge/connectors/dirspool -run TestReferencePage -update
var update = flag.Bool("update", false, "rewrite the generated part of docs/reference/dir-spool.md")

const referencePage = "../../../docs/reference/dir-spool.md"

const exampleSpool = "/var/spool/orders"

// referenceExamples are the values the page shows, where the default would
// not teach anything.
var referenceExamples = map[string]string{
	"path":               exampleSpool,
	"naming_pattern":     "{seq:012}",
	"payload_extension":  ".jsonl",
	"metadata_extension": ".meta",
	"shard_depth":        "2",
	"shard_width":        "3",
	"fsync":              "batch",
	"emit_done":          "success",
	"poll_interval":      "1s",
	"max_messages":       "100000",
	"max_bytes":          "10GiB",
	"min_free_bytes":     "1GiB",
	"when_full":          "fail",
	"backend":            "memfs",
	"file_mode":          "0640",
	"dir_mode":           "0750",
}

// refusedSettings are URL queries (or whole URLs, when they start with a
// scheme) that the decoder must refuse, naming field. The page shows each
// one with the error the code gives.
var refusedSettings = []struct{ field, setting string }{
	{"path", "dir-spool:///var/spool/orders?path=/tmp/x"},
	{"path", "dir-spool://var/spool/orders"},
	{"naming_pattern", "naming_pattern=orders-{seq:09}"},
	{"naming_pattern", "naming_pattern={seq:20}"},
	{"naming_pattern", "naming_pattern={seq:09}/x"},
	{"naming_pattern", "naming_pattern={seq:09}.tmp"},
	{"payload_extension", "payload_extension=bin"},
	{"payload_extension", "payload_extension="},
	{"metadata_extension", "payload_extension=.json"},
	{"metadata_extension", "payload_extension=.json&metadata_extension=.meta.json"},
	{"shard_depth", "shard_depth=3&shard_width=3"},
	{"shard_depth", "naming_pattern={seq:06}&shard_depth=2&shard_width=3"},
	{"shard_width", "shard_depth=2&shard_width=0"},
	{"max_messages", "max_messages=0"},
	{"max_messages", "max_messages=-5"},
	{"max_bytes", "max_bytes=0"},
	{"max_bytes", "max_bytes=10XB"},
	{"min_free_bytes", "min_free_bytes=-1GiB"},
	{"when_full", "max_messages=10&when_full=wait"},
	{"fsync", "fsync=always"},
	{"atomic", "atomic=yes"},
	{"poll_interval", "poll_interval=0s"},
	{"poll_interval", "poll_interval=5"},
	{"file_mode", "file_mode=0999"},
	{"shard_dept", "shard_dept=2"},
	{"fsync", "fsync=none&fsync=chunk"},
}

func spoolURL(query string) string {
	if strings.Contains(query, "://") {
		return query
	}
	return "dir-spool://" + exampleSpool + "?" + query
}

func referenceURL(f option.Field, value string) string {
	if f.Name == "path" {
		return "dir-spool://" + value
	}
	return spoolURL(f.Name + "=" + schemadoc.QueryValue(value))
}

// parseURL decodes a dir-spool URL as a route does.
func parseURL(e *bridge.Env, u string) (dirspool.Config, error) {
	r, err := e.Resolve(bridge.Endpoint{URL: u})
	if err != nil {
		return dirspool.Config{}, err
	}
	return dirspool.Decode(e, r.Values)
}

func TestReferencePage(t *testing.T) {
	e := env()
	page := schemadoc.Page{Schema: dirspool.Schema, URL: referenceURL,
		Examples: referenceExamples, Allowed: dirspool.Allowed}

	for name := range dirspool.Allowed {
		if _, ok := dirspool.Schema.Field(name); !ok {
			t.Errorf("dirspool.Allowed describes %q, which is not a field", name)
		}
	}
	for name := range referenceExamples {
		if _, ok := dirspool.Schema.Field(name); !ok {
			t.Errorf("referenceExamples sets %q, which is not a field", name)
		}
	}

	// Every example must be accepted and mean what the page says.
	for _, f := range dirspool.Schema.Fields {
		ex := page.Example(f)
		u := referenceURL(f, ex)
		fromURL, err := parseURL(e, u)
		if err != nil {
			t.Errorf("example for %s: %s: %v", f.Name, u, err)
			continue
		}
		m := map[string]any{"path": exampleSpool, f.Name: ex}
		v, err := dirspool.Schema.DecodeMap(m)
		if err != nil {
			t.Errorf("example for %s: %v", f.Name, err)
			continue
		}
		fromMap, err := dirspool.Decode(e, v)
		if err != nil {
			t.Errorf("example for %s: %v", f.Name, err)
			continue
		}
		if !reflect.DeepEqual(fromURL, fromMap) {
			t.Errorf("example for %s: URL gives %+v, field map %+v", f.Name, fromURL, fromMap)
		}
		if f.Name != "path" && !v.IsSet(f.Name) {
			t.Errorf("example for %s does not set it", f.Name)
		}
	}

	// Every refused setting must be refused, naming the field.
	for _, r := range refusedSettings {
		u := spoolURL(r.setting)
		_, err := parseURL(e, u)
		var oe *option.Error
		if !errors.As(err, &oe) || !errors.Is(err, option.ErrInvalid) {
			t.Errorf("%s: err = %v, want an *option.Error", u, err)
			continue
		}
		if oe.Field != r.field {
			t.Errorf("%s: error names %q, want %q: %v", u, oe.Field, r.field, err)
		}
		page.Refused = append(page.Refused, schemadoc.Refusal{Field: r.field, Setting: r.setting, Err: oe.Error()})
	}

	checkPage(t, referencePage, schemadoc.Markdown(page))
}

// checkPage compares the generated part of the page at path with generated,
// or rewrites it with -update.
func checkPage(t *testing.T, path, generated string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (the page must exist with the markers %s and %s)", err, schemadoc.Begin, schemadoc.End)
	}
	want, err := schemadoc.Splice(string(old), generated)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if want == string(old) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
		return
	}
	t.Errorf("%s is out of date with dirspool.Schema; run: go test ./bridge/connectors/dirspool -run TestReferencePage -update\nfirst difference:\n%s",
		path, firstDiff(string(old), want))
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
			return "line " + strconv.Itoa(i+1) + "\n  page: " + gl + "\n  want: " + wl
		}
	}
	return "(none)"
}
