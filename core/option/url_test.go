package option_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/mqb-project/mqb/core/option"
)

func TestFromURL(t *testing.T) {
	tests := []struct {
		raw     string
		rule    option.PathRule
		want    map[string]any
		field   string // the field the error names; "" = no error
		errPart string
	}{
		{"dir-spool:///var/spool/a?fsync=batch", option.PathAbsolute, map[string]any{"path": "/var/spool/a", "fsync": "batch"}, "", ""},
		{"file:///data/x.jsonl", option.PathAbsolute, map[string]any{"path": "/data/x.jsonl"}, "", ""},
		{"spool://var/spool/a", option.PathAbsolute, nil, "path", "write three slashes, as in spool:///var/spool/orders"},
		{"dir-spool:relative", option.PathAbsolute, nil, "path", "must be an absolute path, as in dir-spool:///var/spool/orders"},
		{"dir-spool:///a?path=/b", option.PathAbsolute, nil, "path", "comes from the URL path"},
		{"dir-spool:///a?fsync=none&fsync=chunk", option.PathAbsolute, nil, "fsync", "given more than once"},
		{"stdin://?format=csv", option.PathNone, map[string]any{"format": "csv"}, "", ""},
		{"stdin:///", option.PathNone, map[string]any{}, "", ""},
		{"stdin://host", option.PathNone, nil, "url", "takes no host or path"},
		{"stdout:///x", option.PathNone, nil, "url", "takes no host or path"},
		{"mqtt://u:p@host:1883/ignored?topic=a", option.PathOwn, map[string]any{"topic": "a"}, "", ""},
		{"mqtt://host?topic=%zz", option.PathOwn, nil, "url", "% escape"},
		{"mqtt://host?topic=a;qos=1", option.PathOwn, nil, "url", "a ; must be written %3B"},
		{"file:///x?delimiter=%3B", option.PathAbsolute, map[string]any{"path": "/x", "delimiter": ";"}, "", ""},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.raw)
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		got, err := option.FromURL(u, tt.rule, "/var/spool/orders")
		if tt.field == "" {
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: got %v, %v; want %v", tt.raw, got, err, tt.want)
			}
			continue
		}
		var oe *option.Error
		if !errors.As(err, &oe) || !errors.Is(err, option.ErrInvalid) {
			t.Errorf("%s: err = %v, want an *option.Error", tt.raw, err)
			continue
		}
		if oe.Field != tt.field || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("%s: err = %v, want field %q and %q", tt.raw, err, tt.field, tt.errPart)
		}
	}
}

// A malformed query never quotes itself: it may hold a password.
func TestFromURLMalformedQueryHidesValues(t *testing.T) {
	for _, raw := range []string{"mqtt://h?password=SECRET%zz", "nats://h?token=SECRET;x=1", "postgres://h/db?password=SECRET%"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		_, err = option.FromURL(u, option.PathOwn, "")
		if err == nil {
			t.Errorf("%s: accepted", raw)
		} else if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: error quotes the secret: %v", raw, err)
		}
	}
}

func TestDecodeMap(t *testing.T) {
	s := &option.Schema{Name: "demo", Fields: []option.Field{
		{Name: "mode", Type: option.TypeEnum, Default: "a", Enum: []string{"a", "b"}},
		{Name: "n", Type: option.TypeInt, Default: "1", Min: 1, Max: 9},
		{Name: "perm", Type: option.TypeFileMode, Default: "0600"},
	}}
	v, err := s.DecodeMap(map[string]any{"n": "3", "perm": 0o640})
	if err != nil {
		t.Fatal(err)
	}
	if v.String("mode") != "a" || v.Int("n") != 3 || v.FileMode("perm") != 0o640 || v.IsSet("mode") || !v.IsSet("n") {
		t.Errorf("decoded %v %v %o", v.String("mode"), v.Int("n"), v.FileMode("perm"))
	}
	for _, tt := range []struct {
		m    map[string]any
		want string
	}{
		{map[string]any{"mode": "c"}, `option "mode" = "c": is not an allowed value (valid: a, b)`},
		{map[string]any{"n": 10}, `option "n" = "10": must be from 1 to 9`},
		{map[string]any{"nn": 1}, `option "nn": unknown demo option (valid: mode, n, perm)`},
		{map[string]any{"perm": "0999"}, `option "perm" = "0999": expects an octal mode such as 0600`},
	} {
		if _, err := s.DecodeMap(tt.m); err == nil || err.Error() != tt.want {
			t.Errorf("%v: err = %v, want %s", tt.m, err, tt.want)
		}
	}
}
