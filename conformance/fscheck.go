package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Layer 1: the core.FS contract.

func fsChecks() []check {
	return []check{
		{"CreateExcl", checkCreateExcl},
		{"CreateExclRace", checkCreateExclRace},
		{"FileReadWrite", checkFileReadWrite},
		{"RenameNoReplace", checkRenameNoReplace},
		{"RenameNoReplaceRace", checkRenameRace},
		{"RenameIntoMissingDir", checkRenameMissingDir},
		{"Remove", checkRemove},
		{"Mkdir", checkMkdir},
		{"ReadDirSorted", checkReadDirSorted},
		{"Stat", checkStat},
		{"SymlinksNotFollowed", checkSymlinks},
		{"SyncAccepted", checkSyncAccepted},
		{"PathValidation", checkPathValidation},
		{"ClaimExclusive", checkClaimExclusive},
		{"ClaimExclusiveRace", checkClaimRace},
		{"ClaimReleased", checkClaimReleased},
		{"ClaimContent", checkClaimContent},
		{"DirWatch", checkDirWatch},
		{"SyncDurability", checkSyncDurability},
	}
}

func checkCreateExcl(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "a", []byte("first"))
	_, err := fsys.CreateExcl("a")
	wantPathErr(t, "CreateExcl of an existing file", err, fs.ErrExist)
	if got := mustRead(t, fsys, "a"); string(got) != "first" {
		t.Errorf("a failed CreateExcl changed the file: %q", got)
	}
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	_, err = fsys.CreateExcl("d")
	wantPathErr(t, "CreateExcl of an existing directory", err, fs.ErrExist)
	_, err = fsys.CreateExcl("missing/x")
	wantPathErr(t, "CreateExcl in a missing directory", err, fs.ErrNotExist)
	writeFile(t, fsys, "d/b", []byte("in dir"))
	if got := mustRead(t, fsys, "d/b"); string(got) != "in dir" {
		t.Errorf("d/b holds %q", got)
	}
	// An empty file is a file.
	writeFile(t, fsys, "empty", nil)
	if got := mustRead(t, fsys, "empty"); len(got) != 0 {
		t.Errorf("empty file holds %q", got)
	}
}

func checkCreateExclRace(t TB, e *env) {
	fsys := e.newFS()
	const workers = 8
	for round := range 20 {
		name := fmt.Sprintf("race-%d", round)
		errs := raceAll(workers, func(w int) error {
			f, err := fsys.CreateExcl(name)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(f, "writer %d", w)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write after winning: %w", err)
			}
			return nil
		})
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: CreateExcl succeeded for writers %d and %d on the same name", round, winner, w)
			case err == nil:
				winner = w
			case !errors.Is(err, fs.ErrExist):
				t.Errorf("round %d: losing CreateExcl: %v, want fs.ErrExist", round, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no CreateExcl succeeded", round)
		}
		if got := string(mustRead(t, fsys, name)); got != fmt.Sprintf("writer %d", winner) {
			t.Errorf("round %d: file holds %q, want the winner's %q", round, got, fmt.Sprintf("writer %d", winner))
		}
	}
}

func checkFileReadWrite(t TB, e *env) {
	fsys := e.newFS()
	data := make([]byte, 1<<20+17)
	for i := range data {
		data[i] = byte(i * 7 >> 3)
	}
	f, err := fsys.CreateExcl("big")
	noErr(t, "CreateExcl", err)
	for off := 0; off < len(data); off += 64 << 10 {
		if n, err := f.Write(data[off:min(off+64<<10, len(data))]); err != nil || n != min(64<<10, len(data)-off) {
			t.Fatalf("Write at %d = %d, %v", off, n, err)
		}
	}
	noErr(t, "Sync", f.Sync())
	fi, err := f.Stat()
	noErr(t, "File.Stat", err)
	if fi.Size() != int64(len(data)) {
		t.Errorf("File.Stat size %d, want %d", fi.Size(), len(data))
	}
	noErr(t, "Close", f.Close())
	got := mustRead(t, fsys, "big")
	if !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes, not the %d written", len(got), len(data))
	}
	r, err := fsys.Open("big")
	noErr(t, "Open", err)
	defer r.Close()
	if _, err := r.Write([]byte("x")); err == nil {
		t.Errorf("Write on a file from Open succeeded; it must be read-only")
	}
	_, err = fsys.Open("nope")
	wantPathErr(t, "Open of a missing file", err, fs.ErrNotExist)
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	if f, err := fsys.Open("d"); err == nil {
		f.Close()
		t.Errorf("Open of a directory succeeded; it must open regular files only")
	}
}

