package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/mqb-project/mqb/core/option"
)

// The consumer's layout, foreign-file, DONE and bad-sidecar behaviour is
// checked on every backend by the conformance suite (mismatchcheck.go);
// these are the parts that need no filesystem.

func TestPermanentErrors(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return fmt.Errorf("spool /x: create a: %w", &fs.PathError{Op: "open", Path: "a", Err: errno})
	}
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{nil, false},
		{pathErr(syscall.ENOSPC), false},
		{pathErr(syscall.EIO), false},
		{pathErr(syscall.EDQUOT), false},
		{context.DeadlineExceeded, false},
		{errors.New("connection reset"), false},
		{pathErr(syscall.ELOOP), true},
		{pathErr(syscall.EACCES), true},
		{pathErr(syscall.EPERM), true},
		{pathErr(syscall.EROFS), true},
		{pathErr(syscall.EEXIST), true},
		{pathErr(syscall.ENOTDIR), true},
		{&SymlinkError{Spool: "/x", Link: "000", Op: "mkdir", Err: errors.New("refused")}, true},
		{fmt.Errorf("w: %w", ErrSequenceExhausted), true},
		{fmt.Errorf("w: %w: %w", ErrProducerFailed, syscall.ENOSPC), true},
		{&option.Error{Field: "fsync", Value: "sometimes"}, true},
		{&LayoutError{}, true},
		{&SidecarError{Path: "a.json", Err: errors.New("bad")}, true},
	} {
		if got := Permanent(tc.err); got != tc.permanent {
			t.Errorf("Permanent(%v) = %v, want %v", tc.err, got, tc.permanent)
		}
	}
}

// linkFS answers Stat from a table of modes; explainLink needs nothing else.
type linkFS struct {
	FS
	modes map[string]fs.FileMode
}

type modeInfo struct {
	fs.FileInfo
	mode fs.FileMode
}

func (m modeInfo) Mode() fs.FileMode { return m.mode }

func (l linkFS) Stat(name string) (fs.FileInfo, error) {
	m, ok := l.modes[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return modeInfo{mode: m}, nil
}

// explainLink names the element of a path that is a symbolic link, and
// blames nothing else.
func TestExplainLinkNamesTheLink(t *testing.T) {
	fsys := linkFS{modes: map[string]fs.FileMode{
		"000": fs.ModeSymlink, "111": fs.ModeDir, "111/222": fs.ModeSymlink,
		"000000001.bin.tmp": fs.ModeSymlink, "000000002.bin.tmp": 0,
	}}
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		want  string // "" for no explanation
	}{
		{"000/001", syscall.ELOOP, "spool /s: op: 000 is a symbolic link; mqb never follows links in a spool (remove it)"},
		{"111/222/333", syscall.ELOOP, "spool /s: op: 111/222 is a symbolic link"},
		{"000000001.bin.tmp", syscall.EEXIST, "spool /s: op: 000000001.bin.tmp is a symbolic link"},
		{"000000002.bin.tmp", syscall.EEXIST, ""}, // a regular file: another writer
		{"000/001", syscall.EIO, ""}, // not about links at all
	} {
		cause := &fs.PathError{Op: "op", Path: tc.name, Err: tc.errno}
		err := explainLink(fsys, "/s", "op", tc.name, cause)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s, %v: blamed a link: %v", tc.name, tc.errno, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, syscall.ELOOP) || !errors.Is(err, tc.errno) {
			t.Errorf("%s, %v: got %v\nwant %s...", tc.name, tc.errno, err, tc.want)
		}
	}
}

func TestSalvageSidecar(t *testing.T) {
	for _, tc := range []struct{ sidecar, id, md string }{
		{`{"message_id":"m-1","metadata":{"a":"x","b":1}}`, "m-1", "map[a:x]"},
		{`{"message_id":"m-2","metadata":[1]}`, "m-2", "map[]"},
		{`{"message_id":"m-3","metadata":{"k":"v"}} junk`, "m-3", "map[k:v]"},
		{`{"message_id":7,"metadata":{"k":"v","n":null}}`, "", "map[k:v]"},
		{`{not json`, "", "map[]"},
		{``, "", "map[]"},
	} {
		id, md := salvageSidecar([]byte(tc.sidecar))
		if id != tc.id || fmt.Sprint(md) != tc.md {
			t.Errorf("%s: %q %v, want %q %s", tc.sidecar, id, md, tc.id, tc.md)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1100: "1,100", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
