package core

import (
	"errors"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/mqb-project/mqb/core/option"
)

func TestLayoutNames(t *testing.T) {
	tests := []struct {
		name                 string
		pattern              string
		depth, width         int
		payExt, metaExt      string
		seq                  uint64
		wantPayload, wantDir string
		wantSidecar          string
	}{
		{"default", "{seq:09}", 0, 3, ".bin", ".json", 0, "000000000.bin", ".", "000000000.json"},
		{"default one", "{seq:09}", 0, 3, ".bin", ".json", 1, "000000001.bin", ".", "000000001.json"},
		{"seed shard example", "{seq:09}", 2, 3, ".bin", ".json", 1, "000/000/001.bin", "000/000", "000/000/001.json"},
		{"seed telemetry example", "{seq:012}", 2, 3, ".bin", ".json", 1, "000/000/000001.bin", "000/000", "000/000/000001.json"},
		{"shard boundary", "{seq:09}", 2, 3, ".bin", ".json", 123456789, "123/456/789.bin", "123/456", "123/456/789.json"},
		{"literal suffix", "{seq:06}-orders", 0, 3, ".jsonl", ".meta", 42, "000042-orders.jsonl", ".", "000042-orders.meta"},
		{"no sidecars", "{seq:04}", 1, 2, ".bin", "", 7, "00/07.bin", "00", ""},
		{"deep narrow", "{seq:05}", 4, 1, ".bin", ".json", 12345, "1/2/3/4/5.bin", "1/2/3/4", "1/2/3/4/5.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLayout(tt.pattern, tt.depth, tt.width, tt.payExt, tt.metaExt)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Payload(tt.seq); got != tt.wantPayload {
				t.Errorf("Payload(%d) = %q, want %q", tt.seq, got, tt.wantPayload)
			}
			if got := l.Dir(tt.seq); got != tt.wantDir {
				t.Errorf("Dir(%d) = %q, want %q", tt.seq, got, tt.wantDir)
			}
			if got := l.Sidecar(tt.seq); got != tt.wantSidecar {
				t.Errorf("Sidecar(%d) = %q, want %q", tt.seq, got, tt.wantSidecar)
			}
			if got := l.SidecarOf(tt.wantPayload); got != tt.wantSidecar {
				t.Errorf("SidecarOf(%q) = %q, want %q", tt.wantPayload, got, tt.wantSidecar)
			}
			for _, c := range []struct {
				name string
				kind ChunkKind
			}{{tt.wantPayload, KindPayload}, {tt.wantSidecar, KindSidecar}, {tt.wantPayload + ".tmp", KindPayloadTmp}, {tt.wantSidecar + ".tmp", KindSidecarTmp}} {
				if c.name == "" || c.name == ".tmp" {
					continue
				}
				seq, kind, ok := l.Parse(c.name)
				if !ok || seq != tt.seq || kind != c.kind {
					t.Errorf("Parse(%q) = %d, %d, %v; want %d, %d, true", c.name, seq, kind, ok, tt.seq, c.kind)
				}
			}
		})
	}
}

func TestLayoutParseRejects(t *testing.T) {
	l, err := NewLayout("{seq:09}", 2, 3, ".bin", ".json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"PRODUCER", "DONE", "000/000/01.bin", "000/000/0001.bin", "000/000/00a.bin", "000/000/001.txt",
		"000/001.bin", "0000/000/001.bin", "000/000/000/001.bin", "001.bin", "000/00x/001.bin", "000/000/.bin",
	} {
		if seq, kind, ok := l.Parse(name); ok {
			t.Errorf("Parse(%q) = %d, %d, true; want not a chunk", name, seq, kind)
		}
	}
	flat, _ := NewLayout("{seq:03}", 0, 3, ".bin", ".json")
	if _, _, ok := flat.Parse("sub/001.bin"); ok {
		t.Error("a flat layout must not accept names in subdirectories")
	}
}

func TestLayoutOrderIsSequenceOrder(t *testing.T) {
	l, _ := NewLayout("{seq:06}x", 2, 2, ".bin", ".json")
	prev := ""
	for seq := uint64(0); seq < 20000; seq += 7 {
		name := l.Payload(seq)
		if name <= prev {
			t.Fatalf("lexical order broken: %q after %q", name, prev)
		}
		prev = name
	}
}

func TestLayoutInvalid(t *testing.T) {
	tests := []struct {
		name         string
		pattern      string
		depth, width int
		pay, meta    string
		wantField    string
	}{
		{"no token", "orders-{seq:09}", 0, 3, ".bin", ".json", "naming_pattern"},
		{"unclosed", "{seq:09", 0, 3, ".bin", ".json", "naming_pattern"},
		{"zero digits", "{seq:0}", 0, 3, ".bin", ".json", "naming_pattern"},
		{"too many digits", "{seq:20}", 0, 3, ".bin", ".json", "naming_pattern"},
		{"slash", "{seq:09}/x", 0, 3, ".bin", ".json", "naming_pattern"},
		{"dotdot", "{seq:09}..x", 0, 3, ".bin", ".json", "naming_pattern"},
		{"second token", "{seq:09}{seq:02}", 0, 3, ".bin", ".json", "naming_pattern"},
		{"shards eat all digits", "{seq:06}", 2, 3, ".bin", ".json", "shard_depth"},
		{"negative depth", "{seq:09}", -1, 3, ".bin", ".json", "shard_depth"},
		{"zero width", "{seq:09}", 2, 0, ".bin", ".json", "shard_width"},
		{"empty payload ext", "{seq:09}", 0, 3, "", ".json", "payload_extension"},
		{"ext without dot", "{seq:09}", 0, 3, "bin", ".json", "payload_extension"},
		{"ext with slash", "{seq:09}", 0, 3, ".b/in", ".json", "payload_extension"},
		{"tmp ext", "{seq:09}", 0, 3, ".tmp", ".json", "payload_extension"},
		{"same ext", "{seq:09}", 0, 3, ".json", ".json", "metadata_extension"},
		{"suffix ext", "{seq:09}", 0, 3, ".x.json", ".json", "metadata_extension"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLayout(tt.pattern, tt.depth, tt.width, tt.pay, tt.meta)
			var oe *option.Error
			if !errors.As(err, &oe) || !errors.Is(err, option.ErrInvalid) {
				t.Fatalf("err = %v, want *option.Error", err)
			}
			if oe.Field != tt.wantField {
				t.Errorf("field = %q, want %q (%v)", oe.Field, tt.wantField, err)
			}
		})
	}
}

