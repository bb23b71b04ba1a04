package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrSamePlace is returned (wrapped in a *ConfigError) by NewRoute when two
// ends of a route are the same directory or file: a source that is its
// target would read its own output forever (and a draining route never
// ends), and a target that is its dead-letter endpoint would mix refused
// messages with the delivered ones.
var ErrSamePlace = errors.New("two ends of the route are the same place")

// Placed is implemented by a source or target that reads or writes a
// directory (a spool, a drop zone) or a file. NewRoute refuses a route two
// of whose ends name the same place.
type Placed interface {
	// Place returns the directory or file and the namespace it lives in:
	// BackendOS for the real filesystem (two spellings of one path — `..`,
	// a trailing slash, a symbolic link — are the same place there), or
	// another name, such as BackendMemFS, whose paths are compared as
	// cleaned text.
	Place() (namespace, path string)
}

// DirectoryReader is implemented by a source that reads the files that
// appear in its directory (a drop zone, a spool): a route that writes a
// file there which the source would read is refused too.
type DirectoryReader interface {
	Placed
	// Reads reports whether the source reads a file of this name that
	// appears in its directory.
	Reads(name string) bool
}

// StateKeeper is implemented by a source that keeps its progress in a file
// of its own (a drop zone's state file): a route whose output or
// dead_letter is that file is refused, since each would overwrite the
// other.
type StateKeeper interface {
	StatePlace() (namespace, path string)
}

// statePlace is the Placed of a StateKeeper's state file.
type statePlace struct{ StateKeeper }

func (s statePlace) Place() (string, string) { return s.StatePlace() }

// checkPlaces refuses a route two of whose ends (input, output and, when
// not nil, dead_letter) are the same place, or whose input reads a file
// the output or the dead_letter writes, or keeps its state there.
func checkPlaces(src Source, tgt, dead Target) error {
	for _, end := range []struct {
		side string
		t    Target
	}{{"output", tgt}, {"dead_letter", dead}} {
		if end.t == nil {
			continue
		}
		why := "so the route would read what it writes forever: give the " + end.side + " another path"
		if err := samePlace(src, end.t, "input", end.side, why); err != nil {
			return err
		}
		if err := readsFileOf(src, end.t, end.side, why); err != nil {
			return err
		}
		if sk, ok := src.(StateKeeper); ok {
			if err := samePlace(statePlace{sk}, end.t, "input's state file", end.side,
				"so each would overwrite the other: give the "+end.side+" another path"); err != nil {
				return err
			}
		}
	}
	if dead == nil {
		return nil
	}
	return samePlace(tgt, dead, "output", "dead_letter",
		"so refused messages would land among the delivered ones: give the dead_letter another path")
}

// FilePlaced is implemented by an end whose place is a file, not a
// directory (the file connector).
type FilePlaced interface {
	Placed
	PlaceIsFile()
}

// readsFileOf returns a configuration error when src reads the files of a
// directory and y writes a file there that src would read. (A directory
// written there, such as a spool, is none of src's: it reads files.)
func readsFileOf(src, y any, side, consequence string) error {
	dr, ok1 := src.(DirectoryReader)
	fp, ok2 := y.(FilePlaced)
	if !ok1 || !ok2 {
		return nil
	}
	zone, file, ok := placesOf(dr, fp)
	if !ok || filepath.Dir(file.key) != zone.key || !dr.Reads(filepath.Base(file.key)) {
		return nil
	}
	return &ConfigError{Err: fmt.Errorf("%w: the %s %s is a file that the input reads from %s, %s",
		ErrSamePlace, side, file.path, zone.key, consequence)}
}

// samePlace returns a configuration error, naming the ends a and b and
// saying why with consequence, when x and y are the same place.
func samePlace(x, y any, a, b, consequence string) error {
	xp, yp, ok := placesOf(x, y)
	if !ok || xp.key != yp.key {
		return nil
	}
	how := ""
	if filepath.Clean(xp.path) != filepath.Clean(yp.path) {
		how = fmt.Sprintf(" (%s and %s are both %s)", xp.path, yp.path, xp.key)
	}
	return &ConfigError{Err: fmt.Errorf("%w: the %s and the %s are both %s%s, %s",
		ErrSamePlace, a, b, xp.key, how, consequence)}
}

// place is where an end of a route reads or writes: its path as given and
// the key it is compared by (samePlaceKey).
type place struct{ path, key string }

// placesOf returns the places of x and y, when both are Placed in the same
// namespace.
func placesOf(x, y any) (place, place, bool) {
	xp, ok1 := x.(Placed)
	yp, ok2 := y.(Placed)
	if !ok1 || !ok2 {
		return place{}, place{}, false
	}
	xn, xd := xp.Place()
	yn, yd := yp.Place()
	if xn != yn {
		return place{}, place{}, false
	}
	return place{xd, samePlaceKey(xn, xd)}, place{yd, samePlaceKey(yn, yd)}, true
}

// samePlaceKey returns the text two places are compared by: the cleaned
// path, and for the real filesystem the directory or file it really is,
// following symbolic links. A path that does not exist yet is resolved
// through its nearest existing parent.
func samePlaceKey(namespace, dir string) string {
	dir = filepath.Clean(dir)
	if namespace != BackendOS {
		return dir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	var rest []string
	for p := dir; ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return dir
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}
