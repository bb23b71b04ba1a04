//go:build unix

package dropzone

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// openTestState opens the state file NAME in dir, as a reader would.
func openTestState(t *testing.T, dir string) *stateFile {
	t.Helper()
	zone, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { zone.Close() })
	st, err := openState(zone, dir, filepath.Join(dir, DefaultStateFile))
	require.NoError(t, err)
	return st
}

// crash drops st as a killed process would: the journal is left as it is.
func crash(st *stateFile) { st.closeJournal() }

func TestJournalReplaysSaves(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	s, err := st.load()
	require.NoError(t, err)

	// a.txt is read in two saves, then finished with b.txt.
	s.Partial["a.txt"] = 2
	require.NoError(t, st.record(s, sourceState{Partial: map[string]int64{"a.txt": 2}}))
	s.Partial["a.txt"] = 5
	require.NoError(t, st.record(s, sourceState{Partial: map[string]int64{"a.txt": 5}}))
	delete(s.Partial, "a.txt")
	s.Done = []string{"a.txt", "b.txt"}
	s.Partial["c.txt"] = 1
	require.NoError(t, st.record(s, sourceState{Done: []string{"a.txt", "b.txt"}, Partial: map[string]int64{"c.txt": 1}}))
	assert.Zero(t, st.snapshotSize, "three small saves went to the journal, not to NAME")
	crash(st)

	want := sourceState{Done: []string{"a.txt", "b.txt"}, Partial: map[string]int64{"c.txt": 1}}
	st = openTestState(t, dir)
	got, err := st.load()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = os.Stat(filepath.Join(dir, DefaultStateFile+".journal"))
	assert.ErrorIs(t, err, os.ErrNotExist, "load writes the replayed state to NAME and removes the journal")
	crash(st)

	st = openTestState(t, dir)
	got, err = st.load()
	require.NoError(t, err)
	assert.Equal(t, want, got, "read back from NAME alone")
}

func TestJournalTornAndDamaged(t *testing.T) {
	const empty = `{"done":[]}`
	for _, c := range []struct {
		what, snapshot, journal string
		want                    map[string]int64
		wantErr                 string
	}{
		{"whole", empty, `{"partial":{"a":1}}` + "\n" + `{"partial":{"a":2}}` + "\n", map[string]int64{"a": 2}, ""},
		{"last line cut short", empty, `{"partial":{"a":1}}` + "\n" + `{"partial":{"a"`, map[string]int64{"a": 1}, ""},
		{"last line zeros", empty, `{"partial":{"a":1}}` + "\n" + "\x00\x00\x00\n", map[string]int64{"a": 1}, ""},
		{"damage before the last line", empty, `{"partial":{"a":1}}` + "\n" + "garbage\n" + `{"partial":{"a":3}}` + "\n", nil, "damaged at line 2"},
		// A crash between writing NAME and removing the journal: the
		// journal's counts are older than NAME's, and do not win.
		{"older than NAME", `{"done":["d"],"partial":{"b":10,"c":4}}`, `{"partial":{"b":9,"d":2}}` + "\n", map[string]int64{"b": 10, "c": 4}, ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, DefaultStateFile), []byte(c.snapshot), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, DefaultStateFile+".journal"), []byte(c.journal), 0o600))
			got, err := openTestState(t, dir).load()
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got.Partial)
		})
	}
}

// A save after a failed append writes the whole state, so nothing is ever
// appended after a torn line; the state stays exact.
func TestJournalAfterAFailedAppend(t *testing.T) {
	dir := t.TempDir()
	st := openTestState(t, dir)
	s, err := st.load()
	require.NoError(t, err)
	// A name planted where the journal goes: the append fails.
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, DefaultStateFile+".journal")))
	s.Partial["a"] = 1
	require.Error(t, st.record(s, sourceState{Partial: map[string]int64{"a": 1}}))
	s.Partial["a"] = 2
	require.NoError(t, st.record(s, sourceState{Partial: map[string]int64{"a": 2}}), "the next save writes NAME and removes the planted name")
	s.Partial["a"] = 3
	require.NoError(t, st.record(s, sourceState{Partial: map[string]int64{"a": 3}}))
	crash(st)
	got, err := openTestState(t, dir).load()
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"a": 3}, got.Partial)
	fi, err := os.Lstat("/etc/passwd")
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

// The journal is bounded: saves beyond it write NAME, so the bytes written
// grow with the saves, not with the saves times the state.
func TestJournalStaysBounded(t *testing.T) {
	SetJournalFloor(t, 256)
	dir := t.TempDir()
	st := openTestState(t, dir)
	s, err := st.load()
	require.NoError(t, err)
	for i := range 200 {
		name := string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".txt"
		s.Done = append(s.Done, name)
		require.NoError(t, st.record(s, sourceState{Done: []string{name}}))
		assert.LessOrEqual(t, st.journalSize, max(st.snapshotSize, 256))
	}
	crash(st)
	got, err := openTestState(t, dir).load()
	require.NoError(t, err)
	assert.Len(t, got.Done, 200)
}
