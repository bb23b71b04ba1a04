package option

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"atomic", "fsync", "emit_done", "shard_depth", "shard_width", "stop_on_done", "naming_pattern"}
	tests := []struct {
		name, given string
		choices     []string
		want        string
	}{
		{"one letter dropped", "fsnc", names, "fsync"},
		{"two letters swapped", "fsycn", names, "fsync"},
		{"dash for underscore", "emit-done", names, "emit_done"},
		{"case", "Shard_Depth", names, "shard_depth"},
		{"two edits in a long name", "shrd_dpth", names, "shard_depth"},
		{"nothing near", "colour", names, ""},
		{"short names allow one edit only", "fx", []string{"fsync", "ab"}, ""},
		{"scheme", "dir_spool", []string{"dir-spool", "dropzone", "file"}, "dir-spool"},
		{"enum value", "bach", []string{"chunk", "batch", "none"}, "batch"},
		{"no choices", "x", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Closest(tt.given, tt.choices); got != tt.want {
				t.Errorf("Closest(%q) = %q, want %q", tt.given, got, tt.want)
			}
		})
	}
}

func TestErrorSuggests(t *testing.T) {
	s := &Schema{Name: "demo", Fields: []Field{
		{Name: "fsync", Type: TypeEnum, Enum: []string{"chunk", "batch", "none"}, Default: "chunk"},
	}}
	for _, tt := range []struct{ query, want string }{
		{"fsnc=batch", `option "fsnc": unknown demo option (valid: fsync); did you mean "fsync"?`},
		{"fsync=bach", `did you mean "batch"?`},
	} {
		k, v, _ := strings.Cut(tt.query, "=")
		_, err := s.DecodeMap(map[string]any{k: v})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %s", tt.query, err, tt.want)
		}
	}
}