func checkRenameNoReplace(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "a", []byte("A"))
	writeFile(t, fsys, "b", []byte("B"))
	err := fsys.Rename("a", "b")
	wantPathErr(t, "Rename onto an existing file", err, fs.ErrExist)
	if got := string(mustRead(t, fsys, "a")); got != "A" {
		t.Errorf("after a refused Rename, a holds %q", got)
	}
	if got := string(mustRead(t, fsys, "b")); got != "B" {
		t.Errorf("after a refused Rename, b holds %q: it was replaced", got)
	}
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	err = fsys.Rename("a", "d")
	wantPathErr(t, "Rename onto an existing directory", err, fs.ErrExist)
	err = fsys.Rename("missing", "c")
	wantPathErr(t, "Rename of a missing file", err, fs.ErrNotExist)
	noErr(t, "Rename a -> d/a", fsys.Rename("a", "d/a"))
	if exists(fsys, "a") {
		t.Errorf("after Rename, the old name still exists")
	}
	if got := string(mustRead(t, fsys, "d/a")); got != "A" {
		t.Errorf("after Rename, d/a holds %q", got)
	}
	noErr(t, "Rename d/a -> c", fsys.Rename("d/a", "c"))
	if got := string(mustRead(t, fsys, "c")); got != "A" {
		t.Errorf("after Rename, c holds %q", got)
	}
}

func checkRenameRace(t TB, e *env) {
	fsys := e.newFS()
	const workers = 8
	for round := range 20 {
		dst := fmt.Sprintf("dst-%d", round)
		for w := range workers {
			writeFile(t, fsys, fmt.Sprintf("src-%d-%d", round, w), fmt.Appendf(nil, "from %d", w))
		}
		errs := raceAll(workers, func(w int) error {
			return fsys.Rename(fmt.Sprintf("src-%d-%d", round, w), dst)
		})
		winner := -1
		for w, err := range errs {
			src := fmt.Sprintf("src-%d-%d", round, w)
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: Rename onto %s succeeded for %d and %d: one replaced the other", round, dst, winner, w)
			case err == nil:
				winner = w
				if exists(fsys, src) {
					t.Errorf("round %d: the winner's old name %s still exists", round, src)
				}
			case !errors.Is(err, fs.ErrExist):
				t.Errorf("round %d: losing Rename: %v, want fs.ErrExist", round, err)
			default:
				if got := string(mustRead(t, fsys, src)); got != fmt.Sprintf("from %d", w) {
					t.Errorf("round %d: loser %s holds %q", round, src, got)
				}
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Rename succeeded", round)
		}
		if got := string(mustRead(t, fsys, dst)); got != fmt.Sprintf("from %d", winner) {
			t.Errorf("round %d: %s holds %q, want the winner's (%d)", round, dst, got, winner)
		}
	}
}

func checkRenameMissingDir(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "a", []byte("A"))
	err := fsys.Rename("a", "missing/a")
	wantPathErr(t, "Rename into a missing directory", err, fs.ErrNotExist)
	if exists(fsys, "missing") {
		t.Errorf("Rename into a missing directory created it")
	}
	if got := string(mustRead(t, fsys, "a")); got != "A" {
		t.Errorf("after a failed Rename, a holds %q", got)
	}
	err = fsys.Rename("a", "x/y/a")
	wantPathErr(t, "Rename into a missing nested directory", err, fs.ErrNotExist)
}

