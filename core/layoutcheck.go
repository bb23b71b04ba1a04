package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	// ForeignNames are the first of them that are not named like chunks
	// (those are described by Mismatch instead), in walk order.
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

func (sv *surveyor) walk(dir string, widths []int) error {
	if err := sv.ctx.Err(); err != nil {
		return err
	}
	entries, err := sv.fsys.ReadDir(dir)
	if err != nil {
		if dir != "." && errors.Is(err, fs.ErrNotExist) {
			return nil // removed by a consumer while we walked
		}
		return err
	}
	// The stems (digits+suffix) of sidecars that have no payload of this
	// layout beside them: a payload of another extension may.
	var lone map[string]bool
	if sv.l.metaExt != "" {
		lone = map[string]bool{}
		for _, e := range entries {
			if stem, ok := strings.CutSuffix(e.Name(), sv.l.metaTail); ok {
				lone[stem] = true
			}
		}
		for _, e := range entries {
			if stem, ok := strings.CutSuffix(e.Name(), sv.l.payloadTail); ok {
				delete(lone, stem)
			}
		}
	}
	for i, e := range entries {
		if err := cancelled(sv.ctx, i); err != nil {
			return err
		}
		name, full := e.Name(), joinPath(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			if allDigits(name) || strings.HasSuffix(name, sv.l.payloadExt) {
				sv.s.Links = appendCapped(sv.s.Links, full)
			}
		case e.IsDir():
			if allDigits(name) && len(widths) < maxDigits {
				if err := sv.walk(full, append(widths, len(name))); err != nil {
					return err
				}
			}
		case e.Type().IsRegular():
			sv.file(dir, name, widths, lone)
		}
	}
	return nil
}

// file looks at one regular file of dir.
func (sv *surveyor) file(dir, name string, widths []int, lone map[string]bool) {
	l := sv.l
	if strings.HasSuffix(name, TmpSuffix) || (dir == "." && isControlFile(name)) {
		return
	}
	if _, _, ok := l.ParseLeaf(dir, name); ok {
		return
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
		return
	}
	// Digits, another plain extension, and a sidecar without a payload
	// beside it: a chunk written with another payload_extension.
	if ext, ok := strings.CutPrefix(rest, l.suffix); ok && k > 0 && plainExt(ext) && lone[name[:k]+l.suffix] {
		sv.add(shape{len(widths), uniform(widths), k, ext}, full)
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
	return &LayoutError{Spool: o.Path, Chunks: g.n, Where: sv.where(sh), Example: g.example, Fix: sv.fix(o, sh), Others: total - g.n}
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

// fix names the settings that differ from o and would read files of sh, or
// "" when no valid settings would.
func (sv *surveyor) fix(o Options, sh shape) string {
	if sh.width < 0 {
		return ""
	}
	n := sh.depth*sh.width + sh.digits
	pattern := "{seq:0" + strconv.Itoa(n) + "}" + sv.l.suffix
	if _, err := NewLayout(pattern, sh.depth, sh.width, sh.ext, o.MetadataExt); err != nil {
		return ""
	}
	var set []string
	if sh.depth != o.ShardDepth {
		set = append(set, "shard_depth="+strconv.Itoa(sh.depth))
	}
	if sh.depth > 0 && (sh.width != o.ShardWidth || sh.depth != o.ShardDepth) {
		set = append(set, "shard_width="+strconv.Itoa(sh.width))
	}
	if n != sv.l.digits {
		set = append(set, "naming_pattern="+pattern)
	}
	if sh.ext != o.PayloadExt {
		set = append(set, "payload_extension="+sh.ext)
	}
	return strings.Join(set, " ")
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
