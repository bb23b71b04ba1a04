package dropzone

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// The state file's journal. Writing the whole state on every
// acknowledgement costs as much as the list of finished files is long, so
// a zone of N files took N² to drain. A save appends instead what it
// changed (the files it finished, the acknowledged counts it moved) as one
// JSON line to NAME.journal and fsyncs it. Once the journal would outgrow
// both the state NAME and journalFloor, the save writes the whole state to
// NAME (the swap of stateFile) and removes the journal: every byte of state
// is written a bounded number of times.
//
// load replays the journal over NAME, then writes the result to NAME and
// removes the journal, so that a new journal never follows a line a crash
// cut short; a clean close does the same. Replaying is idempotent: a
// journal that a crash left beside the NAME written from it (between the
// swap and the removal) adds files already finished and counts already
// reached, since counts only grow and the larger one is kept.
//
// Only the last line can be torn: each line is fsync'd before the next is
// written, and after a failed write nothing more is appended (the next save
// writes NAME). A last line that does not parse is such a save, whose
// acknowledgement never returned: it is ignored. One before it is damage,
// which stops the route.

// journalFloor is the size the journal may reach before a save writes the
// whole state, however small the state. A variable for tests.
var journalFloor int64 = 64 << 10

func (st *stateFile) journalName() string { return st.name + ".journal" }

// record saves change durably: appended to the journal, or, when the
// journal would grow past its bound or the last append failed, by writing
// all of s to NAME.
func (st *stateFile) record(s, change sourceState) error {
	line, err := json.Marshal(change)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if st.broken || st.journalSize+int64(len(line)) > max(st.snapshotSize, journalFloor) {
		return st.compact(s)
	}
	if err := st.appendJournal(line); err != nil {
		st.closeJournal()
		st.broken = true
		return st.problem("save progress", err)
	}
	return nil
}

// appendJournal writes line to the journal and makes it durable, creating
// the journal (and making its name durable) first when it is not open.
func (st *stateFile) appendJournal(line []byte) error {
	if st.journal == nil {
		f, err := st.fsys.CreateExcl(st.journalName())
		if err != nil {
			return err // a name left there: the next save writes NAME and removes it
		}
		st.journal = f
		if err := st.fsys.SyncDir(st.dir()); err != nil {
			return err
		}
	}
	if _, err := st.journal.Write(line); err != nil {
		return err
	}
	if err := st.journal.Sync(); err != nil {
		return err
	}
	st.journalSize += int64(len(line))
	return nil
}

// compact writes s to NAME and removes the journal.
func (st *stateFile) compact(s sourceState) error {
	st.closeJournal()
	st.broken = true // until both steps are done
	n, err := st.save(s)
	if err != nil {
		return err
	}
	if _, err := removeIfPresent(st.fsys, st.journalName()); err != nil {
		return st.problem("remove the journal of", err)
	}
	st.broken, st.snapshotSize, st.journalSize = false, n, 0
	return nil
}

// flush writes s to NAME and removes the journal if saves went to the
// journal since NAME was last written, so that NAME alone holds the state.
func (st *stateFile) flush(s sourceState) error {
	if st.journalSize == 0 && !st.broken {
		return nil
	}
	return st.compact(s)
}

func (st *stateFile) closeJournal() {
	if st.journal != nil {
		st.journal.Close()
		st.journal = nil
	}
}

// replay applies the journal's lines to s in order, and reports whether
// there was a journal.
func (st *stateFile) replay(s *sourceState) (bool, error) {
	b, err := readFile(st.fsys, st.journalName())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, st.problem("read the journal of", err)
	}
	lines := bytes.SplitAfter(b, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		var change sourceState
		if err := json.Unmarshal(line, &change); err != nil {
			if i == len(lines)-1 {
				break // a save cut short: its acknowledgement never returned
			}
			return true, fmt.Errorf("the journal of state file %s is damaged at line %d: %w", st.display, i+1, err)
		}
		s.apply(change)
	}
	return true, nil
}

// apply adds change, one save's worth, to s: counts only grow, so the
// larger one is kept.
func (s *sourceState) apply(change sourceState) {
	s.Done = append(s.Done, change.Done...)
	for name, n := range change.Partial {
		s.Partial[name] = max(s.Partial[name], n)
	}
}

// tidy sorts Done, drops names it repeats, and forgets the counts of
// finished files.
func (s *sourceState) tidy() {
	slices.Sort(s.Done)
	s.Done = slices.Compact(s.Done)
	for _, name := range s.Done {
		delete(s.Partial, name)
	}
}