func checkRemove(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "a", []byte("A"))
	noErr(t, "Remove file", fsys.Remove("a"))
	if exists(fsys, "a") {
		t.Errorf("removed file still exists")
	}
	wantPathErr(t, "Remove of a removed file", fsys.Remove("a"), fs.ErrNotExist)
	wantPathErr(t, "Remove of a missing file in a missing directory", fsys.Remove("no/such"), fs.ErrNotExist)
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	writeFile(t, fsys, "d/f", []byte("F"))
	wantPathErr(t, "Remove of a non-empty directory", fsys.Remove("d"), syscall.ENOTEMPTY)
	if got := string(mustRead(t, fsys, "d/f")); got != "F" {
		t.Errorf("a refused Remove of d changed d/f: %q", got)
	}
	noErr(t, "Remove d/f", fsys.Remove("d/f"))
	noErr(t, "Remove empty directory", fsys.Remove("d"))
	if exists(fsys, "d") {
		t.Errorf("removed directory still exists")
	}
	// A file open for reading can be removed (the consumer acks while a
	// reader may still hold it).
	writeFile(t, fsys, "open", []byte("O"))
	r, err := fsys.Open("open")
	noErr(t, "Open", err)
	noErr(t, "Remove of an open file", fsys.Remove("open"))
	r.Close()
}

func checkMkdir(t TB, e *env) {
	fsys := e.newFS()
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	wantPathErr(t, "Mkdir of an existing directory", fsys.Mkdir("d"), fs.ErrExist)
	writeFile(t, fsys, "f", nil)
	wantPathErr(t, "Mkdir of an existing file", fsys.Mkdir("f"), fs.ErrExist)
	wantPathErr(t, "Mkdir with a missing parent", fsys.Mkdir("x/y"), fs.ErrNotExist)
	noErr(t, "Mkdir nested", fsys.Mkdir("d/e"))
	fi, err := fsys.Stat("d/e")
	noErr(t, "Stat", err)
	if !fi.IsDir() {
		t.Errorf("Stat of a new directory: mode %v", fi.Mode())
	}
}

func checkReadDirSorted(t TB, e *env) {
	fsys := e.newFS()
	want := []string{"000000001.bin", "000000001.bin.tmp", "000000001.json", "000000002.bin", "0000000010.bin",
		"9", "10", "A", "B", "_", "a", "a-b", "a.b", "a0", "b", "z", "~", "é"}
	rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 1))
	for i := range 60 {
		want = append(want, fmt.Sprintf("r%08x", rng.Uint32())+strings.Repeat("x", i%3))
	}
	slices.Sort(want)
	want = slices.Compact(want)
	order := slices.Clone(want)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i, n := range order {
		if i%5 == 0 {
			noErr(t, "Mkdir", fsys.Mkdir(n))
		} else {
			writeFile(t, fsys, n, []byte(n))
		}
	}
	ents, err := fsys.ReadDir(".")
	noErr(t, "ReadDir", err)
	var got []string
	for _, ent := range ents {
		got = append(got, ent.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ReadDir order:\n got %q\nwant %q (byte order)", got, want)
	}
	dirs := map[string]bool{}
	for i, n := range order {
		dirs[n] = i%5 == 0
	}
	direntTypes(t, ents, dirs)
	// The same in a subdirectory, and after removals.
	noErr(t, "Remove", fsys.Remove(want[1]))
	ents, err = fsys.ReadDir(".")
	noErr(t, "ReadDir", err)
	if len(ents) != len(want)-1 || ents[1].Name() != want[2] {
		t.Errorf("ReadDir after Remove: %d entries, second %q", len(ents), ents[1].Name())
	}
	sub := want[0]
	if !dirs[sub] {
		for n, d := range dirs {
			if d {
				sub = n
				break
			}
		}
	}
	for _, n := range []string{"c", "a", "b"} {
		writeFile(t, fsys, sub+"/"+n, nil)
	}
	ents, err = fsys.ReadDir(sub)
	noErr(t, "ReadDir of a subdirectory", err)
	if len(ents) != 3 || ents[0].Name() != "a" || ents[2].Name() != "c" {
		t.Errorf("ReadDir(%q) = %v", sub, ents)
	}
	_, err = fsys.ReadDir("missing")
	wantPathErr(t, "ReadDir of a missing directory", err, fs.ErrNotExist)
	empty := e.newFS()
	ents, err = empty.ReadDir(".")
	noErr(t, "ReadDir of an empty root", err)
	if len(ents) != 0 {
		t.Errorf("a fresh FS is not empty: %v", ents)
	}
}

