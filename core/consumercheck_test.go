package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

// put writes a file into the spool, making its directories.
func put(t testing.TB, fsys FS, name, data string) {
	t.Helper()
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if err := fsys.Mkdir(strings.Join(parts[:i], "/")); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	f, err := fsys.CreateExcl(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAllOf reads with c until ErrEnd or another error, acking everything,
// and returns the payloads and that error.
func readAllOf(t testing.TB, c *Consumer) (string, error) {
	t.Helper()
	var got []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ds, err := c.Read(ctx, 10)
		cancel()
		if err != nil {
			return strings.Join(got, ","), err
		}
		for _, d := range ds {
			got = append(got, string(d.Payload))
		}
		if err := c.Ack(ds...); err != nil {
			t.Fatal(err)
		}
	}
}

func countFiles(t testing.TB, fsys FS, ext string) int {
	t.Helper()
	n := 0
	var walk func(dir string)
	walk = func(dir string) {
		es, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			switch {
			case e.IsDir():
				walk(joinPath(dir, e.Name()))
			case strings.HasSuffix(e.Name(), ext):
				n++
			}
		}
	}
	walk(".")
	return n
}

// A consumer whose options do not fit the spool's layout reads nothing; it
// must refuse, name the settings that would read the chunks, and delete
// nothing, instead of ending with success.
func TestLayoutMismatchRefused(t *testing.T) {
	for _, tc := range []struct {
		name, producer, consumer, want string
	}{
		{"sharded spool, flat consumer", "?shard_depth=2&shard_width=3&naming_pattern={seq:012}", "",
			"12 chunk(s) sit under 3-digit shard directories 2 level(s) deep (e.g. 000/000/000000.bin) that these options do not read: set shard_depth=2 shard_width=3 naming_pattern={seq:012}"},
		{"sharded spool, other width", "?shard_depth=2&shard_width=2", "?shard_depth=2&shard_width=3",
			"12 chunk(s) sit under 2-digit shard directories 2 level(s) deep (e.g. 00/00/00000.bin) that these options do not read: set shard_width=2"},
		{"flat spool, sharded consumer", "", "?shard_depth=1",
			"12 chunk(s) sit in the spool root, not in shard directories (e.g. 000000000.bin) that these options do not read: set shard_depth=0"},
		{"another digit count", "?naming_pattern={seq:012}", "",
			"12 chunk(s) sit in the spool root, with 12-digit file names (e.g. 000000000000.bin) that these options do not read: set naming_pattern={seq:012}"},
		{"another extension", "?payload_extension=.dat", "",
			"12 chunk(s) sit in the spool root, with the extension .dat (e.g. 000000000.dat) that these options do not read: set payload_extension=.dat"},
		{"suffix kept in the fix", "?naming_pattern={seq:06}-x&shard_depth=1&shard_width=2", "?naming_pattern={seq:06}-x",
			"set shard_depth=1 shard_width=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newRootFS(t)
			msgs := make([]string, 12)
			for i := range msgs {
				msgs[i] = fmt.Sprint(i)
			}
			produce(t, fsys, opts(t, tc.producer), msgs...).Close()
			for _, mode := range []string{"draining", "non-destructive"} {
				o := opts(t, tc.consumer)
				o.DrainOnRead, o.ExitWhenEmpty = mode == "draining", true
				c, err := OpenConsumer(fsys, o)
				if err != nil {
					t.Fatal(err)
				}
				got, err := readAllOf(t, c)
				defer c.Close()
				var le *LayoutError
				if !errors.As(err, &le) || !errors.Is(err, ErrLayoutMismatch) || !Permanent(err) {
					t.Fatalf("%s: read %q, then %v; want a *LayoutError", mode, got, err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s:\n got %s\nwant %s", mode, err, tc.want)
				}
				if _, err := c.Read(context.Background(), 1); !errors.Is(err, ErrLayoutMismatch) {
					t.Fatalf("%s: a second Read = %v, want the refusal again", mode, err)
				}
				if n := countFiles(t, fsys, "bin") + countFiles(t, fsys, "dat"); n != 12 {
					t.Fatalf("%d payloads left, want all 12", n)
				}
			}
		})
	}
}

