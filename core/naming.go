package core

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/mqb-project/mqb/core/option"
)

// TmpSuffix is appended to a chunk file's final name while it is written.
const TmpSuffix = ".tmp"

// Names of the control files at the spool root.
const (
	ProducerFile = "PRODUCER"
	ConsumerFile = "CONSUMER"
	DoneFile     = "DONE"
)

// maxDigits is the widest sequence a uint64 can hold in every value.
const maxDigits = 19

// Layout maps sequence numbers to chunk file names and back. It is built from
// naming_pattern, shard_depth, shard_width, payload_extension and
// metadata_extension, and is safe for concurrent use.
type Layout struct {
	digits      int    // N in {seq:N}
	suffix      string // literal text after the token
	depth       int    // shard directories
	width       int    // digits per shard directory
	payloadExt  string
	metaExt     string // "" means no sidecars
	max         uint64 // largest sequence that fits
	leafDigits  int    // digits left in the file name
	payloadTail string // suffix + payloadExt
	metaTail    string // suffix + metaExt
}

// ChunkKind tells what a chunk file name stands for.
type ChunkKind int

// The kinds of chunk files.
const (
	KindPayload ChunkKind = iota + 1
	KindSidecar
	KindPayloadTmp
	KindSidecarTmp
)

// NewLayout validates the naming options and returns the layout.
func NewLayout(pattern string, depth, width int, payloadExt, metaExt string) (*Layout, error) {
	digits, suffix, err := parsePattern(pattern)
	if err != nil {
		return nil, err
	}
	if depth < 0 {
		return nil, &option.Error{Field: "shard_depth", Value: strconv.Itoa(depth), Msg: "must be 0 or more"}
	}
	if depth > 0 && width < 1 {
		return nil, &option.Error{Field: "shard_width", Value: strconv.Itoa(width), Msg: "must be at least 1 when shard_depth is set"}
	}
	if depth > 0 && depth*width >= digits {
		return nil, &option.Error{Field: "shard_depth", Value: strconv.Itoa(depth),
			Msg: fmt.Sprintf("shard_depth*shard_width (%d*%d) must be less than the %d sequence digits of naming_pattern", depth, width, digits)}
	}
	if err := checkExt("payload_extension", payloadExt, false); err != nil {
		return nil, err
	}
	if err := checkExt("metadata_extension", metaExt, true); err != nil {
		return nil, err
	}
	if metaExt != "" && (strings.HasSuffix(payloadExt, metaExt) || strings.HasSuffix(metaExt, payloadExt)) {
		return nil, &option.Error{Field: "metadata_extension", Value: metaExt,
			Msg: fmt.Sprintf("must differ from payload_extension %q and not end with it (or it with this)", payloadExt)}
	}
	l := &Layout{digits: digits, suffix: suffix, depth: depth, width: width, payloadExt: payloadExt, metaExt: metaExt}
	if depth == 0 {
		l.width = 0
	}
	l.leafDigits = digits - l.depth*l.width
	l.max = pow10(digits) - 1
	l.payloadTail = suffix + payloadExt
	l.metaTail = suffix + metaExt
	return l, nil
}

func pow10(n int) uint64 {
	v := uint64(1)
	for range n {
		v *= 10
	}
	return v
}

func parsePattern(p string) (digits int, suffix string, err error) {
	bad := func(msg string) (int, string, error) {
		return 0, "", &option.Error{Field: "naming_pattern", Value: p, Msg: msg}
	}
	if !strings.HasPrefix(p, "{seq:") {
		return bad("must start with the {seq:N} token, for example {seq:09}")
	}
	end := strings.IndexByte(p, '}')
	if end < 0 {
		return bad("the {seq:N} token is not closed")
	}
	n, convErr := strconv.Atoi(p[len("{seq:"):end])
	if convErr != nil || n < 1 || n > maxDigits {
		return bad(fmt.Sprintf("N in {seq:N} must be a number of digits from 1 to %d", maxDigits))
	}
	suffix = p[end+1:]
	switch {
	case strings.ContainsAny(suffix, "/\\{}\x00"):
		return bad("text after {seq:N} must not contain '/', '\\', '{', '}' or NUL")
	case strings.Contains(suffix, ".."):
		return bad("text after {seq:N} must not contain '..'")
	case strings.HasSuffix(suffix, TmpSuffix):
		return bad("text after {seq:N} must not end with .tmp")
	}
	return n, suffix, nil
}