// direntTypes checks that each entry is reported as a directory exactly
// when dirs says so, and as a regular file otherwise.
func direntTypes(t TB, ents []fs.DirEntry, dirs map[string]bool) {
	t.Helper()
	for _, ent := range ents {
		if ent.IsDir() != dirs[ent.Name()] || ent.Type().IsDir() != dirs[ent.Name()] {
			t.Errorf("entry %q: IsDir %v, Type %v", ent.Name(), ent.IsDir(), ent.Type())
		}
		if !dirs[ent.Name()] && !ent.Type().IsRegular() {
			t.Errorf("entry %q: a regular file reported as %v", ent.Name(), ent.Type())
		}
	}
}

func checkStat(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "f", []byte("12345"))
	fi, err := fsys.Stat("f")
	noErr(t, "Stat", err)
	if !fi.Mode().IsRegular() || fi.Size() != 5 || fi.Name() != "f" {
		t.Errorf("Stat(f): mode %v size %d name %q", fi.Mode(), fi.Size(), fi.Name())
	}
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	fi, err = fsys.Stat("d")
	noErr(t, "Stat", err)
	if !fi.IsDir() {
		t.Errorf("Stat(d): mode %v", fi.Mode())
	}
	fi, err = fsys.Stat(".")
	noErr(t, "Stat(.)", err)
	if !fi.IsDir() {
		t.Errorf("Stat(.): mode %v", fi.Mode())
	}
	_, err = fsys.Stat("missing")
	wantPathErr(t, "Stat of a missing name", err, fs.ErrNotExist)
	_, err = fsys.Stat("d/missing")
	wantPathErr(t, "Stat of a missing name in a directory", err, fs.ErrNotExist)
}

func checkSymlinks(t TB, e *env) {
	fsys := e.newFS()
	symlink := symlinkerOf(fsys)
	if symlink == nil {
		t.Skipf("the FS cannot plant symbolic links (no Symlink method, no Root method naming an OS directory)")
	}
	writeFile(t, fsys, "target", []byte("secret"))
	noErr(t, "Mkdir", fsys.Mkdir("dir"))
	outside := t.Name() // a relative target that names nothing inside
	if root := rootOf(fsys); root != "" {
		outside = filepath.Dir(root)
	}
	noErr(t, "symlink link", symlink("target", "link"))
	noErr(t, "symlink dangling", symlink("nowhere", "dangling"))
	noErr(t, "symlink ldir", symlink("dir", "ldir"))
	noErr(t, "symlink out", symlink(outside, "out"))
	noErr(t, "symlink payload", symlink("target", "000000005.bin"))

	symlinksNotFollowed(t, fsys)
	symlinksNotEscaped(t, fsys, outside)
	ents, err := fsys.ReadDir(".")
	noErr(t, "ReadDir", err)
	for _, ent := range ents {
		switch ent.Name() {
		case "link", "dangling", "ldir", "out", "000000005.bin":
			if ent.Type()&fs.ModeSymlink == 0 || ent.IsDir() {
				t.Errorf("ReadDir reports the symbolic link %q as %v", ent.Name(), ent.Type())
			}
		}
	}
	// Remove removes the link, not its target.
	noErr(t, "Remove(link)", fsys.Remove("link"))
	if got := string(mustRead(t, fsys, "target")); got != "secret" {
		t.Errorf("removing a link changed its target: %q", got)
	}
	// The spool never delivers a symbolic link, even one named like a payload.
	o := spoolOptions(t, "")
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	if ds := drain(t, e, c, 10); len(ds) != 0 {
		t.Errorf("the consumer delivered %s, a symbolic link", ds[0].Name)
	}
	if !exists(fsys, "target") {
		t.Errorf("the consumer removed the target of a link")
	}
}

