//go:build unix

package dropzone_test

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
	"github.com/mqb-project/mqb/core"
)

func bigPayload() []byte {
	return bytes.Repeat([]byte("drop zone bytes!"), (bridge.StreamAbove+4096)/16)
}

// TestRawLargeFileStreamsThrough reads a raw file above StreamAbove as a
// Body, writes it with a raw drop-zone target (which streams it) and, by
// a route, to a target that needs bytes (the route loads it).
func TestRawLargeFileStreamsThrough(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	want := bigPayload()
	require.NoError(t, os.WriteFile(filepath.Join(in, "a.bin"), want, 0o600))
	e := env()
	src, _, err := e.NewSource(bridge.Endpoint{URL: "dropzone://" + in + "?format=raw"})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, src.Connect(ctx))
	ms, ack, err := src.ReadBatch(ctx, 10)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.NotNil(t, ms[0].Body, "a raw file above StreamAbove is streamed")
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dropzone://" + out + "?format=raw"})
	require.NoError(t, err)
	require.NoError(t, tgt.Connect(ctx))
	require.NoError(t, tgt.WriteBatch(ctx, ms))
	require.NoError(t, tgt.Close(ctx, nil))
	require.NoError(t, ack(ctx, nil))
	require.NoError(t, src.Close(ctx))
	names := published(t, out)
	require.Len(t, names, 1)
	got, err := os.ReadFile(filepath.Join(out, names[0]))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the drop-zone file holds %d bytes, not the payload", len(got))

	c := &collect{}
	require.NoError(t, os.WriteFile(filepath.Join(in, "b.bin"), want, 0o600))
	require.NoError(t, runFrom(t, e, "dropzone://"+in+"?format=raw", c, 10))
	require.Len(t, c.msgs, 1, "a.bin was acknowledged, b.bin is new")
	assert.True(t, bytes.Equal(want, c.msgs[0].Payload), "a target without BodyStreamer gets the bytes")
}

// published lists the names in dir that do not start with a dot.
func published(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.Name()[0] != '.' {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestBodyOfAChangedFileFails changes a raw file after it was read as a
// Body: a symbolic link planted in its place (to a file outside with the
// same bytes) is never opened, and a file that grew is not cut short.
func TestBodyOfAChangedFileFails(t *testing.T) {
	want := bigPayload()
	for name, change := range map[string]func(t *testing.T, path string){
		"symlink": func(t *testing.T, path string) {
			outside := filepath.Join(t.TempDir(), "secret.bin")
			require.NoError(t, os.WriteFile(outside, want, 0o600))
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Symlink(outside, path))
		},
		"grown": func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("x"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a.bin")
			require.NoError(t, os.WriteFile(path, want, 0o600))
			src, _, err := env().NewSource(bridge.Endpoint{URL: "dropzone://" + dir + "?format=raw"})
			require.NoError(t, err)
			ctx := context.Background()
			require.NoError(t, src.Connect(ctx))
			defer src.Close(ctx)
			ms, _, err := src.ReadBatch(ctx, 10)
			require.NoError(t, err)
			require.NotNil(t, ms[0].Body)
			change(t, path)
			r, err := ms[0].Body.Open()
			if name == "symlink" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "symbolic link")
				return
			}
			require.NoError(t, err)
			defer r.Close()
			_, err = io.Copy(io.Discard, r)
			assert.ErrorIs(t, err, core.ErrPayloadSize)
		})
	}
}
