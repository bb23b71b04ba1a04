//go:build unix

package dropzone_test

import (
	"fmt"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
	"github.com/mqb-project/mqb/core"
)

// countingFS counts the zone's listings.
type countingFS struct {
	dropzone.FS
	lists *atomic.Int64
}

func (c countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.lists.Add(1)
	return c.FS.ReadDir(name)
}

// ScanDir is the streamed listing, which the source takes when the zone
// has it (the os backend does).
func (c countingFS) ScanDir(name string, fn func(string, fs.FileMode)) error {
	c.lists.Add(1)
	return c.FS.(core.DirScanner).ScanDir(name, fn)
}

// Reading N files costs a few listings of the zone, not one per file: a
// backlog of many files drains in time that grows with N, not N².
func TestManyFilesFewListings(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	var want []string
	for i := range n {
		name := fmt.Sprintf("f%04d.txt", n-1-i) // written in reverse: read in name order all the same
		write(t, dir, name, name+"\n")
		want = append([]string{name}, want...)
	}
	var lists atomic.Int64
	dropzone.Interpose(t, func(_ string, real dropzone.FS) dropzone.FS { return countingFS{real, &lists} })
	got := &collect{}
	require.NoError(t, runFrom(t, env(), "dropzone://"+dir+"?format=lines", got, 7))
	assert.Equal(t, want, got.payloads())
	assert.LessOrEqual(t, lists.Load(), int64(4), "listings of the zone to read %d files", n)

	// A file that appears later is read by the next run, once.
	write(t, dir, "f0000a.txt", "late\n")
	again := &collect{}
	require.NoError(t, runFrom(t, env(), "dropzone://"+dir+"?format=lines", again, 7))
	assert.Equal(t, []string{"late"}, again.payloads())
}
