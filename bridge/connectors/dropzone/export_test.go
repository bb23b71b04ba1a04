//go:build unix

package dropzone

import (
	"testing"

	osfs "github.com/mqb-project/mqb/backend-os"
)

// FS is the confined filesystem the connector opens on a directory.
type FS = zoneFS

// Interpose makes the connector wrap every FS it opens, for the rest of
// the test, so that a test can inject faults or race with a call.
func Interpose(t testing.TB, wrap func(root string, fsys FS) FS) {
	prev := newFS
	newFS = func(root string, o osfs.Options) (zoneFS, error) {
		fsys, err := prev(root, o)
		if err != nil {
			return nil, err
		}
		return wrap(root, fsys), nil
	}
	t.Cleanup(func() { newFS = prev })
}

// SetJournalFloor sets, for the rest of the test, the size the state
// file's journal may reach before a save writes the whole state.
func SetJournalFloor(t testing.TB, n int64) {
	prev := journalFloor
	journalFloor = n
	t.Cleanup(func() { journalFloor = prev })
}
