package dropzone

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// sourceState is the progress file's content.
type sourceState struct {
	// Done lists the files read and acknowledged completely (only those
	// still in the directory).
	Done []string `json:"done"`
	// Partial maps a file being read to how many of its records, from the
	// start, were acknowledged.
	Partial map[string]int64 `json:"partial,omitempty"`
}

// stateFile is where a source keeps its progress: a file NAME, its lock
// NAME.lock, and during a save NAME.tmp (the new content) and NAME.old.tmp
// (the content it replaces).
//
// The confined FS never replaces a name on rename, so a save is a swap that
// a crash or power cut at any instant leaves recoverable:
//
//  1. write NAME.tmp, fsync it and its directory;
//  2. rename NAME to NAME.old.tmp;
//  3. rename NAME.tmp to NAME, fsync the directory: the save is durable;
//  4. remove NAME.old.tmp.
//
// load reads NAME when it exists. When it does not but NAME.old.tmp does,
// the crash fell between steps 2 and 3, after NAME.tmp was complete and
// durable: load finishes the swap with it. When neither exists, nothing was
// ever saved and a NAME.tmp is a torn first save, discarded. Between steps 2
// and 3 another program reading NAME finds it missing.
//
// Saves between two writes of NAME go to a journal, NAME.journal (see
// journal.go).
type stateFile struct {
	fsys    core.FS
	name    string // relative to fsys
	display string // the absolute path, for messages
	own     zoneFS // the FS of a state file outside the zone, closed with it
	claim   core.Claim

	journal      core.File // open for appending; nil until the first save after NAME is written
	journalSize  int64     // bytes appended to the journal
	snapshotSize int64     // bytes of NAME as last written
	broken       bool      // the journal may end torn: the next save writes NAME
}

// openState returns the state file at the absolute path statePath: through
// zone when it lies in the zone's tree, so that no link below the zone is
// followed on the way, else through a confined FS of its own directory.
func openState(zone core.FS, dir, statePath string) (*stateFile, error) {
	st := &stateFile{fsys: zone, display: statePath}
	if rel, err := filepath.Rel(dir, statePath); err == nil && rel != "." &&
		rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		st.name = filepath.ToSlash(rel)
		return st, nil
	}
	own, err := openDir("drop zone state directory", filepath.Dir(statePath), osfs.Options{})
	if err != nil {
		return nil, err
	}
	st.fsys, st.own, st.name = own, own, filepath.Base(statePath)
	return st, nil
}

func (st *stateFile) tmp() string { return st.name + ".tmp" }
func (st *stateFile) old() string { return st.name + ".old.tmp" }
func (st *stateFile) dir() string { return path.Dir(st.name) }

// lock takes the reader lock, NAME.lock: a second reader fails at once.
func (st *stateFile) lock() error {
	c, err := lock(st.fsys, st.name+".lock", st.display+".lock")
	if err != nil {
		return err
	}
	st.claim = c
	return nil
}

// owns reports whether name, an entry of the zone, is the state file or one
// of its companions (NAME.lock, NAME.journal, the names of a save): never
// input, whatever the pattern.
func (st *stateFile) owns(name string) bool {
	return st.own == nil && (name == st.name || strings.HasPrefix(name, st.name+"."))
}

// close releases the lock and the state directory's own FS.
func (st *stateFile) close() {
	st.closeJournal()
	if st.claim != nil {
		st.claim.Release()
		st.claim = nil
	}
	if st.own != nil {
		st.own.Close()
		st.own = nil
	}
}

// load reads the saved progress, finishing a save a crash interrupted and
// replaying the journal.
func (st *stateFile) load() (sourceState, error) {
	s, err := st.loadSnapshot()
	if err != nil {
		return s, err
	}
	if s.Partial == nil {
		s.Partial = map[string]int64{}
	}
	had, err := st.replay(&s)
	if err != nil {
		return s, bridge.Permanent(err) // retrying cannot fix it
	}
	s.tidy()
	if had {
		return s, st.compact(s)
	}
	return s, nil
}

// loadSnapshot reads NAME.
func (st *stateFile) loadSnapshot() (sourceState, error) {
	var s sourceState
	b, err := readFile(st.fsys, st.name)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = st.recover()
	}
	if err != nil {
		return s, st.problem("read", err)
	}
	if err := st.clean(); err != nil {
		return s, err
	}
	st.snapshotSize = int64(len(b))
	if b != nil {
		if err := json.Unmarshal(b, &s); err != nil {
			// Retrying cannot fix it: the route stops at once.
			return s, bridge.Permanent(fmt.Errorf("state file %s is not valid: %w", st.display, err))
		}
	}
	return s, nil
}

// recover handles a missing NAME: it returns the content of an interrupted
// save and puts it in place, or nil when nothing was ever saved.
func (st *stateFile) recover() ([]byte, error) {
	if _, err := st.fsys.Stat(st.old()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	from := st.tmp()
	b, err := readFile(st.fsys, from)
	if errors.Is(err, fs.ErrNotExist) {
		// Not a state this sequence leaves; the last complete one is old.
		from = st.old()
		b, err = readFile(st.fsys, from)
	}
	if err != nil {
		return nil, err
	}
	if err := st.fsys.Rename(from, st.name); err != nil {
		return nil, err
	}
	return b, st.fsys.SyncDir(st.dir())
}

// clean removes what an interrupted save left beside a complete NAME.
func (st *stateFile) clean() error {
	for _, n := range []string{st.tmp(), st.old()} {
		if _, err := removeIfPresent(st.fsys, n); err != nil {
			return st.problem("remove leftover", err)
		}
	}
	return nil
}

// save replaces NAME durably, as the type's comment describes, and returns
// its size.
func (st *stateFile) save(s sourceState) (int64, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := st.writeTmp(append(b, '\n')); err != nil {
		return 0, st.problem("save progress", err)
	}
	if _, err := removeIfPresent(st.fsys, st.old()); err != nil {
		return 0, st.problem("save progress", err)
	}
	if err := st.fsys.Rename(st.name, st.old()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, st.problem("save progress", err)
	}
	if err := st.fsys.Rename(st.tmp(), st.name); err != nil {
		return 0, st.problem("save progress", err)
	}
	if err := st.fsys.SyncDir(st.dir()); err != nil {
		return 0, st.problem("save progress", err)
	}
	if _, err := removeIfPresent(st.fsys, st.old()); err != nil {
		return 0, st.problem("save progress", err)
	}
	return int64(len(b)) + 1, nil
}

// writeTmp writes data to a fresh NAME.tmp and makes it and its entry
// durable. Whatever sat on that name before (a torn save, or a link
// planted there) is removed, never written through.
func (st *stateFile) writeTmp(data []byte) error {
	if _, err := removeIfPresent(st.fsys, st.tmp()); err != nil {
		return err
	}
	f, err := st.fsys.CreateExcl(st.tmp())
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = st.fsys.SyncDir(st.dir())
	}
	return err
}

// problem wraps err from op on the state file, explaining a symbolic link.
func (st *stateFile) problem(op string, err error) error {
	if notRegular(err) {
		return fmt.Errorf("%s %s: %w (the state file and its .tmp names must be regular files; mqb never follows a symbolic link)", op, st.display, err)
	}
	return fmt.Errorf("%s %s: %w", op, st.display, err)
}
