package core

import (
	"encoding/json"
	"errors"
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
		Backend: "os", FileMode: 0o600, DirMode: 0o700, Bounds: Bounds{WhenFull: WhenFullBlock},
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
	fromURL, err := ParseURL("dir-spool:///p?shard_depth=2&fsync=batch&atomic=false&poll_interval=1s&file_mode=0640")
	if err != nil {
		t.Fatal(err)
	}
	// As a YAML decoder hands it over: ints, bools, and 0640 read as an octal int.
	v, err := SpoolSchema.DecodeMap(map[string]any{"path": "/p", "shard_depth": 2, "fsync": "batch", "atomic": false, "poll_interval": "1s", "file_mode": 0o640})
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
		{"dir-spool:///p?shard_dept=2", "shard_dept", "valid: atomic, backend"},
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
		{"dir-spool:///p?file_mode=0999", "file_mode", "octal"},
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
	id, md, err := decodeSidecar(b)
	if err != nil || id != "x" || len(md) != 0 {
		t.Fatalf("decode = %q %v %v", id, md, err)
	}
	for _, bad := range []string{``, `[]`, `{"message_id": 5}`, `{"metadata": {"a": 1}}`, `{"metadata": []}`, `{} {}`, `{"message_id": "a"`} {
		if _, _, err := decodeSidecar([]byte(bad)); err == nil {
			t.Errorf("decodeSidecar(%q) accepted", bad)
		}
	}
	if id, md, err := decodeSidecar([]byte(`{"metadata": {"a": "b"}, "extra": true}`)); err != nil || id != "" || md["a"] != "b" {
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

// Bounds set from Go are validated as they are from a URL.
func TestBoundsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Bounds
		field string
	}{
		{"negative max_messages", Bounds{MaxMessages: -1}, "max_messages"},
		{"negative max_bytes", Bounds{MaxBytes: -5}, "max_bytes"},
		{"negative min_free_bytes", Bounds{MinFreeBytes: -5}, "min_free_bytes"},
		{"unknown when_full", Bounds{MaxMessages: 1, WhenFull: "sometimes"}, "when_full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions("/spool")
			o.Bounds = tc.b
			_, err := OpenProducer(nil, o)
			var oe *option.Error
			if !errors.As(err, &oe) || oe.Field != tc.field {
				t.Fatalf("OpenProducer = %v, want an option error for %s", err, tc.field)
			}
		})
	}
}
