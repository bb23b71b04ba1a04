package memfs_test

import (
	"io/fs"
	"strings"
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

	claimWrite(t, c, `{"pid":1}`, 0)
	claimWrite(t, c, `{"p":2}`, 0)
	assert.Equal(t, `{"p":2}1}`, read(t, fsys, "PRODUCER"), "WriteAt writes in place, never truncating")
	claimWrite(t, c, `x`, 10)
	assert.Equal(t, "{\"p\":2}1}\x00x", read(t, fsys, "PRODUCER"), "WriteAt past the end leaves a hole of zeros")

	require.NoError(t, c.Release())
	requirePathErr(t, c.Release(), "PRODUCER", fs.ErrClosed)
	_, err = c.WriteAt([]byte("x"), 0)
	requirePathErr(t, err, "PRODUCER", fs.ErrClosed)
	requirePathErr(t, c.Sync(), "PRODUCER", fs.ErrClosed)
	assert.Equal(t, "{\"p\":2}1}\x00x", read(t, fsys, "PRODUCER"), "Release keeps the file and its content")

	c2, err := fsys.Lock("PRODUCER")
	require.NoError(t, err, "a released lock can be taken again")
	assert.Equal(t, "{\"p\":2}1}\x00x", read(t, fsys, "PRODUCER"), "Lock does not truncate")
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
	claimWrite(t, c, "old holder", 0)
	claimWrite(t, c2, "new holder", 0)
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
	claimWrite(t, c, "holder 1", 0)
	after := crash(fsys)
	assert.Equal(t, "holder 1", read(t, after, "spool/PRODUCER"), "entry and content survive without SyncDir")

	c2, err := after.Lock("spool/PRODUCER")
	require.NoError(t, err, "locks are not carried over by Crash")
	require.NoError(t, c2.Release())

	claimWrite(t, c, "h2", 0)
	assert.Equal(t, "h2lder 1", read(t, crash(fsys), "spool/PRODUCER"))
	_, err = fsys.Lock("spool/PRODUCER")
	requirePathErr(t, err, "spool/PRODUCER", core.ErrLocked)
}

// claimWrite writes data at off of a claim file and syncs it.
func claimWrite(t *testing.T, c core.Claim, data string, off int64) {
	t.Helper()
	n, err := c.WriteAt([]byte(data), off)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, c.Sync())
}

// An unsynced in-place write of a claim file survives a power cut whole,
// torn or not at all, over the bytes synced before, and SyncAll makes it
// durable like Claim.Sync.
func TestClaimWriteAtCrash(t *testing.T) {
	fsys := memfs.New()
	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err)
	old, cur := strings.Repeat("A", 24), "AAAA"+strings.Repeat("B", 16)+"AAAA"
	claimWrite(t, c, old, 0)
	_, err = c.WriteAt([]byte(strings.Repeat("B", 16)), 4)
	require.NoError(t, err)
	assert.Equal(t, cur, read(t, fsys, "PRODUCER"))
	assert.Equal(t, old, read(t, crash(fsys), "PRODUCER"), "KeepUnsynced 0: the synced bytes")
	keepAll := fsys.Crash(memfs.CrashOptions{KeepUnsynced: 1})
	assert.Equal(t, cur, read(t, keepAll, "PRODUCER"), "KeepUnsynced 1: the process-crash state")

	// The write covers 3 blocks of 8 bytes (4, 8 and 4 of its bytes): each
	// holds its old or its new bytes.
	want := map[string]bool{}
	for mask := range 8 {
		b := []byte(old)
		for k, r := range [][2]int{{4, 8}, {8, 16}, {16, 20}} {
			if mask&(1<<k) != 0 {
				copy(b[r[0]:r[1]], cur[r[0]:r[1]])
			}
		}
		want[string(b)] = true
	}
	seen := map[string]bool{}
	for seed := range int64(400) {
		got := read(t, fsys.Crash(memfs.CrashOptions{Seed: seed, KeepUnsynced: 0.5}), "PRODUCER")
		require.True(t, want[got], "seed %d: %q is not the old bytes with some blocks of the write over them", seed, got)
		seen[got] = true
	}
	assert.Len(t, seen, len(want), "every mix of old and new blocks comes up")

	require.NoError(t, fsys.SyncAll())
	assert.Equal(t, cur, read(t, crash(fsys), "PRODUCER"), "SyncAll makes claim writes durable")
	require.NoError(t, c.Release())
}
