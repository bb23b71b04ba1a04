package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

func TestParseURLDefaults(t *testing.T) {
	o, err := ParseURL("dir-spool:///var/spool/orders")
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Path: "/var/spool/orders", NamingPattern: "{seq:09}", PayloadExt: ".bin", MetadataExt: ".json",
		ShardDepth: 0, ShardWidth: 3, Fsync: FsyncChunk, Atomic: true, EmitDone: EmitNever,
		DrainOnRead: true, Claims: true, BadSidecar: BadSidecarFail, PollInterval: 250 * time.Millisecond,
		Bounds: Bounds{WhenFull: WhenFullBlock},
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	if d := DefaultOptions("/var/spool/orders"); !reflect.DeepEqual(d, want) {
		t.Fatalf("DefaultOptions = %+v", d)
	}
}

func TestParseURLSeedExamples(t *testing.T) {
	for _, raw := range []string{
		"dir-spool:///var/spool/orders?emit_done=success",
		"dir-spool:///var/spool/orders?stop_on_done=true",
		"dir-spool:///var/spool/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3",
		"spool:///var/spool/orders",
		"dirspool:///var/spool/orders?metadata_extension=",
	} {
		if _, err := ParseURL(raw); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	o, _ := ParseURL("dir-spool:///var/spool/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3")
	l, _ := o.Layout()
	if got := l.Payload(1); got != "000/000/000001.bin" {
		t.Fatalf("telemetry layout: %s", got)
	}
	o, _ = ParseURL("dirspool:///var/spool/orders?metadata_extension=")
	if o.MetadataExt != "" {
		t.Fatalf("empty metadata_extension not kept: %q", o.MetadataExt)
	}
}

func TestURLAndMapAgree(t *testing.T) {
	fromURL, err := ParseURL("dir-spool:///p?shard_depth=2&fsync=batch&atomic=false&poll_interval=1s")
	if err != nil {
		t.Fatal(err)
	}
	// As a YAML decoder hands it over: ints, bools, and 0640 read as an octal int.
	v, err := SpoolSchema.DecodeMap(map[string]any{"path": "/p", "shard_depth": 2, "fsync": "batch", "atomic": false, "poll_interval": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	fromMap, err := OptionsFromValues(v)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromURL, fromMap) {
		t.Fatalf("URL %+v\nmap %+v", fromURL, fromMap)
	}
}

func TestBadOptions(t *testing.T) {
	tests := []struct {
		url       string
		wantField string
		wantText  string
	}{
		{"dir-spool:///p?shard_dept=2", "shard_dept", "valid: atomic, bad_sidecar"},
		{"dir-spool:///p?fsync=always", "fsync", "valid: none, batch, chunk"},
		{"dir-spool:///p?shard_depth=two", "shard_depth", "whole number"},
		{"dir-spool:///p?atomic=yes", "atomic", "true or false"},
		{"dir-spool:///p?poll_interval=5", "poll_interval", "duration"},
		{"dir-spool:///p?path=/q", "path", "URL path"},
		{"dir-spool://relative/p", "path", "three slashes"},
		{"dir-spool:relative", "path", "absolute"},
		{"dir-spool:///p?fsync=none&fsync=chunk", "fsync", "more than once"},
		{"file:///p", "scheme", "dir-spool, spool, dirspool"},
		{"dir-spool:///p?naming_pattern=x{seq:09}", "naming_pattern", "{seq:N}"},
		{"dir-spool:///p?poll_interval=-1s", "poll_interval", "duration"},
		{"dir-spool:///p?fsync=%zz", "url", "% escape"},
		{"dir-spool:///p?fsync=none;atomic=false", "url", "%3B"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := ParseURL(tt.url)
			var oe *option.Error
			if !errors.As(err, &oe) || !errors.Is(err, option.ErrInvalid) {
				t.Fatalf("err = %v, want *option.Error", err)
			}
			if oe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("err = %q (field %q), want field %q mentioning %q", err, oe.Field, tt.wantField, tt.wantText)
			}
		})
	}
}

func TestSidecarShape(t *testing.T) {
	b := encodeSidecar("0195f4a0c7d77801a2b3c4d5e6f78901", map[string]string{"content_type": "application/json", "source": "orders"})
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"message_id": "0195f4a0c7d77801a2b3c4d5e6f78901",
		"metadata": map[string]any{"content_type": "application/json", "source": "orders"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sidecar = %s", b)
	}
	b = encodeSidecar("x", nil)
	if !strings.Contains(string(b), `"metadata": {}`) {
		t.Fatalf("empty metadata must be an object: %s", b)
	}
	id, md, err := decodeSidecar(b, nil)
	if err != nil || id != "x" || len(md) != 0 {
		t.Fatalf("decode = %q %v %v", id, md, err)
	}
	for _, bad := range []string{``, `[]`, `{"message_id": 5}`, `{"metadata": {"a": 1}}`, `{"metadata": []}`, `{} {}`, `{"message_id": "a"`} {
		if _, _, err := decodeSidecar([]byte(bad), nil); err == nil {
			t.Errorf("decodeSidecar(%q) accepted", bad)
		}
	}
	if id, md, err := decodeSidecar([]byte(`{"metadata": {"a": "b"}, "extra": true}`), nil); err != nil || id != "" || md["a"] != "b" {
		t.Errorf("lenient decode = %q %v %v", id, md, err)
	}
}

