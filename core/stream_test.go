package core

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestExactReader reads exact, short and long inputs by Read and by
// WriteTo (through a ReaderFrom and without one).
func TestExactReader(t *testing.T) {
	type writer struct{ io.Writer } // hides bytes.Buffer's ReadFrom
	for _, tc := range []struct {
		in   string
		size int64
		want error
	}{
		{"hello", 5, nil}, {"", 0, nil}, {"hell", 5, ErrPayloadSize}, {"hello!", 5, ErrPayloadSize},
	} {
		for _, how := range []string{"read", "readfrom", "plain"} {
			r := ExactReader(strings.NewReader(tc.in), tc.size, "x")
			var buf bytes.Buffer
			var err error
			switch how {
			case "read":
				_, err = io.Copy(writer{&buf}, struct{ io.Reader }{r})
			case "readfrom":
				_, err = r.(io.WriterTo).WriteTo(&buf)
			case "plain":
				_, err = r.(io.WriterTo).WriteTo(writer{&buf})
			}
			if !errors.Is(err, tc.want) || (tc.want == nil && buf.String() != tc.in) {
				t.Errorf("%q as %d bytes by %s: %q, %v; want %v", tc.in, tc.size, how, buf.String(), err, tc.want)
			}
		}
	}
	if r := ExactReader(strings.NewReader("x"), 1, "a"); ExactReader(r, 1, "b") != r {
		t.Error("an ExactReader of an ExactReader of the same size is not that reader")
	}
	rc := ExactReadCloser(io.NopCloser(strings.NewReader("x")), 1, "a")
	if _, ok := ExactReader(rc, 1, "b").(*exactReader); !ok {
		t.Error("an ExactReader of an ExactReadCloser is not its reader")
	}
}

// zeroReader returns (0, nil) forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestExactReaderGivesUpOnNoProgress(t *testing.T) {
	_, err := io.ReadAll(ExactReader(zeroReader{}, 0, "z"))
	if !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("ReadAll of a reader that never ends nor gives bytes: %v", err)
	}
}
