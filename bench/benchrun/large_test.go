package benchrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeMeasuresAndChecksTheCopy runs the large-payload case with a Copy
// that copies the file by hand: the result has both speeds and their
// ratio, and a Copy that publishes the wrong size fails the run.
func TestLargeMeasuresAndChecksTheCopy(t *testing.T) {
	const size = 3<<20 + 5
	copyFile := func(cut int64) func(context.Context, string, string, string) (string, error) {
		return func(_ context.Context, in, spool, zone string) (string, error) {
			b, err := os.ReadFile(in)
			if err != nil {
				return "", err
			}
			require.Len(t, b, size)
			require.NotEqual(t, b[:8], b[1<<20:1<<20+8], "every MiB of the input differs")
			for _, d := range []string{spool, zone} {
				require.NoError(t, os.MkdirAll(d, 0o700))
			}
			out := filepath.Join(zone, "out.bin")
			return out, os.WriteFile(out, b[:int64(len(b))-cut], 0o600)
		}
	}
	r, err := Large(context.Background(), LargeConfig{Dir: t.TempDir(), Size: size, Rounds: 2, Copy: copyFile(0)})
	require.NoError(t, err)
	assert.Equal(t, int64(size), r.Size)
	assert.Positive(t, r.MBps)
	assert.Positive(t, r.RawMBps)
	assert.InDelta(t, r.MBps/r.RawMBps, r.Ratio, 1e-9)
	var buf bytes.Buffer
	require.NoError(t, WriteLargeText(&buf, r))
	assert.Contains(t, buf.String(), "x raw")

	_, err = Large(context.Background(), LargeConfig{Dir: t.TempDir(), Size: size, Rounds: 1, Copy: copyFile(1)})
	require.ErrorContains(t, err, "the drop zone got")
}
