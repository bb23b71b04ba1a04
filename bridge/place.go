package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ErrSamePlace is returned (wrapped in a *ConfigError) by NewRoute when two
// ends of a route are the same directory, file or broker topic: a source
// that is its target would read its own output forever (and a draining
// route never ends), and a target that is its dead-letter endpoint would
// mix refused messages with the delivered ones.
var ErrSamePlace = errors.New("two ends of the route are the same place")

// Placed is implemented by a source or target that reads or writes a
// directory (a spool, a drop zone), a file, or standard input or output.
// NewRoute refuses a route two of whose ends name the same place, and
// RoutesApart two routes that would share one.
type Placed interface {
	// Place returns the directory or file and the namespace it lives in:
	// BackendOS for the real filesystem (two spellings of one path — `..`,
	// a trailing slash, a symbolic link — are the same place there), or
	// another name, such as BackendMemFS, whose paths are compared as
	// cleaned text.
	Place() (namespace, path string)
}

// MessageDirectory is implemented by an end whose directory holds files
// that are read as messages: a spool (every name in it) or a drop zone
// (the names its readers take). The route itself reads them when the
// directory is its input, other programs when it is the output or the
// dead_letter. A route that writes a file there (the file connector) is
// refused: the file would be read as a message, even half written.
type MessageDirectory interface {
	Placed
	// Reads reports whether a file at this path in the directory (a name,
	// or a slash-separated path into a subdirectory) is read as a message.
	Reads(rel string) bool
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
		if err := fileInDirectory(src, "the input", end.t, "the "+end.side, why); err != nil {
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
	if err := samePlace(tgt, dead, "output", "dead_letter",
		"so refused messages would land among the delivered ones: give the dead_letter another path"); err != nil {
		return err
	}
	readBy := "even while it is half written: give the %s another path"
	if err := fileInDirectory(tgt, "the output", dead, "the dead_letter", fmt.Sprintf(readBy, "dead_letter")); err != nil {
		return err
	}
	return fileInDirectory(dead, "the dead_letter", tgt, "the output", fmt.Sprintf(readBy, "output"))
}

// FilePlaced is implemented by an end whose place is a file, not a
// directory (the file connector).
type FilePlaced interface {
	Placed
	PlaceIsFile()
}

// fileInDirectory returns a configuration error when x is a
// MessageDirectory and y writes a file there that is read as a message.
// dirSide and side name the two ends ("the input", "route a's output"). (A directory made there, such as a spool, is
// not: a spool or a drop zone reads files.)
func fileInDirectory(x any, dirSide string, y any, side, consequence string) error {
	md, ok1 := x.(MessageDirectory)
	fp, ok2 := y.(FilePlaced)
	if !ok1 || !ok2 {
		return nil
	}
	dir, file, ok := placesOf(md, fp)
	if !ok {
		return nil
	}
	rel, err := filepath.Rel(dir.key, file.key)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || !md.Reads(filepath.ToSlash(rel)) {
		return nil
	}
	return &ConfigError{Err: fmt.Errorf("%w: %s %s is a file inside %s %s, whose files are read as messages, %s",
		ErrSamePlace, side, file.path, dirSide, dir.key, consequence)}
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
