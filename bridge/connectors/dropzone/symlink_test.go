//go:build unix

package dropzone_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dropzone"
)

// logBuffer collects what a route logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func loggingEnv() (*bridge.Env, *logBuffer) {
	logs := &logBuffer{}
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dropzone.Register(e)
	return e, logs
}

// snapshot lists every entry under dir with its content (or link target).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "-> " + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[rel] = string(b)
		default:
			out[rel] = d.Type().String()
		}
		return nil
	}))
	return out
}

// attack is one symbolic link planted in a drop zone.
type attack struct {
	name string
	// plant makes the links; outside holds the victim file "victim" and
	// the victim directory "vdir".
	plant func(t *testing.T, zone, outside string)
	// run is what mqb does with the zone; its error is checked against
	// wantErr.
	run     func(t *testing.T, e *bridge.Env, zone string) error
	wantErr string // "" for none
	// check, when set, runs afterwards with the route's logs.
	check func(t *testing.T, zone, outside, logs string)
}

func link(t *testing.T, target, name string) {
	t.Helper()
	require.NoError(t, os.Symlink(target, name))
}

// readZone drains the zone, holding a.txt, with a source.
func readZone(query string) func(t *testing.T, e *bridge.Env, zone string) error {
	return func(t *testing.T, e *bridge.Env, zone string) error {
		write(t, zone, "a.txt", "1\n2\n")
		got := &collect{}
		src, r, err := e.NewSource(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines" + strings.ReplaceAll(query, "${zone}", zone)})
		require.NoError(t, err)
		route := &bridge.Route{Source: src, Target: got, Input: r.Display, Output: "collect", BatchSize: 1, Drain: true, Logger: e.Logger}
		err = route.Run(context.Background())
		if err == nil {
			assert.Equal(t, []string{"1", "2"}, got.payloads())
		}
		return err
	}
}

// writeZone writes three records to the zone with a target.
func writeZone(t *testing.T, e *bridge.Env, zone string) error {
	tgt, _, err := e.NewTarget(bridge.Endpoint{URL: "dropzone://" + zone + "?format=lines&roll_interval=0s"})
	require.NoError(t, err)
	if err := tgt.Connect(context.Background()); err != nil {
		return err
	}
	require.NoError(t, tgt.WriteBatch(context.Background(), msgs("x", "y", "z")))
	return tgt.Close(context.Background(), nil)
}

const (
	stateTmp     = dropzone.DefaultStateFile + ".tmp"
	stateLock    = dropzone.DefaultStateFile + ".lock"
	stateJournal = dropzone.DefaultStateFile + ".journal"
	leftover     = ".x-000001.txt.4.partial"
	leftoverTo   = "x-000001.txt"
)

// notPublished checks that the planted leftover link stayed a link and was
// published under no name.
func notPublished(t *testing.T, zone, _, logs string) {
	fi, err := os.Lstat(filepath.Join(zone, leftover))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the planted link is left alone")
	_, err = os.Lstat(filepath.Join(zone, leftoverTo))
	assert.ErrorIs(t, err, os.ErrNotExist, "a link is never published")
	assert.Contains(t, logs, "leaving alone an entry named like a writer's hidden file")
}

// plantLink plants, as zone/inZone, a link to out/outside.
func plantLink(outside, inZone string) func(t *testing.T, zone, out string) {
	return func(t *testing.T, zone, out string) {
		link(t, filepath.Join(out, outside), filepath.Join(zone, inZone))
	}
}

// sourceAttacks are links planted where a source reads, locks and saves.
func sourceAttacks() []attack {
	return []attack{
		{name: "state .tmp to a file outside",
			plant: plantLink("victim", stateTmp),
			run:   readZone("")},
		{name: "state .tmp to a directory outside",
			plant: plantLink("vdir", stateTmp),
			run:   readZone("")},
		{name: "state .tmp dangling, to a new file outside",
			plant: plantLink("created", stateTmp),
			run:   readZone("")},
		{name: "state file to a file outside",
			plant: func(t *testing.T, zone, out string) {
				require.NoError(t, os.WriteFile(filepath.Join(out, "victim"), []byte(`{"done":["a.txt"]}`), 0o600))
				link(t, filepath.Join(out, "victim"), filepath.Join(zone, dropzone.DefaultStateFile))
			},
			run: readZone(""), wantErr: "symbolic link"},
		{name: "state journal to a file outside",
			plant: func(t *testing.T, zone, out string) {
				require.NoError(t, os.WriteFile(filepath.Join(out, "victim"), []byte(`{"done":["a.txt"]}`+"\n"), 0o600))
				link(t, filepath.Join(out, "victim"), filepath.Join(zone, stateJournal))
			},
			run: readZone(""), wantErr: "symbolic link"},
		{name: "state journal dangling, to a new file outside",
			plant: plantLink("created", stateJournal),
			run:   readZone(""), wantErr: "symbolic link"},
		{name: "reader lock dangling, to a new file outside",
			plant: plantLink("created", stateLock),
			run:   readZone(""), wantErr: "symbolic link"},
		{name: "reader lock to a file outside",
			plant: plantLink("victim", stateLock),
			run:   readZone(""), wantErr: "symbolic link"},
		{name: "state_path in a zone subdirectory that is a link to a directory outside",
			plant: func(t *testing.T, zone, out string) { link(t, filepath.Join(out, "vdir"), filepath.Join(zone, "sub")) },
			run:   readZone("&state_path=${zone}/sub/state.json"), wantErr: "symbolic link"},
		{name: "state_path in a zone subdirectory that is a link to a directory inside",
			plant: func(t *testing.T, zone, out string) {
				require.NoError(t, os.Mkdir(filepath.Join(zone, "real"), 0o700))
				link(t, "real", filepath.Join(zone, "sub"))
			},
			run: readZone("&state_path=${zone}/sub/state.json"), wantErr: "symbolic link",
			check: func(t *testing.T, zone, _, _ string) {
				entries, err := os.ReadDir(filepath.Join(zone, "real"))
				require.NoError(t, err)
				assert.Empty(t, entries, "nothing was created through the inner link")
			}},
		{name: "input file to a file outside",
			plant: plantLink("victim", "b.txt"),
			run:   readZone(""),
			check: func(t *testing.T, zone, _, logs string) {
				assert.Contains(t, logs, "not reading an entry that is not a regular file")
				assert.Contains(t, logs, filepath.Join(zone, "b.txt"))
			}},
		{name: "input name to a directory outside",
			plant: plantLink("vdir", "b.txt"),
			run:   readZone(""),
			check: func(t *testing.T, zone, _, logs string) {
				assert.Contains(t, logs, "not reading an entry that is not a regular file")
			}},
	}
}

// targetAttacks are links planted where a target locks, cuts back and
// publishes.
func targetAttacks() []attack {
	return []attack{
		{name: "writer lock dangling, to a new file outside",
			plant: plantLink("created", dropzone.WriterLockFile),
			run:   writeZone, wantErr: "symbolic link"},
		{name: "writer lock to a file outside",
			plant: plantLink("victim", dropzone.WriterLockFile),
			run:   writeZone, wantErr: "symbolic link"},
		{name: "leftover .partial to a file outside",
			plant: plantLink("victim", leftover),
			run:   writeZone, check: notPublished},
		{name: "leftover .partial to a directory outside",
			plant: plantLink("vdir", leftover),
			run:   writeZone, check: notPublished},
		{name: "leftover .partial dangling",
			plant: plantLink("created", leftover),
			run:   writeZone, check: notPublished},
		{name: "leftover .cut beside its .partial, to a file outside",
			plant: func(t *testing.T, zone, out string) {
				write(t, zone, leftover, "a\nb\nc-torn")
				link(t, filepath.Join(out, "victim"), filepath.Join(zone, ".x-000001.txt.4.cut"))
			},
			run: writeZone,
			check: func(t *testing.T, zone, _, _ string) {
				b, err := os.ReadFile(filepath.Join(zone, leftoverTo))
				require.NoError(t, err)
				assert.Equal(t, "a\nb\n", string(b), "the leftover is cut back and published")
				_, err = os.Lstat(filepath.Join(zone, ".x-000001.txt.4.cut"))
				assert.ErrorIs(t, err, os.ErrNotExist, "the planted link is removed, not written through")
			}},
	}
}

// TestSymlinksInTheZone plants symbolic links where the connector reads,
// writes, locks, cuts back and publishes, and checks that none is followed:
// the victim file and directory outside the zone are untouched, nothing is
// created outside, and the connector either works around the link or
// refuses with an error that names it.
func TestSymlinksInTheZone(t *testing.T) {
	attacks := append(sourceAttacks(), targetAttacks()...)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			zone, out := t.TempDir(), t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(out, "victim"), []byte("precious\n"), 0o600))
			require.NoError(t, os.Mkdir(filepath.Join(out, "vdir"), 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(out, "vdir", "inside"), []byte("precious too\n"), 0o600))
			a.plant(t, zone, out)
			before := snapshot(t, out)

			e, logs := loggingEnv()
			err := a.run(t, e, zone)
			assert.Equal(t, before, snapshot(t, out), "nothing outside the zone changed")
			if a.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), a.wantErr)
				assert.ErrorIs(t, err, syscall.ELOOP, "a link is a permanent error: the route does not retry it")
			}
			if a.check != nil {
				a.check(t, zone, out, logs.String())
			}
		})
	}
}

// TestSymlinkedStateDirOutsideTheZone: a state_path outside the zone is
// reached through its own directory, resolved once; a link planted on the
// state file's names there is not followed either.
func TestSymlinkedStateDirOutsideTheZone(t *testing.T) {
	zone, stateDir, out := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "victim"), []byte("precious\n"), 0o600))
	link(t, filepath.Join(out, "victim"), filepath.Join(stateDir, "state.json.tmp"))
	before := snapshot(t, out)
	e, _ := loggingEnv()
	require.NoError(t, readZone("&state_path="+filepath.Join(stateDir, "state.json"))(t, e, zone))
	assert.Equal(t, before, snapshot(t, out))
	names := []string{}
	for n := range snapshot(t, stateDir) {
		names = append(names, n)
	}
	sort.Strings(names)
	assert.Equal(t, []string{".", "state.json", "state.json.lock"}, names)
}
