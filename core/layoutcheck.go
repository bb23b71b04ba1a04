package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrLayoutMismatch is matched by the *LayoutError a consumer returns when
// the spool holds chunks its options cannot read: they sit in shard
// directories of another depth or width, or their names have another
// number of digits or another extension.
var ErrLayoutMismatch = errors.New("spool holds chunks these options do not read")

// maxForeignNames bounds the names a Survey keeps and a consumer remembers
// having warned about.
const maxForeignNames = 1000

// LayoutError is the error for chunks that sit where the configured layout
// does not look. Fix names the settings that would read the largest group
// of them; it is empty when no valid settings would.
type LayoutError struct {
	Spool   string // the spool root as the user named it
	Chunks  int    // payload files of this group
	Where   string // where they sit and how they are named
	Example string // one of them, relative to the spool root
	Fix     string // e.g. "shard_depth=2 shard_width=3"
	Others  int    // payload files of other groups that do not fit either
	// Fixed is the options with Fix applied, which read this group; nil
	// when Fix is empty.
	Fixed *Options
}

func (e *LayoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "spool %s: %s chunk(s) %s (e.g. %s) that these options do not read", e.Spool, thousands(e.Chunks), e.Where, e.Example)
	if e.Others > 0 {
		fmt.Fprintf(&b, ", and %s more named in other ways", thousands(e.Others))
	}
	if e.Fix != "" {
		b.WriteString(": set " + e.Fix)
	} else {
		b.WriteString(": no valid dir_spool options name them; move them out of the spool")
	}
	return b.String()
}

// Is reports ErrLayoutMismatch.
func (e *LayoutError) Is(target error) bool { return target == ErrLayoutMismatch }

// Survey is what a walk of a whole spool found outside its layout.
type Survey struct {
	// Foreign counts the files with the payload extension whose names do
	// not fit the naming pattern and layout: a consumer never delivers
	// them. It includes the chunks of Mismatch.
	Foreign int
	// ForeignNames are those of them that are not named like chunks
	// (those are described by Mismatch instead), sorted; at most
	// maxForeignNames of them.
	ForeignNames []string
	// Links are symbolic links found where chunks or shard directories
	// could be; they are never followed.
	Links []string
	// Mismatch describes chunks of another layout; nil when there are none.
	Mismatch *LayoutError
}

// shape is how a group of chunk-like files is laid out.
type shape struct {
	depth, width int // width -1: shard directories of mixed widths
	digits       int
	ext          string
}

// SurveyLayout walks the whole spool, without following a link, and reports
// the files a consumer with options o would never deliver: files with the
// payload extension that fit no chunk name, and chunk-like files of another
// layout (flat chunks in a sharded spool, shard directories in a flat one,
// names with another digit count or extension). It changes nothing, and
// stops with ctx's error once ctx is done.
func SurveyLayout(ctx context.Context, fsys FS, o Options) (*Survey, error) {
	l, err := o.Layout()
	if err != nil {
		return nil, err
	}
	sv := &surveyor{ctx: ctx, fsys: fsys, l: l, s: &Survey{}, groups: map[shape]*group{}}
	if err := sv.walk(".", nil); err != nil {
		return nil, err
	}
	slices.Sort(sv.s.ForeignNames)
	slices.Sort(sv.s.Links)
	sv.s.Mismatch = sv.mismatch(o)
	return sv.s, nil
}

type group struct {
	n       int
	example string
}

type surveyor struct {
	ctx    context.Context
	fsys   FS
	l      *Layout
	s      *Survey
	groups map[shape]*group
}