func checkExt(field, ext string, mayBeEmpty bool) error {
	if ext == "" {
		if mayBeEmpty {
			return nil
		}
		return &option.Error{Field: field, Msg: "must not be empty"}
	}
	switch {
	case ext[0] != '.':
		return &option.Error{Field: field, Value: ext, Msg: "must start with '.'"}
	case len(ext) < 2 || strings.ContainsAny(ext, "/\\{}\x00") || strings.Contains(ext, ".."):
		return &option.Error{Field: field, Value: ext, Msg: "must be '.' followed by a name without '/', '\\', '{', '}', '..' or NUL"}
	case ext == TmpSuffix || strings.HasSuffix(ext, TmpSuffix):
		return &option.Error{Field: field, Value: ext, Msg: "must not end with .tmp (reserved for files being written)"}
	}
	return nil
}

// MaxSeq returns the largest sequence number the pattern can name.
func (l *Layout) MaxSeq() uint64 { return l.max }

// Sidecars reports whether chunks have a metadata sidecar.
func (l *Layout) Sidecars() bool { return l.metaExt != "" }

// Depth returns the number of shard directory levels.
func (l *Layout) Depth() int { return l.depth }

// Width returns the number of digits in each shard directory name.
func (l *Layout) Width() int { return l.width }

// Dir returns the shard directory of seq ("." when not sharded).
func (l *Layout) Dir(seq uint64) string {
	if l.depth == 0 {
		return "."
	}
	d := l.pad(seq)
	var b strings.Builder
	for i := range l.depth {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(d[i*l.width : (i+1)*l.width])
	}
	return b.String()
}

// Payload returns the final payload name of seq, relative to the root.
func (l *Layout) Payload(seq uint64) string { return l.join(seq, l.payloadTail) }

// Sidecar returns the final sidecar name of seq ("" without sidecars).
func (l *Layout) Sidecar(seq uint64) string {
	if l.metaExt == "" {
		return ""
	}
	return l.join(seq, l.metaTail)
}

// SidecarOf returns the sidecar name that belongs to a payload name.
func (l *Layout) SidecarOf(payload string) string {
	if l.metaExt == "" {
		return ""
	}
	return strings.TrimSuffix(payload, l.payloadExt) + l.metaExt
}

func (l *Layout) pad(seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	if len(s) < l.digits {
		s = strings.Repeat("0", l.digits-len(s)) + s
	}
	return s
}

func (l *Layout) join(seq uint64, tail string) string {
	d := l.pad(seq)
	leaf := d[l.depth*l.width:] + tail
	if l.depth == 0 {
		return leaf
	}
	return l.Dir(seq) + "/" + leaf
}

// chunkNames returns every name of chunk seq with few allocations: its
// directory, its final payload and sidecar names and the names they are
// written under (the final names plus TmpSuffix when atomic, else the
// same). The sidecar names are "" without sidecars.
func (l *Layout) chunkNames(seq uint64, atomic bool) (dir, payload, payTmp, sidecar, sideTmp string) {
	var digits [maxDigits + 1]byte
	d := strconv.AppendUint(digits[:0], seq, 10)
	pad := l.digits - len(d)
	if pad < 0 { // never for a sequence the producer hands out
		payload, sidecar = l.Payload(seq), l.Sidecar(seq)
		payTmp, sideTmp = payload, sidecar
		if atomic {
			payTmp += TmpSuffix
			if sidecar != "" {
				sideTmp += TmpSuffix
			}
		}
		return l.Dir(seq), payload, payTmp, sidecar, sideTmp
	}
	// dir/leaf<payloadTail>[.tmp] then dir/leaf<metaTail>[.tmp], built in
	// one buffer (on the stack unless the extensions are long) and made
	// one string: every name is a slice of it.
	var buf [128]byte
	b := buf[:0]
	for i := range l.digits {
		if l.depth > 0 && i > 0 && i%l.width == 0 && i/l.width <= l.depth {
			b = append(b, '/')
		}
		if i < pad {
			b = append(b, '0')
		} else {
			b = append(b, d[i-pad])
		}
	}
	stem := len(b)
	b = append(b, l.payloadTail...)
	payEnd := len(b)
	if atomic {
		b = append(b, TmpSuffix...)
	}
	sideStart, sideEnd := len(b), len(b)
	if l.metaExt != "" {
		b = append(b, b[:stem]...)
		b = append(b, l.metaTail...)
		sideEnd = len(b)
		if atomic {
			b = append(b, TmpSuffix...)
		}
	}
	all := string(b)
	payload, payTmp = all[:payEnd], all[:sideStart]
	dir = "."
	if l.depth > 0 {
		dir = all[:l.depth*(l.width+1)-1]
	}
	if l.metaExt == "" {
		return dir, payload, payTmp, "", ""
	}
	return dir, payload, payTmp, all[sideStart:sideEnd], all[sideStart:]
}

