package file_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/file"
	"github.com/mqb-project/mqb/core"
)

func source(t *testing.T, url string) bridge.Source {
	t.Helper()
	e := bridge.NewEnv()
	file.Register(e)
	src, _, err := e.NewSource(bridge.Endpoint{URL: url})
	require.NoError(t, err)
	require.NoError(t, src.Connect(context.Background()))
	t.Cleanup(func() { src.Close(context.Background()) })
	return src
}

// readBody reads the one message of a raw input larger than
// bridge.StreamAbove: it must come as a Body, not as bytes.
func readBody(t *testing.T, src bridge.Source) *bridge.Message {
	t.Helper()
	ms, _, err := src.ReadBatch(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.NotNil(t, ms[0].Body, "a raw payload above StreamAbove is streamed")
	require.Nil(t, ms[0].Payload)
	return ms[0]
}

func bigPayload() []byte {
	return bytes.Repeat([]byte("0123456789abcdef"), (bridge.StreamAbove+4096)/16)
}

// TestRawLargeFileStreamsToRawFile streams a large raw input into a raw
// file target, twice (a retry opens the Body again), and reads it back.
func TestRawLargeFileStreamsToRawFile(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
	want := bigPayload()
	require.NoError(t, os.WriteFile(in, want, 0o600))
	m := readBody(t, source(t, "file://"+in+"?format=raw"))
	assert.Equal(t, int64(len(want)), m.Len())
	tgt := target(t, "file://"+out+"?format=raw")
	require.NoError(t, tgt.WriteBatch(context.Background(), []*bridge.Message{m, m}))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(append(want, want...), got), "the file holds %d bytes, not the payload twice", len(got))
}

// TestRawInputChangedUnderItsBody changes the input after it was read as a
// Body: grown, cut, replaced by a symbolic link to a file of the same size.
// Opening or reading the Body fails; nothing short or long is passed on.
func TestRawInputChangedUnderItsBody(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.bin")
	want := bigPayload()
	for name, change := range map[string]func(){
		"grown": func() {
			f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("more"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
		"cut": func() { require.NoError(t, os.Truncate(in, int64(len(want)/2))) },
		"symlink": func() {
			other := filepath.Join(dir, "other.bin")
			require.NoError(t, os.WriteFile(other, want, 0o600))
			require.NoError(t, os.Remove(in))
			require.NoError(t, os.Symlink(other, in))
		},
	} {
		t.Run(name, func(t *testing.T) {
			_ = os.Remove(in)
			require.NoError(t, os.WriteFile(in, want, 0o600))
			m := readBody(t, source(t, "file://"+in+"?format=raw"))
			change()
			r, err := m.Body.Open()
			if err == nil {
				_, err = io.Copy(io.Discard, r)
				r.Close()
			}
			require.Error(t, err)
			if name != "symlink" {
				assert.ErrorIs(t, err, core.ErrPayloadSize)
			}
			assert.Error(t, m.Load(), "Load reads the same Body")
		})
	}
}