// walk surveys dir and, in order, the digit-named directories below it.
// It streams the listing where the FS can (DirScanner): it keeps counts,
// a few names, the subdirectories and the rare files whose verdict needs
// a look at their neighbours, never the whole listing.
func (sv *surveyor) walk(dir string, widths []int) error {
	if err := sv.ctx.Err(); err != nil {
		return err
	}
	var subdirs []string
	var maybe []otherExt
	err := sv.list(dir, func(name string, typ fs.FileMode) {
		switch {
		case typ&fs.ModeSymlink != 0:
			if allDigits(name) || strings.HasSuffix(name, sv.l.payloadExt) {
				sv.s.Links = appendCapped(sv.s.Links, joinPath(dir, name))
			}
		case typ.IsDir():
			if allDigits(name) && len(widths) < maxDigits {
				subdirs = append(subdirs, name)
			}
		case typ.IsRegular():
			if o, ok := sv.file(dir, name, widths); ok {
				maybe = append(maybe, o)
			}
		}
	})
	if err != nil {
		if dir != "." && errors.Is(err, fs.ErrNotExist) {
			return nil // removed by a consumer while we walked
		}
		return err
	}
	sv.otherExts(dir, maybe)
	slices.Sort(subdirs)
	for _, name := range subdirs {
		if err := sv.walk(joinPath(dir, name), append(widths, len(name))); err != nil {
			return err
		}
	}
	return nil
}

// list calls fn for every entry of dir: streamed where the FS can. Once
// ctx is done it calls fn no more and returns ctx's error.
func (sv *surveyor) list(dir string, fn func(name string, typ fs.FileMode)) error {
	if sc, ok := sv.fsys.(DirScanner); ok {
		i, stopped := 0, false
		err := sc.ScanDir(dir, func(name string, typ fs.FileMode) {
			if i++; stopped || cancelled(sv.ctx, i) != nil {
				stopped = true
				return
			}
			fn(name, typ)
		})
		if err == nil {
			err = sv.ctx.Err()
		}
		return err
	}
	entries, err := sv.fsys.ReadDir(dir)
	for i, e := range entries {
		if err := cancelled(sv.ctx, i); err != nil {
			return err
		}
		fn(e.Name(), e.Type())
	}
	return err
}

// otherExt is a file named digits, the pattern's suffix and another plain
// extension: a chunk written with another payload_extension when its
// sidecar is beside it and no payload of this layout is.
type otherExt struct {
	name, stem string // stem: the digits
	sh         shape
}

// file looks at one regular file of dir. It reports a file that may be a
// chunk of another extension, for otherExts to decide.
func (sv *surveyor) file(dir, name string, widths []int) (otherExt, bool) {
	l := sv.l
	if strings.HasSuffix(name, TmpSuffix) || (dir == "." && isControlFile(name)) {
		return otherExt{}, false
	}
	if _, _, ok := l.ParseLeaf(dir, name); ok {
		return otherExt{}, false
	}
	k := 0
	for k < len(name) && name[k] >= '0' && name[k] <= '9' {
		k++
	}
	rest := name[k:]
	full := joinPath(dir, name)
	if strings.HasSuffix(name, l.payloadExt) {
		sv.s.Foreign++
		if k > 0 && rest == l.payloadTail {
			sv.add(shape{len(widths), uniform(widths), k, l.payloadExt}, full)
		} else {
			sv.s.ForeignNames = appendCapped(sv.s.ForeignNames, full)
		}
		return otherExt{}, false
	}
	ext, ok := strings.CutPrefix(rest, l.suffix)
	if !ok || k == 0 || l.metaExt == "" || !plainExt(ext) {
		return otherExt{}, false
	}
	return otherExt{name: full, stem: name[:k], sh: shape{len(widths), uniform(widths), k, ext}}, true
}

// otherExts counts the files of maybe that have a sidecar beside them and
// no payload of this layout: chunks written with another payload_extension.
func (sv *surveyor) otherExts(dir string, maybe []otherExt) {
	exists := func(name string) bool {
		_, err := sv.fsys.Stat(joinPath(dir, name))
		return err == nil
	}
	for _, o := range maybe {
		if exists(o.stem+sv.l.metaTail) && !exists(o.stem+sv.l.payloadTail) {
			sv.add(o.sh, o.name)
		}
	}
}