// symlinksNotFollowed checks that Stat, Open, CreateExcl and ReadDir treat
// the links checkSymlinks planted as links.
func symlinksNotFollowed(t TB, fsys core.FS) {
	t.Helper()
	fi, err := fsys.Stat("link")
	noErr(t, "Stat(link)", err)
	if fi.Mode()&fs.ModeSymlink == 0 || fi.Mode().IsRegular() {
		t.Errorf("Stat follows symbolic links: Stat(link) mode %v, want a symlink", fi.Mode())
	}
	if f, err := fsys.Open("link"); err == nil {
		f.Close()
		t.Errorf("Open followed a symbolic link")
	}
	if _, err := fsys.CreateExcl("dangling"); err == nil || exists(fsys, "nowhere") {
		t.Errorf("CreateExcl through a dangling symbolic link succeeded (err %v)", err)
	} else {
		wantErr(t, "CreateExcl on a dangling symbolic link", err, fs.ErrExist)
	}
	if f, err := fsys.CreateExcl("ldir/x"); err == nil {
		f.Close()
		t.Errorf("CreateExcl through a symbolic link to a directory succeeded")
	}
	if exists(fsys, "dir/x") {
		t.Errorf("a file appeared in dir through the link ldir")
	}
	if _, err := fsys.ReadDir("ldir"); err == nil {
		t.Errorf("ReadDir followed a symbolic link to a directory")
	}
}

// symlinksNotEscaped checks that nothing is created through the link "out",
// which leads to outside, the parent of the root.
func symlinksNotEscaped(t TB, fsys core.FS, outside string) {
	t.Helper()
	if f, err := fsys.CreateExcl("out/escaped"); err == nil {
		f.Close()
		t.Errorf("CreateExcl through a symbolic link leading out of the root succeeded")
	}
	if err := fsys.Mkdir("out/escaped-dir"); err == nil {
		t.Errorf("Mkdir through a symbolic link leading out of the root succeeded")
	}
	if rootOf(fsys) == "" {
		return
	}
	for _, n := range []string{"escaped", "escaped-dir"} {
		if _, err := os.Lstat(filepath.Join(outside, n)); err == nil {
			t.Errorf("%s was created outside the root", filepath.Join(outside, n))
			os.RemoveAll(filepath.Join(outside, n))
		}
	}
}

func checkSyncAccepted(t TB, e *env) {
	fsys := e.newFS()
	f, err := fsys.CreateExcl("f")
	noErr(t, "CreateExcl", err)
	_, err = f.Write([]byte("x"))
	noErr(t, "Write", err)
	noErr(t, "File.Sync", f.Sync())
	noErr(t, "File.Sync again", f.Sync())
	noErr(t, "Close", f.Close())
	noErr(t, "SyncDir(.)", fsys.SyncDir("."))
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	noErr(t, "SyncDir(d)", fsys.SyncDir("d"))
	if err := fsys.SyncDir("missing"); err == nil {
		t.Errorf("SyncDir of a missing directory succeeded")
	}
	if s, ok := fsys.(core.FSSyncer); ok {
		noErr(t, "SyncAll", s.SyncAll())
	} else {
		t.Logf("no core.FSSyncer: fsync=batch syncs each file")
	}
}

