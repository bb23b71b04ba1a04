package bridge_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core/option"
)

func TestSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(file, []byte("s3cret\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	schema := &option.Schema{Name: "demo", Fields: []option.Field{{Name: "password", Type: option.TypeString}, bridge.SecretFileField("password")}}
	tests := []struct {
		name    string
		fields  map[string]any
		want    string
		wantErr string
	}{
		{"inline", map[string]any{"password": "inline"}, "inline", ""},
		{"from a file, newline dropped", map[string]any{"password_file": file}, "s3cret", ""},
		{"neither", map[string]any{}, "", ""},
		{"both", map[string]any{"password": "x", "password_file": file}, "", `option "password_file": cannot be combined with password`},
		{"missing file", map[string]any{"password_file": filepath.Join(dir, "nope")}, "", "cannot be read: no such file or directory"},
		{"empty file", map[string]any{"password_file": empty}, "", "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := schema.DecodeMap(tt.fields)
			require.NoError(t, err)
			got, err := bridge.Secret(v, "password")
			if tt.wantErr != "" {
				require.ErrorIs(t, err, option.ErrInvalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