// plainExt reports whether ext is '.' and letters, digits, '_' or '-' only:
// an extension a producer could have been given, not a backup's ".orig" or
// "~" tail.
func plainExt(ext string) bool {
	if len(ext) < 2 || ext[0] != '.' {
		return false
	}
	for _, r := range ext[1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (sv *surveyor) add(sh shape, name string) {
	g := sv.groups[sh]
	if g == nil {
		g = &group{example: name}
		sv.groups[sh] = g
	}
	g.example = min(g.example, name)
	g.n++
}

func uniform(widths []int) int {
	if len(widths) == 0 {
		return 0
	}
	for _, w := range widths {
		if w != widths[0] {
			return -1
		}
	}
	return widths[0]
}

func appendCapped(s []string, name string) []string {
	if len(s) < maxForeignNames {
		s = append(s, name)
	}
	return s
}

// mismatch describes the largest group of chunk-like files, or returns nil
// when there is none.
func (sv *surveyor) mismatch(o Options) *LayoutError {
	if len(sv.groups) == 0 {
		return nil
	}
	shapes := make([]shape, 0, len(sv.groups))
	total := 0
	for sh, g := range sv.groups {
		shapes = append(shapes, sh)
		total += g.n
	}
	sort.Slice(shapes, func(i, j int) bool {
		a, b := sv.groups[shapes[i]], sv.groups[shapes[j]]
		if a.n != b.n {
			return a.n > b.n
		}
		return a.example < b.example
	})
	sh, g := shapes[0], sv.groups[shapes[0]]
	fix, fixed := sv.fix(o, sh)
	return &LayoutError{Spool: o.Path, Chunks: g.n, Where: sv.where(sh), Example: g.example, Fix: fix, Fixed: fixed, Others: total - g.n}
}

func (sv *surveyor) where(sh shape) string {
	var parts []string
	switch {
	case sh.depth == 0 && sv.l.depth > 0:
		parts = append(parts, "sit in the spool root, not in shard directories")
	case sh.depth == 0:
		parts = append(parts, "sit in the spool root")
	case sh.width < 0:
		parts = append(parts, fmt.Sprintf("sit %d level(s) deep in shard directories of mixed widths", sh.depth))
	default:
		parts = append(parts, fmt.Sprintf("sit under %d-digit shard directories %d level(s) deep", sh.width, sh.depth))
	}
	leaf := sv.l.leafDigits
	if sh.depth != sv.l.depth || sh.width != sv.l.width {
		leaf = -1 // the leaf digit count changes with the layout anyway
	}
	if leaf >= 0 && sh.digits != leaf {
		parts = append(parts, fmt.Sprintf("with %d-digit file names", sh.digits))
	}
	if sh.ext != sv.l.payloadExt {
		parts = append(parts, "with the extension "+sh.ext)
	}
	return strings.Join(parts, ", ")
}

// fix names the settings that differ from o and would read files of sh,
// and returns o with them applied; "" and nil when no valid settings would.
func (sv *surveyor) fix(o Options, sh shape) (string, *Options) {
	if sh.width < 0 {
		return "", nil
	}
	n := sh.depth*sh.width + sh.digits
	pattern := "{seq:0" + strconv.Itoa(n) + "}" + sv.l.suffix
	if _, err := NewLayout(pattern, sh.depth, sh.width, sh.ext, o.MetadataExt); err != nil {
		return "", nil
	}
	fixed := o
	var set []string
	if sh.depth != o.ShardDepth {
		set = append(set, "shard_depth="+strconv.Itoa(sh.depth))
		fixed.ShardDepth = sh.depth
	}
	if sh.depth > 0 && (sh.width != o.ShardWidth || sh.depth != o.ShardDepth) {
		set = append(set, "shard_width="+strconv.Itoa(sh.width))
		fixed.ShardWidth = sh.width
	}
	if n != sv.l.digits {
		set = append(set, "naming_pattern="+pattern)
		fixed.NamingPattern = pattern
	}
	if sh.ext != o.PayloadExt {
		set = append(set, "payload_extension="+sh.ext)
		fixed.PayloadExt = sh.ext
	}
	return strings.Join(set, " "), &fixed
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
