package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A DONE or a claim record written by another implementation, with less in
// it than mqb writes, is reported as having no details: spool stat neither
// fails nor shows the zero time (year 0001).
func TestSpoolStatForeignRecords(t *testing.T) {
	for _, tc := range []struct {
		name     string
		done     *string // nil: no DONE
		producer string  // the PRODUCER file's content
		wantText []string
	}{
		{"empty DONE (touch DONE)", ptr(""), "", []string{`(?m)^done\s+present, no details$`}},
		{"{} DONE", ptr("{}\n"), "", []string{`(?m)^done\s+present, no details$`}},
		{"DONE not JSON", ptr("finished\n"), "", []string{`(?m)^done\s+present, no details$`}},
		{"DONE with a status only", ptr(`{"status":"success"}`), "", []string{`(?m)^done\s+success: 0 message\(s\)$`}},
		{"claim record without since", nil, `{"role":"producer","pid":4242,"host":"ingest-1","next_seq":7}` + "\n",
			[]string{`(?m)^producer\s+pid 4242 on host ingest-1 \(since: no details\): not running \(claim free\)$`, `(?m)^done\s+no DONE sentinel$`}},
		{"claim record with a pid only", nil, `{"pid":4242}`,
			[]string{`(?m)^producer\s+pid 4242 \(host, since: no details\): not running \(claim free\)$`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spool := t.TempDir()
			ok(t, "one\n", "copy", "--from", "stdin://", "--to", "dir-spool://"+spool)
			if tc.done != nil {
				require.NoError(t, os.WriteFile(filepath.Join(spool, "DONE"), []byte(*tc.done), 0o600))
			}
			if tc.producer != "" {
				require.NoError(t, os.WriteFile(filepath.Join(spool, "PRODUCER"), []byte(tc.producer), 0o600))
			}
			text := ok(t, "", "spool", "stat", spool).stdout
			for _, re := range tc.wantText {
				assert.Regexp(t, re, text)
			}
			assert.NotContains(t, text, "0001-01-01")

			out := ok(t, "", "spool", "stat", "--json", spool).stdout
			assert.NotContains(t, out, "0001-01-01")
			var st struct {
				Done     *struct{ Status string }
				Producer *struct {
					PID     int
					NextSeq *uint64 `json:"next_seq"`
				}
			}
			require.NoError(t, json.Unmarshal([]byte(out), &st))
			assert.Equal(t, tc.done != nil, st.Done != nil, "done reported: %s", out)
			if tc.producer != "" {
				require.NotNil(t, st.Producer, out)
				assert.Equal(t, 4242, st.Producer.PID)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