// IsShardDir reports whether name is a valid shard directory name at any
// level (width digits).
func (l *Layout) IsShardDir(name string) bool {
	return l.depth > 0 && len(name) == l.width && allDigits(name)
}

// ParseLeaf parses a file name found in a leaf directory (dir is that
// directory, "." when flat) into its sequence number and kind.
func (l *Layout) ParseLeaf(dir, name string) (seq uint64, kind ChunkKind, ok bool) {
	tmp := strings.HasSuffix(name, TmpSuffix)
	base := strings.TrimSuffix(name, TmpSuffix)
	var digits string
	// Match the longer extension first so that neither shadows the other.
	tails := [2]string{l.payloadTail, l.metaTail}
	kinds := [2]ChunkKind{KindPayload, KindSidecar}
	if len(l.metaTail) > len(l.payloadTail) {
		tails[0], tails[1] = tails[1], tails[0]
		kinds[0], kinds[1] = kinds[1], kinds[0]
	}
	for i, tail := range tails {
		if kinds[i] == KindSidecar && l.metaExt == "" {
			continue
		}
		if strings.HasSuffix(base, tail) && len(base)-len(tail) == l.leafDigits {
			digits, kind = base[:l.leafDigits], kinds[i]
			break
		}
	}
	if kind == 0 || !allDigits(digits) {
		return 0, 0, false
	}
	// The number is the directory's digits then the leaf's, read without
	// building a string: this runs for every name a consumer lists or opens.
	v, ok := l.dirNumber(dir)
	if !ok {
		return 0, 0, false
	}
	for i := 0; i < len(digits); i++ {
		if v, ok = appendDigit(v, digits[i]); !ok {
			return 0, 0, false
		}
	}
	if tmp {
		kind += 2 // KindPayload -> KindPayloadTmp, KindSidecar -> KindSidecarTmp
	}
	return v, kind, true
}

// dirNumber returns the number the digits of a leaf directory's name
// spell: 0 for the root of a flat layout, !ok for a directory that is not
// a leaf of the layout.
func (l *Layout) dirNumber(dir string) (v uint64, ok bool) {
	if l.depth == 0 {
		return 0, dir == "."
	}
	n, slashes := 0, 0
	for i := 0; i < len(dir); i++ {
		switch c := dir[i]; {
		case c == '/':
			slashes++
		case c >= '0' && c <= '9':
			if v, ok = appendDigit(v, c); !ok {
				return 0, false
			}
			n++
		default:
			return 0, false
		}
	}
	return v, n == l.depth*l.width && slashes == l.depth-1
}

// appendDigit returns v*10 plus the decimal digit c, or !ok when that
// overflows a uint64 (where strconv.ParseUint fails with ErrRange).
func appendDigit(v uint64, c byte) (uint64, bool) {
	d := uint64(c - '0')
	if v > (math.MaxUint64-d)/10 {
		return 0, false
	}
	return v*10 + d, true
}

// Parse parses a path relative to the root.
func (l *Layout) Parse(rel string) (seq uint64, kind ChunkKind, ok bool) {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	return l.ParseLeaf(dir, name)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
