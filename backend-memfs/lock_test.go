package memfs_test

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/core"
)

func TestLock(t *testing.T) {
	fsys := memfs.New()
	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)
	assert.Equal(t, "", read(t, fsys, "PRODUCER"), "Lock creates the claim file")

	_, err = fsys.Lock("PRODUCER")
	requirePathErr(t, err, "PRODUCER", core.ErrLocked)

	other, err := fsys.Lock("CONSUMER")
	require.NoError(t, err, "locks are per file")
	require.NoError(t, other.Release())

	require.NoError(t, c.Write([]byte(`{"pid":1}`)))
	require.NoError(t, c.Write([]byte(`{"p":2}`)))
	assert.Equal(t, `{"p":2}`, read(t, fsys, "PRODUCER"), "Write replaces the content")

	require.NoError(t, c.Release())
	requirePathErr(t, c.Release(), "PRODUCER", fs.ErrClosed)
	requirePathErr(t, c.Write([]byte("x")), "PRODUCER", fs.ErrClosed)
	assert.Equal(t, `{"p":2}`, read(t, fsys, "PRODUCER"), "Release keeps the file and its content")

	c2, err := fsys.Lock("PRODUCER")
	require.NoError(t, err, "a released lock can be taken again")
	assert.Equal(t, `{"p":2}`, read(t, fsys, "PRODUCER"), "Lock does not truncate")
	require.NoError(t, c2.Release())
}

func TestLockErrors(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "d")
	write(t, fsys, "f", "", false)
	for _, tc := range []struct {
		name    string
		wantErr error
	}{
		{"d", syscall.EISDIR},
		{".", syscall.EISDIR},
		{"nodir/PRODUCER", fs.ErrNotExist},
		{"f/PRODUCER", syscall.ENOTDIR},
	} {
		_, err := fsys.Lock(tc.name)
		requirePathErr(t, err, tc.name, tc.wantErr)
	}
}

// The lock belongs to the file, as flock's does: removing a held claim file
// and creating it again gives a second, independent lock (split brain), which
// is why the protocol never removes claim files.
func TestLockFollowsTheFile(t *testing.T) {
	fsys := memfs.New()
	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)
	require.NoError(t, fsys.Rename("PRODUCER", "OLD"))
	_, err = fsys.Lock("OLD")
	requirePathErr(t, err, "OLD", core.ErrLocked)

	c2, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)
	require.NoError(t, c.Write([]byte("old holder")))
	require.NoError(t, c2.Write([]byte("new holder")))
	assert.Equal(t, "old holder", read(t, fsys, "OLD"))
	assert.Equal(t, "new holder", read(t, fsys, "PRODUCER"))
}

func TestClaimWriteIsDurable(t *testing.T) {
	fsys := memfs.New()
	mkdir(t, fsys, "spool")
	syncDir(t, fsys, ".")
	c, err := fsys.Lock("spool/PRODUCER")
	require.NoError(t, err)

	assert.Empty(t, tree(t, crash(fsys))["spool/PRODUCER"], "not yet written")
	require.NoError(t, c.Write([]byte("holder 1")))
	after := crash(fsys)
	assert.Equal(t, "holder 1", read(t, after, "spool/PRODUCER"), "entry and content survive without SyncDir")

	c2, err := after.Lock("spool/PRODUCER")
	require.NoError(t, err, "locks are not carried over by Crash")
	require.NoError(t, c2.Release())

	require.NoError(t, c.Write([]byte("h2")))
	assert.Equal(t, "h2", read(t, crash(fsys), "spool/PRODUCER"))
	_, err = fsys.Lock("spool/PRODUCER")
	requirePathErr(t, err, "spool/PRODUCER", core.ErrLocked)
}