func checkPathValidation(t TB, e *env) {
	fsys := e.newFS()
	writeFile(t, fsys, "ok", []byte("ok"))
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	bad := []string{"..", "../x", "d/../x", "d/../../x", "/x", "/etc/passwd", "", "./x", "x/", "d//x", "d/."}
	if abs := rootOf(fsys); abs != "" {
		bad = append(bad, filepath.Join(abs, "ok"))
	}
	for _, name := range bad {
		if f, err := fsys.CreateExcl(name); err == nil {
			f.Close()
			t.Errorf("CreateExcl(%q) succeeded", name)
		}
		if f, err := fsys.Open(name); err == nil {
			f.Close()
			t.Errorf("Open(%q) succeeded", name)
		}
		if err := fsys.Mkdir(name); err == nil {
			t.Errorf("Mkdir(%q) succeeded", name)
		}
		if err := fsys.Rename("ok", name); err == nil {
			t.Errorf("Rename(ok, %q) succeeded", name)
			return
		}
		if err := fsys.Rename(name, "ok2"); err == nil {
			t.Errorf("Rename(%q, ok2) succeeded", name)
		}
		if _, err := fsys.Stat(name); err == nil {
			t.Errorf("Stat(%q) succeeded", name)
		}
		if _, err := fsys.ReadDir(name); err == nil {
			t.Errorf("ReadDir(%q) succeeded", name)
		}
		if c, err := fsys.Lock(name); err == nil {
			c.Release()
			t.Errorf("Lock(%q) succeeded", name)
		}
		if err := fsys.Remove(name); err == nil {
			t.Errorf("Remove(%q) succeeded", name)
		}
	}
	if got := tree(t, fsys); !slices.Equal(got, []string{"d/", "ok"}) {
		t.Errorf("after refused names, the root holds %q, want [d/ ok]", got)
	}
	if root := rootOf(fsys); root != "" {
		if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "x")); err == nil {
			t.Errorf("a name with .. created %s outside the root", filepath.Join(filepath.Dir(root), "x"))
		}
	}
}

// skipIfSharedLocks skips checks that need two conflicting claims in one process.
func (e *env) skipIfSharedLocks(t TB) {
	if e.cfg.SharedLocks {
		t.Skipf("Config.SharedLocks: claims do not conflict within one process on this FS")
	}
}

func checkClaimExclusive(t TB, e *env) {
	e.skipIfSharedLocks(t)
	fsys := e.newFS()
	c1, err := fsys.Lock("PRODUCER")
	noErr(t, "Lock", err)
	defer c1.Release()
	if !exists(fsys, "PRODUCER") {
		t.Errorf("Lock did not create the claim file")
	}
	c2, err := fsys.Lock("PRODUCER")
	if err == nil {
		c2.Release()
		t.Fatalf("a second Lock of a held claim succeeded: claims are not exclusive")
	}
	wantPathErr(t, "second Lock", err, core.ErrLocked)
	// Another claim file is independent.
	c3, err := fsys.Lock("CONSUMER")
	noErr(t, "Lock of another claim file", err)
	noErr(t, "Release", c3.Release())
	// A claim file can live in a directory too, and must not be a directory.
	noErr(t, "Mkdir", fsys.Mkdir("dir"))
	if c, err := fsys.Lock("dir"); err == nil {
		c.Release()
		t.Errorf("Lock of a directory succeeded")
	}
	_, err = fsys.Lock("missing/CLAIM")
	wantErr(t, "Lock in a missing directory", err, fs.ErrNotExist)
}