func TestMaxSeq(t *testing.T) {
	l, _ := NewLayout("{seq:03}", 0, 3, ".bin", "")
	if l.MaxSeq() != 999 {
		t.Fatalf("MaxSeq = %d", l.MaxSeq())
	}
	l, _ = NewLayout("{seq:19}", 0, 3, ".bin", "")
	if l.MaxSeq() != 9999999999999999999 || !strings.HasPrefix(l.Payload(l.MaxSeq()), "9999999999999999999") {
		t.Fatalf("MaxSeq = %d, name %s", l.MaxSeq(), l.Payload(l.MaxSeq()))
	}
}

func TestChunkNamesAgree(t *testing.T) {
	for _, tc := range []struct {
		pattern      string
		depth, width int
		meta         string
	}{
		{"{seq:09}", 0, 3, ".json"}, {"{seq:09}", 2, 3, ".json"}, {"{seq:09}", 1, 4, ""},
		{"{seq:012}-part", 3, 2, ".meta"}, {"{seq:1}", 0, 1, ".json"}, {"{seq:19}", 6, 3, ".json"},
	} {
		l, err := NewLayout(tc.pattern, tc.depth, tc.width, ".bin", tc.meta)
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range []uint64{0, 1, 7, 123456, l.MaxSeq()} {
			for _, atomic := range []bool{true, false} {
				dir, pay, payTmp, side, sideTmp := l.chunkNames(seq, atomic)
				wantTmp := func(s string) string {
					if atomic && s != "" {
						return s + TmpSuffix
					}
					return s
				}
				if dir != l.Dir(seq) || pay != l.Payload(seq) || side != l.Sidecar(seq) ||
					payTmp != wantTmp(l.Payload(seq)) || sideTmp != wantTmp(l.Sidecar(seq)) {
					t.Errorf("%+v seq %d atomic %v: chunkNames = %q %q %q %q %q; want dir %q payload %q sidecar %q",
						tc, seq, atomic, dir, pay, payTmp, side, sideTmp, l.Dir(seq), l.Payload(seq), l.Sidecar(seq))
				}
			}
		}
	}
}

func TestJoinPathAsPathJoin(t *testing.T) {
	for _, dir := range []string{".", "", "a", "a/b", "000/001", "a/", "./a", "a//b"} {
		for _, name := range []string{"x", "000000001.bin", ".", "..", "", "b/c", "..x", ".x"} {
			want := path.Join(dir, name)
			if dir == "." || dir == "" {
				want = name
			}
			if got := joinPath(dir, name); got != want {
				t.Errorf("joinPath(%q, %q) = %q; path.Join gives %q", dir, name, got, want)
			}
		}
	}
}

// TestParseLeafAsBefore checks the allocation-free number reading of
// ParseLeaf against the string-building one it replaced, on names of every
// shape, odd directories included.
func TestParseLeafAsBefore(t *testing.T) {
	reference := func(l *Layout, dir, digits string) (uint64, bool) {
		if l.depth > 0 {
			prefix := strings.ReplaceAll(dir, "/", "")
			if len(prefix) != l.depth*l.width || !allDigits(prefix) || strings.Count(dir, "/") != l.depth-1 {
				return 0, false
			}
			digits = prefix + digits
		} else if dir != "." {
			return 0, false
		}
		v, err := strconv.ParseUint(digits, 10, 64)
		return v, err == nil
	}
	layouts := []struct {
		pattern      string
		depth, width int
	}{{"{seq:09}", 0, 3}, {"{seq:09}", 2, 3}, {"{seq:05}", 4, 1}, {"{seq:019}", 2, 3}, {"{seq:019}", 0, 3}}
	dirs := []string{".", "000", "000/001", "00/0001", "/000001", "000/00a", "000//01", "1/2/3/4", "123/456/789", "999/999", "184/467"}
	leaves := []string{"000000001", "001", "1", "9999999999999999999", "0000000000000000001", "9999999999999", "99999999999999", "0a1", "5", "00000000000000000001"}
	for _, lt := range layouts {
		l, err := NewLayout(lt.pattern, lt.depth, lt.width, ".bin", ".json")
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range dirs {
			for _, leaf := range leaves {
				for _, ext := range []string{".bin", ".json.tmp"} {
					seq, _, ok := l.ParseLeaf(dir, leaf+ext)
					if len(leaf) != l.leafDigits {
						if ok {
							t.Errorf("%s depth %d: ParseLeaf(%q, %q) accepted a leaf of the wrong width", lt.pattern, lt.depth, dir, leaf+ext)
						}
						continue
					}
					want, wok := reference(l, dir, leaf)
					if ok != wok || seq != want {
						t.Errorf("%s depth %d: ParseLeaf(%q, %q) = %d %v; before: %d %v", lt.pattern, lt.depth, dir, leaf+ext, seq, ok, want, wok)
					}
				}
			}
		}
	}
}
