package core

import (
	"encoding/json"
	"maps"
	"testing"
)

// referenceSidecar is the sidecar as encoding/json writes it.
func referenceSidecar(t testing.TB, id string, md map[string]string) []byte {
	t.Helper()
	if md == nil {
		md = map[string]string{}
	}
	b, err := json.MarshalIndent(sidecar{MessageID: id, Metadata: md}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

var sidecarCases = []struct {
	id string
	md map[string]string
}{
	{"0195f4a0c7d77801a2b3c4d5e6f78901", map[string]string{"content_type": "application/json", "source": "orders"}},
	{"x", nil},
	{"", map[string]string{}},
	{"id", map[string]string{"b": "2", "a": "1", "": ""}},
	{"<&>", map[string]string{"q\"uote": "back\\slash", "ctl\x01\n\t\b\f": "x"}},
	{"caf\u00e9 \u2028 \u2029", map[string]string{"\u65e5\u672c": "\U0001F600", "bad\xffutf8": "\xc3"}},
}

func TestEncodeSidecarMatchesEncodingJSON(t *testing.T) {
	for _, c := range sidecarCases {
		got, want := encodeSidecar(c.id, c.md), referenceSidecar(t, c.id, c.md)
		if string(got) != string(want) {
			t.Errorf("encodeSidecar(%q, %q):\n%s\nwant\n%s", c.id, c.md, got, want)
		}
	}
}

func TestDecodeSidecarFastAgrees(t *testing.T) {
	inputs := []string{
		`{}`, ` { } `, `{"message_id": null, "metadata": null}`, `{"metadata": {"a": "b"}, "message_id": "i"}`,
		`{"metadata": {"a": "1", "a": "2"}}`, `{"message_id": "a", "message_id": "b"}`, `{"metadata": {"a": "b"}, "extra": true}`,
		`{"message_id": "\u0041"}`, `{"message_id": "caf` + "\xff" + `"}`, `{"message_id": 5}`, `{"metadata": {"a": 1}}`,
		`{"metadata": []}`, `{} {}`, `{"message_id": "a"`, `{"message_id": "a",}`, `{"Message_ID": "a"}`, `nul`, `null`, ``,
	}
	for _, c := range sidecarCases {
		inputs = append(inputs, string(referenceSidecar(t, c.id, c.md)))
	}
	for _, in := range inputs {
		checkDecodeAgrees(t, []byte(in))
	}
}

func checkDecodeAgrees(t *testing.T, b []byte) {
	t.Helper()
	id, md, err := decodeSidecar(b, nil)
	wid, wmd, werr := decodeSidecarJSON(b)
	if (err != nil) != (werr != nil) || id != wid || !maps.Equal(md, wmd) {
		t.Errorf("decodeSidecar(%q) = %q %v %v; encoding/json path gives %q %v %v", b, id, md, err, wid, wmd, werr)
	}
}

func FuzzSidecar(f *testing.F) {
	for _, c := range sidecarCases {
		for k, v := range c.md {
			f.Add(c.id, k, v)
		}
	}
	f.Fuzz(func(t *testing.T, id, k, v string) {
		md := map[string]string{k: v, "fixed": "value"}
		b := encodeSidecar(id, md)
		if want := referenceSidecar(t, id, md); string(b) != string(want) {
			t.Fatalf("encodeSidecar(%q, %q):\n%s\nwant\n%s", id, md, b, want)
		}
		checkDecodeAgrees(t, b)
		checkDecodeAgrees(t, []byte(id))
	})
}