func checkClaimRace(t TB, e *env) {
	e.skipIfSharedLocks(t)
	fsys := e.newFS()
	const workers = 8
	for round := range 20 {
		claims := make([]core.Claim, workers)
		errs := raceAll(workers, func(w int) (err error) {
			claims[w], err = fsys.Lock("CLAIM")
			return err
		})
		won := 0
		for w := range workers {
			if errs[w] == nil {
				won++
			} else if !errors.Is(errs[w], core.ErrLocked) {
				t.Errorf("round %d: losing Lock: %v, want core.ErrLocked", round, errs[w])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d racing Locks succeeded, want exactly 1", round, won, workers)
		}
		for w := range workers {
			if errs[w] == nil {
				noErr(t, "Release", claims[w].Release())
			}
		}
	}
}

func checkClaimReleased(t TB, e *env) {
	e.skipIfSharedLocks(t)
	fsys := e.newFS()
	for i := range 5 {
		c, err := fsys.Lock("PRODUCER")
		if err != nil {
			t.Fatalf("Lock #%d after Release: %v (Release did not release)", i, err)
		}
		if _, err := fsys.Lock("PRODUCER"); err == nil {
			t.Fatalf("Lock #%d: a second holder got the claim", i)
		}
		noErr(t, "Release", c.Release())
		if !exists(fsys, "PRODUCER") {
			t.Fatalf("Release removed the claim file; it must stay")
		}
	}
}

func checkClaimContent(t TB, e *env) {
	fsys := e.newFS()
	c, err := fsys.Lock("PRODUCER")
	noErr(t, "Lock", err)
	content := ""
	for _, w := range []struct {
		what string
		data string
		off  int64
		want string
	}{
		{"WriteAt 0", "0123456789", 0, "0123456789"},
		{"a shorter WriteAt 0", "ab", 0, "ab23456789"},
		{"WriteAt 4", "XY", 4, "ab23XY6789"},
		{"WriteAt past the end", "Z", 12, "ab23XY6789\x00\x00Z"},
	} {
		n, err := c.WriteAt([]byte(w.data), w.off)
		noErr(t, "Claim.WriteAt", err)
		if n != len(w.data) {
			t.Errorf("Claim.WriteAt wrote %d bytes of %d", n, len(w.data))
		}
		noErr(t, "Claim.Sync", c.Sync())
		if got := string(mustRead(t, fsys, "PRODUCER")); got != w.want {
			t.Fatalf("after %s the claim file holds %q, want %q (WriteAt writes in place and never truncates)", w.what, got, w.want)
		}
		content = w.want
	}
	noErr(t, "Release", c.Release())
	if got := string(mustRead(t, fsys, "PRODUCER")); got != content {
		t.Errorf("claim file holds %q after Release, want %q", got, content)
	}
	// A new holder sees the old content until it writes.
	c, err = fsys.Lock("PRODUCER")
	noErr(t, "Lock again", err)
	if got := string(mustRead(t, fsys, "PRODUCER")); got != content {
		t.Errorf("Lock changed the claim file: %q", got)
	}
	noErr(t, "Release", c.Release())
	// Through the spool: the holder is recorded and readable by others.
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	h := readHolderFile(t, fsys, core.ProducerFile)
	if h.PID != os.Getpid() || h.Role != "producer" || h.NextSeq == nil {
		t.Errorf("PRODUCER records %+v, want this pid, role producer and a next sequence", h)
	}
	noErr(t, "Close", p.Close())
}

func readHolderFile(t TB, fsys core.FS, name string) core.Holder {
	t.Helper()
	h, _, err := core.ReadHolder(fsys, name)
	if err != nil || h == nil {
		// ReadHolder tries the lock; read the record directly instead.
		b := mustRead(t, fsys, name)
		t.Fatalf("cannot read the holder in %s (%q): %v", name, b, err)
	}
	return *h
}

func checkDirWatch(t TB, e *env) {
	fsys := e.newFS()
	dw, ok := fsys.(core.DirWatcher)
	if !ok {
		t.Skipf("the FS is not a core.DirWatcher: consumers poll")
	}
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	w, err := dw.WatchDir("d")
	noErr(t, "WatchDir", err)
	defer w.Close()
	wait := func(what string) {
		t.Helper()
		select {
		case <-w.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up within 5s after %s", what)
		case <-e.ctx.Done():
			t.Fatalf("canceled waiting for a wake-up after %s", what)
		}
	}
	writeFile(t, fsys, "d/a.tmp", []byte("x"))
	wait("a create")
	// Drain a possible second report (create and close may both report).
	time.Sleep(20 * time.Millisecond)
	select {
	case <-w.C():
	default:
	}
	writeFile(t, fsys, "b.tmp", []byte("x"))
	noErr(t, "Rename", fsys.Rename("b.tmp", "d/b"))
	wait("a rename into the directory")
	_, err = dw.WatchDir("missing")
	if err == nil {
		t.Errorf("WatchDir of a missing directory succeeded")
	}
	// Through the spool: a consumer that polls once an hour wakes up.
	o := spoolOptions(t, "poll_interval=1h")
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	got := make(chan error, 1)
	go func() {
		ds, err := c.Read(e.ctx, 1)
		if err == nil && len(ds) == 1 && string(ds[0].Payload) != "wake" {
			err = fmt.Errorf("got %q", ds[0].Payload)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	_, err = p.Write(e.ctx, []core.Message{{Payload: []byte("wake")}})
	noErr(t, "Write", err)
	select {
	case err := <-got:
		noErr(t, "Read woken by a write", err)
	case <-time.After(5 * time.Second):
		t.Fatalf("a consumer with poll_interval=1h was not woken by a write within 5s")
	}
}

// checkSyncDurability checks, on an FS with a crash model, that what the
// durability rule promises survives a power cut.
func checkSyncDurability(t TB, e *env) {
	fsys := e.newFS()
	crash := crashModelOf(fsys)
	if crash == nil {
		t.Skipf("the FS has no crash model (implement conformance.CrashModel)")
	}
	noErr(t, "Mkdir", fsys.Mkdir("d"))
	noErr(t, "SyncDir(.)", fsys.SyncDir("."))
	for _, n := range []string{"kept", "renamed.tmp", "removed", "d/inner"} {
		f, err := fsys.CreateExcl(n)
		noErr(t, "CreateExcl", err)
		_, err = f.Write([]byte("data of " + n))
		noErr(t, "Write", err)
		noErr(t, "Sync", f.Sync())
		noErr(t, "Close", f.Close())
	}
	noErr(t, "SyncDir(.)", fsys.SyncDir("."))
	noErr(t, "SyncDir(d)", fsys.SyncDir("d"))
	noErr(t, "Rename", fsys.Rename("renamed.tmp", "renamed"))
	noErr(t, "Remove", fsys.Remove("removed"))
	noErr(t, "SyncDir(.)", fsys.SyncDir("."))
	c, err := fsys.Lock("CLAIM")
	noErr(t, "Lock", err)
	_, err = c.WriteAt([]byte("holder"), 0)
	noErr(t, "Claim.WriteAt", err)
	noErr(t, "Claim.Sync", c.Sync())
	defer c.Release()
	for _, keep := range []float64{0, 0.5} {
		after := crash(e.cfg.Seed, keep)
		for n, want := range map[string]string{"kept": "data of kept", "renamed": "data of renamed.tmp", "d/inner": "data of d/inner", "CLAIM": "holder"} {
			got, err := readFile(after, n)
			if err != nil || string(got) != want {
				t.Errorf("after a power cut (keeping %.0f%% of unsynced changes), %s holds %q (%v), want %q: it was synced", keep*100, n, got, err, want)
			}
		}
		for _, n := range []string{"renamed.tmp", "removed"} {
			if exists(after, n) {
				t.Errorf("after a power cut, %s is back though its rename or removal was synced", n)
			}
		}
	}
}
