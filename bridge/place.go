package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// ErrSameDirectory is returned (wrapped in a *ConfigError) by NewRoute when
// the source and the target of a route are the same directory: the route
// would read its own output forever (and a draining route never ends).
var ErrSameDirectory = errors.New("source and target are the same directory")

// Placed is implemented by a source or target that reads or writes a
// directory: a spool, a drop zone. NewRoute refuses a route whose two
// sides name the same place.
type Placed interface {
	// Place returns the directory and the namespace it lives in: BackendOS
	// for the real filesystem (two spellings of one directory — `..`, a
	// trailing slash, a symbolic link — are the same place there), or
	// another name, such as BackendMemFS, whose paths are compared as
	// cleaned text.
	Place() (namespace, dir string)
}

// checkPlaces refuses a route whose source and target are the same place;
// side names the target in the error ("output", "dead_letter").
func checkPlaces(src Source, tgt Target, side string) error {
	sp, ok1 := src.(Placed)
	tp, ok2 := tgt.(Placed)
	if !ok1 || !ok2 {
		return nil
	}
	sn, sd := sp.Place()
	tn, td := tp.Place()
	if sn != tn {
		return nil
	}
	a, b := samePlaceKey(sn, sd), samePlaceKey(tn, td)
	if a != b {
		return nil
	}
	how := ""
	if filepath.Clean(sd) != filepath.Clean(td) {
		how = fmt.Sprintf(" (%s and %s are both %s)", sd, td, a)
	}
	return &ConfigError{Err: fmt.Errorf("%w: the input and the %s are both %s%s, so the route would read its own output forever: give the %s another directory",
		ErrSameDirectory, side, a, how, side)}
}

// samePlaceKey returns the text two places are compared by: the cleaned
// path, and for the real filesystem the directory it really is, following
// symbolic links. A directory that does not exist yet is resolved through
// its nearest existing parent.
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