func TestNewMessageID(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := NewMessageID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("id %q is not 32 lowercase hex digits", id)
		}
		if id[12] != '7' || !strings.ContainsRune("89ab", rune(id[16])) {
			t.Fatalf("id %q lacks UUIDv7 version/variant", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		if id[:12] < prev {
			t.Fatalf("timestamp went back: %q after %q", id[:12], prev)
		}
		seen[id], prev = true, id[:12]
	}
}

// TestStructOptionsRefusedLikeURL checks that Options built in Go are held
// to the option table: OpenProducer and OpenConsumer refuse every value the
// URL refuses, with the same error.
func TestStructOptionsRefusedLikeURL(t *testing.T) {
	tests := []struct {
		query string
		set   func(*Options)
	}{
		{"fsync=sometimes", func(o *Options) { o.Fsync = "sometimes" }},
		{"fsync=", func(o *Options) { o.Fsync = "" }},
		{"emit_done=later", func(o *Options) { o.EmitDone = "later" }},
		{"bad_sidecar=skip", func(o *Options) { o.BadSidecar = "skip" }},
		{"shard_depth=19", func(o *Options) { o.ShardDepth = 19 }},
		{"shard_depth=-1", func(o *Options) { o.ShardDepth = -1 }},
		{"shard_width=0", func(o *Options) { o.ShardWidth = 0 }},
		{"shard_width=19", func(o *Options) { o.ShardWidth = 19 }},
		{"poll_interval=-1s", func(o *Options) { o.PollInterval = -time.Second }},
		{"poll_interval=0s", func(o *Options) { o.PollInterval = 0 }},
		{"naming_pattern=x{seq:09}", func(o *Options) { o.NamingPattern = "x{seq:09}" }},
		{"payload_extension=bin", func(o *Options) { o.PayloadExt = "bin" }},
		{"max_messages=-1", func(o *Options) { o.Bounds.MaxMessages = -1 }},
		{"max_bytes=-5", func(o *Options) { o.Bounds.MaxBytes = -5 }},
		{"when_full=sometimes", func(o *Options) { o.Bounds.WhenFull = "sometimes" }},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			_, want := ParseURL("dir-spool:///p?" + tt.query)
			if want == nil {
				t.Fatalf("the URL accepts %s", tt.query)
			}
			o := DefaultOptions("/p")
			tt.set(&o)
			if err := o.Validate(); err == nil || err.Error() != want.Error() {
				t.Errorf("Validate: %v, want %v", err, want)
			}
			// Options are checked before the filesystem is touched, so no
			// FS is needed: an accepted option would reach the nil FS.
			if err := refusedBeforeFS(func() error { _, err := OpenProducer(nil, o); return err }); err == nil || err.Error() != want.Error() {
				t.Errorf("OpenProducer: %v, want %v", err, want)
			}
			if err := refusedBeforeFS(func() error { _, err := OpenConsumer(nil, o); return err }); err == nil || err.Error() != want.Error() {
				t.Errorf("OpenConsumer: %v, want %v", err, want)
			}
		})
	}
}

// TestOptionsFieldsRoundTrip checks that Validate sees every field of the
// table, each as Options holds it.
func TestOptionsFieldsRoundTrip(t *testing.T) {
	o, err := ParseURL("dir-spool:///p?naming_pattern={seq:06}x&payload_extension=.b&metadata_extension=&shard_depth=1&shard_width=2" +
		"&fsync=none&atomic=false&emit_done=always&stop_on_done=true&drain_on_read=false&claims=false&bad_sidecar=deliver&poll_interval=3s" +
		"&max_messages=7&max_bytes=1KiB&min_free_bytes=2MiB&when_full=fail")
	if err != nil {
		t.Fatal(err)
	}
	m := o.fields()
	for _, f := range SpoolSchema.Fields {
		if _, ok := m[f.Name]; !ok {
			t.Errorf("Options.fields misses %s: Validate would not check it", f.Name)
		}
	}
	v, err := SpoolSchema.DecodeMap(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := OptionsFromValues(v)
	if err != nil || !reflect.DeepEqual(back, o) {
		t.Errorf("round trip: %+v, %v\nwant %+v", back, err, o)
	}
}

// refusedBeforeFS runs open, which is given a nil FS, and turns the panic
// of an open that got past its option checks into an error.
func refusedBeforeFS(open func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("accepted the options and used the filesystem: %v", r)
		}
	}()
	return open()
}
