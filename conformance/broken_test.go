//go:build unix

package conformance_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// Each broken backend below breaks one promise of the core.FS contract. The
// suite, run through Check (whose TB records failures instead of failing
// this test), must fail the checks named for it, while the same checks pass
// on the unbroken backend underneath.

// renameReplaces renames over an existing name, like rename(2).
type renameReplaces struct{ *rootFS }

func (f renameReplaces) Rename(oldname, newname string) error {
	if err := f.check("rename", newname); err != nil {
		return err
	}
	return f.r.Rename(oldname, newname)
}

// createTruncates opens an existing name instead of failing.
type createTruncates struct{ *rootFS }

func (f createTruncates) CreateExcl(name string) (core.File, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	file, err := f.r.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return rootFile{file}, nil
}

// locksShared hands out every claim, held or not.
type locksShared struct{ *rootFS }

type fileClaim struct {
	fsys *rootFS
	name string
}

func (c fileClaim) WriteAt(b []byte, off int64) (int, error) {
	f, err := c.fsys.r.OpenFile(c.name, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := f.WriteAt(b, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func (c fileClaim) Sync() error { return nil }

func (c fileClaim) Release() error { return nil }

func (f locksShared) Lock(name string) (core.Claim, error) {
	if err := f.check("lock", name); err != nil {
		return nil, err
	}
	file, err := f.r.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	file.Close()
	return fileClaim{f.rootFS, name}, nil
}

// releaseKeepsLock never gives a claim back.
type releaseKeepsLock struct{ *rootFS }

type stuckClaim struct{ core.Claim }

func (stuckClaim) Release() error { return nil }

func (f releaseKeepsLock) Lock(name string) (core.Claim, error) {
	c, err := f.rootFS.Lock(name)
	if err != nil {
		return nil, err
	}
	return stuckClaim{c}, nil
}

// claimAppends adds to the claim file wherever it is asked to write.
type claimAppends struct{ *rootFS }

type appendClaim struct {
	core.Claim
	f    *rootFS
	name string
}

func (c appendClaim) WriteAt(b []byte, _ int64) (int, error) {
	old, _ := c.f.r.ReadFile(c.name)
	return c.Claim.WriteAt(b, int64(len(old)))
}

func (f claimAppends) Lock(name string) (core.Claim, error) {
	c, err := f.rootFS.Lock(name)
	if err != nil {
		return nil, err
	}
	return appendClaim{c, f.rootFS, name}, nil
}

// claimTruncates empties the claim file before each write, as the record
// update of earlier versions did.
type claimTruncates struct{ *rootFS }

type truncateClaim struct {
	core.Claim
	f    *rootFS
	name string
}

func (c truncateClaim) WriteAt(b []byte, off int64) (int, error) {
	if err := c.f.r.WriteFile(c.name, nil, 0o600); err != nil {
		return 0, err
	}
	return c.Claim.WriteAt(b, off)
}

func (f claimTruncates) Lock(name string) (core.Claim, error) {
	c, err := f.rootFS.Lock(name)
	if err != nil {
		return nil, err
	}
	return truncateClaim{c, f.rootFS, name}, nil
}

// unsorted lists directories in reverse order.
type unsorted struct{ *rootFS }

func (f unsorted) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := f.rootFS.ReadDir(name)
	slices.Reverse(es)
	return es, err
}

// statFollows describes the target of a symbolic link.
type statFollows struct{ *rootFS }

func (f statFollows) Stat(name string) (fs.FileInfo, error) {
	if err := f.check("stat", name); err != nil {
		return nil, err
	}
	return f.r.Stat(name)
}

// lenientPaths cleans bad names instead of refusing them.
type lenientPaths struct{ *rootFS }

func lenient(name string) string {
	name = path.Clean("/" + name)[1:]
	if name == "" {
		return "."
	}
	return name
}

func (f lenientPaths) CreateExcl(name string) (core.File, error) {
	return f.rootFS.CreateExcl(lenient(name))
}
func (f lenientPaths) Mkdir(name string) error { return f.rootFS.Mkdir(lenient(name)) }
func (f lenientPaths) Stat(name string) (fs.FileInfo, error) {
	return f.rootFS.Stat(lenient(name))
}

// removeAll removes non-empty directories and missing names without error.
type removeAll struct{ *rootFS }

func (f removeAll) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.r.RemoveAll(name)
}

// flatErrors returns errors that wrap nothing.
type flatErrors struct{ *rootFS }

func flat(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(err.Error())
}

func (f flatErrors) CreateExcl(name string) (core.File, error) {
	file, err := f.rootFS.CreateExcl(name)
	return file, flat(err)
}
func (f flatErrors) Rename(o, n string) error { return flat(f.rootFS.Rename(o, n)) }
func (f flatErrors) Remove(name string) error { return flat(f.rootFS.Remove(name)) }

// renameMakesDirs creates a missing target directory.
type renameMakesDirs struct{ *rootFS }

func (f renameMakesDirs) Rename(oldname, newname string) error {
	if d := path.Dir(newname); d != "." {
		_ = f.r.MkdirAll(d, 0o700)
	}
	return f.rootFS.Rename(oldname, newname)
}

// shortReads returns at most 4 KiB of any file.
type shortReads struct{ *rootFS }

type limitedFile struct {
	core.File
	r io.Reader
}

func (f limitedFile) Read(p []byte) (int, error) { return f.r.Read(p) }

func (f shortReads) Open(name string) (core.File, error) {
	file, err := f.rootFS.Open(name)
	if err != nil {
		return nil, err
	}
	return limitedFile{file, io.LimitReader(file, 4096)}, nil
}

func TestSuiteCatchesBrokenBackends(t *testing.T) {
	cases := []struct {
		name  string
		newFS func(t *testing.T) core.FS
		fail  []string // checks that must fail
	}{
		{"rename replaces", func(t *testing.T) core.FS { return renameReplaces{newRootFS(t)} }, []string{"RenameNoReplace", "RenameNoReplaceRace"}},
		{"create not exclusive", func(t *testing.T) core.FS { return createTruncates{newRootFS(t)} }, []string{"CreateExcl", "CreateExclRace"}},
		{"locks not exclusive", func(t *testing.T) core.FS { return locksShared{newRootFS(t)} }, []string{"ClaimExclusive", "ClaimExclusiveRace", "ClaimsEnforced"}},
		{"release keeps the lock", func(t *testing.T) core.FS { return releaseKeepsLock{newRootFS(t)} }, []string{"ClaimReleased", "ClaimsEnforced"}},
		{"claim write appends", func(t *testing.T) core.FS { return claimAppends{newRootFS(t)} }, []string{"ClaimContent"}},
		{"claim write truncates", func(t *testing.T) core.FS { return claimTruncates{newRootFS(t)} }, []string{"ClaimContent", "ClaimUpdateFaults"}},
		{"unsorted listing", func(t *testing.T) core.FS { return unsorted{newRootFS(t)} }, []string{"ReadDirSorted", "FIFOAcrossShards"}}, // a round trip opens names in order without listing
		{"stat follows links", func(t *testing.T) core.FS { return statFollows{newRootFS(t)} }, []string{"SymlinksNotFollowed"}},
		{"paths not validated", func(t *testing.T) core.FS { return lenientPaths{newRootFS(t)} }, []string{"PathValidation"}},
		{"remove too lenient", func(t *testing.T) core.FS { return removeAll{newRootFS(t)} }, []string{"Remove"}},
		{"errors not wrapped", func(t *testing.T) core.FS { return flatErrors{newRootFS(t)} }, []string{"CreateExcl", "RenameNoReplace", "Remove"}},
		{"rename makes directories", func(t *testing.T) core.FS { return renameMakesDirs{newRootFS(t)} }, []string{"RenameIntoMissingDir"}},
		{"short reads", func(t *testing.T) core.FS { return shortReads{newRootFS(t)} }, []string{"FileReadWrite", "SpoolRoundTrip"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			match := regexp.MustCompile("^(" + strings.Join(tc.fail, "|") + ")$")
			cfg := conformance.Config{Match: match, Timeout: time.Minute}
			results := conformance.CheckConfig(context.Background(), cfg, func() (core.FS, error) { return tc.newFS(t), nil })
			if len(results) != len(tc.fail) {
				t.Fatalf("ran %d checks, want %d", len(results), len(tc.fail))
			}
			for _, r := range results {
				if r.Passed || r.Skipped {
					t.Errorf("%s passed (skipped %v: %s) on a backend whose %s", r.Name, r.Skipped, r.Err, tc.name)
					continue
				}
				first, _, _ := strings.Cut(r.Err, "\n")
				t.Logf("%s failed as it must: %s", r.Name, first)
			}
		})
	}
	// The same checks pass on the backends underneath.
	var all []string
	for _, tc := range cases {
		all = append(all, tc.fail...)
	}
	match := regexp.MustCompile("^(" + strings.Join(all, "|") + ")$")
	for _, r := range conformance.CheckConfig(context.Background(), conformance.Config{Match: match}, func() (core.FS, error) { return newRootFS(t), nil }) {
		if !r.Passed && !r.Skipped {
			t.Errorf("control: %s fails on rootFS: %s", r.Name, r.Err)
		}
	}
}

// Check reports skips, failures and timeouts in its Results.
func TestCheckResults(t *testing.T) {
	// Everything but three of the four fault loops and the layouts, which
	// TestRootFS and the backends' TestConformance run.
	skip := regexp.MustCompile(`^(FaultInjection(Batch|None|NonAtomic)|Layout_seq.*)$`)
	want := 0
	for _, n := range conformance.CheckNames() {
		if !skip.MatchString(n) {
			want++
		}
	}
	results := conformance.CheckConfig(context.Background(), conformance.Config{Skip: skip}, func() (core.FS, error) { return newRootFS(t), nil })
	if len(results) != want {
		t.Fatalf("%d results, want %d", len(results), want)
	}
	byName := map[string]conformance.Result{}
	for _, r := range results {
		byName[r.Name] = r
		if !r.Passed && !r.Skipped {
			t.Errorf("%s failed on rootFS: %s", r.Name, r.Err)
		}
	}
	if r := byName["DirWatch"]; !r.Skipped || !strings.Contains(r.Err, "DirWatcher") {
		t.Errorf("DirWatch on an FS without wake-ups: %+v, want a skip saying why", r)
	}
	if r := byName["PowerCutChunk"]; !r.Skipped || !strings.Contains(r.Err, "crash model") {
		t.Errorf("PowerCutChunk without a crash model: %+v, want a skip saying why", r)
	}
	if r := byName["FaultInjectionChunk"]; !strings.Contains(r.Log, "faults injected") {
		t.Errorf("FaultInjectionChunk does not log its count: %q", r.Log)
	}

	// A newFS that fails fails the check, naming the error.
	res := conformance.CheckConfig(context.Background(), conformance.Config{Match: regexp.MustCompile("^Mkdir$")},
		func() (core.FS, error) { return nil, errors.New("no disk") })
	if len(res) != 1 || res[0].Passed || !strings.Contains(res[0].Err, "no disk") {
		t.Errorf("a failing newFS: %+v", res)
	}

	// A check that hangs is reported once its timeout passes.
	start := time.Now()
	res = conformance.CheckConfig(context.Background(), conformance.Config{Match: regexp.MustCompile("^ClaimExclusive$"), Timeout: 200 * time.Millisecond},
		func() (core.FS, error) { return hangingLock{newRootFS(t)}, nil })
	if len(res) != 1 || res[0].Passed || !strings.Contains(res[0].Err, "did not finish") {
		t.Errorf("a hanging check: %+v", res)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a hanging check took %v to report", d)
	}
}

// hangingLock blocks forever in Lock.
type hangingLock struct{ *rootFS }

func (hangingLock) Lock(string) (core.Claim, error) { select {} }