// Layouts that fit must not be refused: sidecars a consumer without sidecars
// ignores, a drained sharded spool's empty shard directory under a flat
// consumer, and files that are not named like chunks at all.
func TestLayoutCheckNoFalseAlarm(t *testing.T) {
	for _, tc := range []struct{ name, producer, consumer, want string }{
		{"sidecars ignored", "", "?metadata_extension=", "0,1,2"},
		{"same layout", "?shard_depth=1&shard_width=4", "?shard_depth=1&shard_width=4", "0,1,2"},
		{"drained sharded spool", "?shard_depth=2&drain", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newRootFS(t)
			po := opts(t, strings.TrimSuffix(strings.TrimSuffix(tc.producer, "&drain"), "?drain"))
			produce(t, fsys, po, "0", "1", "2").Close()
			if strings.HasSuffix(tc.producer, "&drain") {
				po.ExitWhenEmpty = true
				c, _ := OpenConsumer(fsys, po)
				if _, err := readAllOf(t, c); !errors.Is(err, ErrEnd) {
					t.Fatal(err)
				}
				c.Close()
			}
			put(t, fsys, "README", "not a chunk")
			put(t, fsys, "000000001.txt.orig", "an editor backup")
			o := opts(t, tc.consumer)
			o.ExitWhenEmpty = true
			c, err := OpenConsumer(fsys, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := readAllOf(t, c)
			if !errors.Is(err, ErrEnd) || got != tc.want {
				t.Fatalf("read %q, %v; want %q, ErrEnd", got, err, tc.want)
			}
		})
	}
}

// Chunks of another layout that arrive while a consumer runs stop it at
// the end instead of letting it end with success.
func TestLayoutMismatchArrivingLater(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "")
	produce(t, fsys, o, "a").Close()
	o.ExitWhenEmpty = true
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	ds := readN(t, c, 10)
	put(t, fsys, "001/000000002.bin", "late and sharded")
	c.Ack(ds...)
	if _, err := c.Read(context.Background(), 10); !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("Read at the end = %v, want ErrLayoutMismatch", err)
	}
}

