package memfs

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/core"
)

// A map that once held many entries is replaced once mostly empty, so that
// ranging over it (ReadDir, SyncDir, SyncAll) costs what it holds now.
func TestDrainedMapsShrink(t *testing.T) {
	f := New()
	require.NoError(t, f.Mkdir("q"))
	var open []core.File
	for i := range 10000 {
		w, err := f.CreateExcl(fmt.Sprintf("q/%06d", i))
		require.NoError(t, err)
		open = append(open, w)
	}
	for _, w := range open {
		require.NoError(t, w.Close())
	}
	require.NoError(t, f.SyncAll())
	require.NoError(t, f.SyncDir("q"))
	for i := range 9990 {
		require.NoError(t, f.Remove(fmt.Sprintf("q/%06d", i)))
	}
	require.NoError(t, f.SyncDir("q"))

	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.root.children["q"]
	require.Len(t, q.children, 10)
	require.Less(t, q.childPeak, 64, "children was rebuilt when it drained")
	require.Empty(t, q.slotOps)
	require.Less(t, q.slotPeak, 64, "slotOps was rebuilt when it drained")
	require.Empty(t, f.unsynced)
	require.Less(t, f.unsyncedPeak, 64, "unsynced was rebuilt when it drained")
}
