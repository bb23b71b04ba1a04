package records

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

func readAll(t *testing.T, format, input string) ([]string, []int, error) {
	t.Helper()
	rd := NewReader(strings.NewReader(input), format, "/data/in", ',')
	var out []string
	var lines []int
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, lines, nil
		}
		if err != nil {
			return out, lines, err
		}
		out = append(out, string(rec.Payload))
		lines = append(lines, rec.Line)
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name, format, input string
		want                []string
		wantLines           []int
		wantErr             string
	}{
		{"json kept byte for byte", JSON, "{\"a\": 1,  \"b\":[1,2]}\n\n[1]\r\n", []string{`{"a": 1,  "b":[1,2]}`, `[1]`}, []int{1, 3}, ""},
		{"json last line without newline", JSON, "1\n\"x\"", []string{"1", `"x"`}, []int{1, 2}, ""},
		{"json malformed names file and line", JSON, "{}\n{\"a\":\n", []string{"{}"}, []int{1}, "/data/in:2: not a JSON document"},
		{"json two documents on a line", JSON, "{} {}\n", nil, nil, "/data/in:1: not a JSON document"},
		{"lines", Lines, "a\n\nb c\n", []string{"a", "", "b c"}, []int{1, 2, 3}, ""},
		{"lines empty input", Lines, "", nil, nil, ""},
		{"raw", Raw, "a\nb", []string{"a\nb"}, []int{0}, ""},
		{"csv to JSON objects in header order", CSV, "id,name,note\n1,Ann,\"a, \"\"b\"\"\"\n2,<Bo>,\"two\nlines\"\n",
			[]string{`{"id":"1","name":"Ann","note":"a, \"b\""}`, `{"id":"2","name":"<Bo>","note":"two\nlines"}`}, []int{2, 3}, ""},
		{"csv header only", CSV, "a,b\n", nil, nil, ""},
		{"csv byte order mark", CSV, "\xef\xbb\xbfa\n1\n", []string{`{"a":"1"}`}, []int{2}, ""},
		{"csv wrong field count", CSV, "a,b\n1,2\n3\n", []string{`{"a":"1","b":"2"}`}, []int{2}, "/data/in:3: record has a different number of fields than the 2-column header"},
		{"csv duplicate header", CSV, "a,a\n1,2\n", nil, nil, `/data/in:1: header names column "a" twice`},
		{"csv bad quote", CSV, "a\n\"x\n", nil, nil, "/data/in:2:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, lines, err := readAll(t, tc.format, tc.input)
			assert.Equal(t, tc.want, got)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, bridge.ErrMalformedInput)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantLines, lines)
		})
	}
}

func TestEncoder(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		header       []string
		payloads     []string
		want         string
		wantErr      string
	}{
		{"json as is", JSON, nil, []string{`{"a": 1}`, `2`}, "{\"a\": 1}\n2\n", ""},
		{"json compacted when multi-line", JSON, nil, []string{"{\n \"a\": 1\n}"}, "{\"a\":1}\n", ""},
		{"json refuses non-JSON", JSON, nil, []string{"nope"}, "", "message id0: payload is not a JSON document"},
		{"lines", Lines, nil, []string{"a", ""}, "a\n\n", ""},
		{"lines refuse a line break", Lines, nil, []string{"a\nb"}, "", "line break"},
		{"raw concatenates", Raw, nil, []string{"a", "b"}, "ab", ""},
		{"csv header from first record", CSV, nil, []string{`{"id":"1","name":"Ann, A."}`, `{"name":"Bo","id":2}`}, "id,name\n1,\"Ann, A.\"\n2,Bo\n", ""},
		{"csv appends under an existing header", CSV, []string{"id", "name"}, []string{`{"name":"Cy"}`}, ",Cy\n", ""},
		{"csv unknown column", CSV, []string{"id"}, []string{`{"x":"1"}`}, "", `field "x" is not a column`},
		{"csv not an object", CSV, nil, []string{`[1]`}, "", "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := NewEncoder(tc.format, ',', tc.header)
			ps := make([][]byte, len(tc.payloads))
			ids := make([]string, len(tc.payloads))
			for i, p := range tc.payloads {
				ps[i], ids[i] = []byte(p), "id"+string(rune('0'+i))
			}
			b, err := enc.Encode(ps, ids)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, bridge.ErrPermanent)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(b.Data))
		})
	}
}

func TestEncoderCommitWritesHeaderOnce(t *testing.T) {
	enc := NewEncoder(CSV, ',', nil)
	b, err := enc.Encode([][]byte{[]byte(`{"a":"1"}`)}, []string{"x"})
	require.NoError(t, err)
	// Not committed (the write failed): the header is due again.
	b, err = enc.Encode([][]byte{[]byte(`{"a":"1"}`)}, []string{"x"})
	require.NoError(t, err)
	assert.Equal(t, "a\n1\n", string(b.Data))
	b.Commit()
	b, err = enc.Encode([][]byte{[]byte(`{"a":"2"}`)}, []string{"x"})
	require.NoError(t, err)
	assert.Equal(t, "2\n", string(b.Data))
}

// A Reader reset onto a new input reads it from its start as a new Reader
// would (line numbers, the csv header, the end and errors of the last
// input all forgotten), and the records of the old input stay as they were
// although their buffer is read into again.
func TestReaderReset(t *testing.T) {
	for _, tc := range []struct {
		format, first, second string
		firstWant, want       []string
		wantLines             []int
	}{
		{JSON, "{\"a\":1}\n{\"a\":2}\n", "\n[3]\n4\n", []string{`{"a":1}`}, []string{"[3]", "4"}, []int{2, 3}},
		{JSON, "{\"a\":\n", "5\n", nil, []string{"5"}, []int{1}}, // the first input ends in an error
		{Lines, "x\ny\n", "z\n", []string{"x"}, []string{"z"}, []int{1}},
		{CSV, "a,b\n1,2\n3,4\n", "c\n5\n", []string{`{"a":"1","b":"2"}`}, []string{`{"c":"5"}`}, []int{2}},
		{Raw, "first", "second", []string{"first"}, []string{"second"}, []int{0}},
	} {
		rd := NewReader(strings.NewReader(tc.first), tc.format, "/data/one", ',')
		var kept []Record
		for range tc.firstWant {
			rec, err := rd.Next()
			require.NoError(t, err, tc.format)
			kept = append(kept, rec)
		}
		if tc.firstWant == nil {
			_, err := rd.Next()
			require.ErrorIs(t, err, bridge.ErrMalformedInput, tc.format)
		}
		rd.Reset(strings.NewReader(tc.second), "/data/two")
		assert.Zero(t, rd.Offset(), "%s: offset after Reset", tc.format)
		var got []string
		var lines []int
		for {
			rec, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, tc.format)
			got, lines = append(got, string(rec.Payload)), append(lines, rec.Line)
		}
		assert.Equal(t, tc.want, got, tc.format)
		assert.Equal(t, tc.wantLines, lines, tc.format)
		for i, rec := range kept {
			assert.Equal(t, tc.firstWant[i], string(rec.Payload), "%s: a record of the first input", tc.format)
		}
		assert.Equal(t, int64(len(tc.second)), rd.Offset(), "%s: offset at the end", tc.format)
	}
	rd := NewReader(strings.NewReader("1\n"), JSON, "/data/one", ',')
	rd.Reset(strings.NewReader("2\n{\n"), "/data/two")
	_, _ = rd.Next()
	_, err := rd.Next()
	require.ErrorIs(t, err, bridge.ErrMalformedInput)
	assert.Contains(t, err.Error(), "/data/two:2:", "errors name the new input")
}