// Files with the payload extension that do not fit the pattern are warned
// about once per name, however often the consumer lists them, and counted.
func TestForeignFilesWarnedOncePerName(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?drain_on_read=false&poll_interval=5ms")
	produce(t, fsys, o, "a").Close()
	put(t, fsys, "notes.bin", "x")
	put(t, fsys, "000000001-copy.bin", "x")
	if err := fsys.r.Symlink("000000000.bin", "000000005.bin"); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	c.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	readN(t, c, 10)
	put(t, fsys, "late.bin", "x") // appears while the consumer runs
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		c.Read(ctx, 10)
		cancel()
	}
	for _, name := range []string{"notes.bin", "000000001-copy.bin", "late.bin", "000000005.bin"} {
		if n := strings.Count(logs.String()+" ", "file="+name+" ") + strings.Count(logs.String(), "file="+name+"\n"); n != 1 {
			t.Errorf("%s warned %d times, want once:\n%s", name, n, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "never follows links") {
		t.Errorf("the link is not named as one:\n%s", logs.String())
	}
	sv, err := SurveyLayout(fsys, o)
	if err != nil || sv.Foreign != 3 || sv.Mismatch != nil || len(sv.Links) != 1 {
		t.Fatalf("survey = %+v, %v; want 3 foreign files, 1 link, no mismatch", sv, err)
	}
}

// With stop_on_done, a DONE record whose last chunk this consumer never
// delivered ends with ErrUnseenChunks, not ErrEnd.
func TestDoneNamesUnseenChunks(t *testing.T) {
	fsys := newRootFS(t)
	o := opts(t, "?emit_done=success&stop_on_done=true")
	produce(t, fsys, o, "a", "b", "c").Close()
	var logs bytes.Buffer
	c, _ := OpenConsumer(fsys, o)
	c.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	if got, err := readAllOf(t, c); got != "a,b,c" || !errors.Is(err, ErrEnd) {
		t.Fatalf("first reader: %q, %v", got, err)
	}
	c.Close()
	if logs.Len() != 0 {
		t.Fatalf("a reader that saw everything warned: %s", logs.String())
	}
	// A second reader finds DONE and nothing else.
	c, _ = OpenConsumer(fsys, o)
	c.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	defer c.Close()
	_, err := readAllOf(t, c)
	var ue *UnseenError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "DONE records 3 message(s) up to sequence 2, but this consumer delivered none of them") {
		t.Fatalf("second reader: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "done_last_seq=2") {
		t.Fatalf("no warning: %s", logs.String())
	}
}

// Without sidecars, a payload extension other than the consumer's cannot
// be told from any other file; DONE still shows that chunks went unseen.
func TestDoneCatchesAnotherExtensionWithoutSidecars(t *testing.T) {
	fsys := newRootFS(t)
	produce(t, fsys, opts(t, "?emit_done=success&metadata_extension="), "a", "b").Close()
	o := opts(t, "?stop_on_done=true&metadata_extension=&payload_extension=.dat")
	c, _ := OpenConsumer(fsys, o)
	defer c.Close()
	c.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := readAllOf(t, c); !errors.Is(err, ErrUnseenChunks) {
		t.Fatalf("Read = %v, want ErrUnseenChunks", err)
	}
	if countFiles(t, fsys, ".bin") != 2 {
		t.Fatal("chunks were deleted")
	}
}

// bad_sidecar=deliver keeps what parses of a bad sidecar and warns once per
// file.
func TestBadSidecarDeliverKeepsWhatParses(t *testing.T) {
	for _, tc := range []struct {
		name, sidecar, id string
		md                map[string]string
	}{
		{"bad metadata value", `{"message_id":"m-1","metadata":{"a":"x","b":1}}`, "m-1", map[string]string{"a": "x"}},
		{"metadata not an object", `{"message_id":"m-2","metadata":[1]}`, "m-2", map[string]string{}},
		{"trailing data", `{"message_id":"m-3","metadata":{"k":"v"}} junk`, "m-3", map[string]string{"k": "v"}},
		{"id not a string", `{"message_id":7,"metadata":{"k":"v","n":null}}`, "", map[string]string{"k": "v"}},
		{"not JSON", `{not json`, "", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := newRootFS(t)
			o := opts(t, "?bad_sidecar=deliver&drain_on_read=false&poll_interval=5ms")
			put(t, fsys, "000000000.bin", "payload")
			put(t, fsys, "000000000.json", tc.sidecar)
			var logs bytes.Buffer
			c, _ := OpenConsumer(fsys, o)
			defer c.Close()
			c.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
			ds := readN(t, c, 10)
			if ds[0].MessageID != tc.id || fmt.Sprint(ds[0].Metadata) != fmt.Sprint(tc.md) {
				t.Fatalf("delivered id %q metadata %v; want %q %v", ds[0].MessageID, ds[0].Metadata, tc.id, tc.md)
			}
			c.Nack(ds...)
			c.Ack(readN(t, c, 10)...)
			if n := strings.Count(logs.String(), "file=000000000.json"); n != 1 {
				t.Fatalf("warned %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}

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

// explainLink names the element of a path that is a link.
func TestSymlinkErrorNamesTheLink(t *testing.T) {
	fsys := newRootFS(t)
	put(t, fsys, "real/x", "")
	if err := fsys.r.Symlink("real", "000"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.r.Symlink("real/x", "000000001.bin.tmp"); err != nil {
		t.Fatal(err)
	}
	loop := &fs.PathError{Op: "mkdir", Path: "000/001", Err: syscall.ELOOP}
	err := explainLink(fsys, "/s", "make shard directory 000/001", "000/001", loop)
	want := "spool /s: make shard directory 000/001: 000 is a symbolic link; mqb never follows links in a spool (remove it)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	exist := &fs.PathError{Op: "open", Path: "000000001.bin.tmp", Err: syscall.EEXIST}
	if err := explainLink(fsys, "/s", "create", "000000001.bin.tmp", exist); err == nil || !strings.Contains(err.Error(), "000000001.bin.tmp is a symbolic link") {
		t.Fatalf("tmp link: %v", err)
	}
	put(t, fsys, "000000002.bin.tmp", "")
	exist.Path = "000000002.bin.tmp"
	if err := explainLink(fsys, "/s", "create", "000000002.bin.tmp", exist); err != nil {
		t.Fatalf("a regular file blamed as a link: %v", err)
	}
}
