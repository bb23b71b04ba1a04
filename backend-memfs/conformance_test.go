package memfs_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memfs "github.com/mqb-project/mqb/backend-memfs"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// TestConformance runs the conformance suite, power-cut loops included (on
// the crash model), against memfs.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) core.FS { return memfs.New() })
}

// noSync is memfs whose Sync, SyncDir and SyncAll do nothing: its crash
// model then loses what the spool believed durable.
type noSync struct{ *memfs.FS }

type noSyncFile struct{ core.File }

func (noSyncFile) Sync() error { return nil }

func (f noSync) CreateExcl(name string) (core.File, error) {
	file, err := f.FS.CreateExcl(name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}
func (noSync) SyncDir(string) error { return nil }
func (noSync) SyncAll() error       { return nil }

// silentWatch is memfs whose watches never fire.
type silentWatch struct{ *memfs.FS }

type deafWatch struct{ ch chan struct{} }

func (w deafWatch) C() <-chan struct{} { return w.ch }
func (deafWatch) Close() error         { return nil }

func (f silentWatch) WatchDir(name string) (core.DirWatch, error) {
	if _, err := f.FS.Stat(name); err != nil {
		return nil, err
	}
	return deafWatch{make(chan struct{})}, nil
}

// TestSuiteCatchesBrokenMemFS breaks the two promises only a backend with a
// crash model and wake-ups can break (conformance's own tests break the
// others on a plain directory): the checks named for each must fail, and
// pass on memfs itself.
func TestSuiteCatchesBrokenMemFS(t *testing.T) {
	cases := []struct {
		name  string
		newFS func() core.FS
		fail  []string // checks that must fail
	}{
		{"sync dropped", func() core.FS { return noSync{memfs.New()} }, []string{"PowerCutChunk", "PowerCutBatch", "StaleDoneRemoved", "SyncDurability"}},
		{"wake-ups never come", func() core.FS { return silentWatch{memfs.New()} }, []string{"DirWatch"}},
	}
	var all []string
	for _, tc := range cases {
		all = append(all, tc.fail...)
		t.Run(tc.name, func(t *testing.T) {
			cfg := conformance.Config{Match: regexp.MustCompile("^(" + strings.Join(tc.fail, "|") + ")$"), Timeout: time.Minute}
			results := conformance.CheckConfig(context.Background(), cfg, func() (core.FS, error) { return tc.newFS(), nil })
			require.Len(t, results, len(tc.fail))
			for _, r := range results {
				assert.False(t, r.Passed || r.Skipped, "%s passed (skipped %v: %s) on a backend whose %s", r.Name, r.Skipped, r.Err, tc.name)
			}
		})
	}
	cfg := conformance.Config{Match: regexp.MustCompile("^(" + strings.Join(all, "|") + ")$")}
	for _, r := range conformance.CheckConfig(context.Background(), cfg, func() (core.FS, error) { return memfs.New(), nil }) {
		assert.True(t, r.Passed, "control: %s fails on memfs: %s", r.Name, r.Err)
	}
}
