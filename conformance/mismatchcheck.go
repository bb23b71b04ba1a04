package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Layer 2, continued: what a consumer does with what its options do not
// read (protocol sections 2.5, 3 and 8.3): chunks of another layout,
// foreign files, a DONE naming chunks it never saw, bad sidecars under
// bad_sidecar=deliver.

func mismatchChecks() []check {
	return []check{
		{"LayoutMismatchRefused", checkLayoutMismatch},
		{"LayoutCheckNoFalseAlarm", checkLayoutNoFalseAlarm},
		{"LayoutMismatchArrivingLater", checkLayoutMismatchLater},
		{"ForeignFilesWarnedOnce", checkForeignWarnedOnce},
		{"DoneNamesUnseenChunks", checkDoneUnseen},
		{"BadSidecarDeliverKeepsWhatParses", checkBadSidecarSalvage},
	}
}

// logBuffer is a logger whose text output can be read while it is written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// countPayloads counts the files under the root whose names end with ext.
func countPayloads(t TB, fsys core.FS, ext string) int {
	n := 0
	for _, name := range tree(t, fsys) {
		if strings.HasSuffix(name, ext) {
			n++
		}
	}
	return n
}

// readToEnd reads and acks with c until an error, returning the payloads
// read and that error.
func readToEnd(e *env, c *core.Consumer) (string, error) {
	var got []string
	for {
		ds, err := c.Read(e.ctx, 10)
		if err != nil {
			return strings.Join(got, ","), err
		}
		for _, d := range ds {
			got = append(got, string(d.Payload))
		}
		if err := c.Ack(ds...); err != nil {
			return strings.Join(got, ","), err
		}
	}
}

func produceAll(t TB, e *env, fsys core.FS, query string, payloads ...string) {
	t.Helper()
	p, err := core.OpenProducer(fsys, spoolOptions(t, query))
	noErr(t, "OpenProducer", err)
	msgs := make([]core.Message, len(payloads))
	for i, s := range payloads {
		msgs[i] = core.Message{Payload: []byte(s)}
	}
	if n, err := p.Write(e.ctx, msgs); err != nil || n != len(msgs) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	noErr(t, "Close", p.Close())
}

// A consumer whose options do not fit the spool's layout refuses, for
// good, names the settings that would read the chunks and deletes nothing.
func checkLayoutMismatch(t TB, e *env) {
	for _, tc := range []struct{ producer, consumer, want string }{
		{"shard_depth=2&shard_width=3&naming_pattern={seq:012}", "",
			"12 chunk(s) sit under 3-digit shard directories 2 level(s) deep (e.g. 000/000/000000.bin) that these options do not read: set shard_depth=2 shard_width=3 naming_pattern={seq:012}"},
		{"shard_depth=2&shard_width=2", "shard_depth=2&shard_width=3",
			"12 chunk(s) sit under 2-digit shard directories 2 level(s) deep (e.g. 00/00/00000.bin) that these options do not read: set shard_width=2"},
		{"", "shard_depth=1",
			"12 chunk(s) sit in the spool root, not in shard directories (e.g. 000000000.bin) that these options do not read: set shard_depth=0"},
		{"naming_pattern={seq:012}", "",
			"12 chunk(s) sit in the spool root, with 12-digit file names (e.g. 000000000000.bin) that these options do not read: set naming_pattern={seq:012}"},
		{"payload_extension=.dat", "",
			"12 chunk(s) sit in the spool root, with the extension .dat (e.g. 000000000.dat) that these options do not read: set payload_extension=.dat"},
		{"naming_pattern={seq:06}-x&shard_depth=1&shard_width=2", "naming_pattern={seq:06}-x", "set shard_depth=1 shard_width=2"},
	} {
		fsys := e.newFS()
		payloads := make([]string, 12)
		for i := range payloads {
			payloads[i] = fmt.Sprint(i)
		}
		produceAll(t, e, fsys, tc.producer, payloads...)
		for _, draining := range []bool{true, false} {
			o := spoolOptions(t, tc.consumer)
			o.DrainOnRead, o.ExitWhenEmpty = draining, true
			c, err := core.OpenConsumer(fsys, o)
			noErr(t, "OpenConsumer", err)
			c.SetLogger(slog.New(slog.DiscardHandler))
			got, err := readToEnd(e, c)
			var le *core.LayoutError
			switch {
			case !errors.As(err, &le) || !core.Permanent(err):
				t.Errorf("%s on a %s spool (draining %v): read %q, then %v; want a *core.LayoutError", tc.consumer, tc.producer, draining, got, err)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("%s on a %s spool:\n got %s\nwant %s", tc.consumer, tc.producer, err, tc.want)
			}
			if _, err := c.Read(e.ctx, 1); !errors.Is(err, core.ErrLayoutMismatch) {
				t.Errorf("a second Read = %v, want the refusal again", err)
			}
			noErr(t, "Close", c.Close())
			if n := countPayloads(t, fsys, ".bin") + countPayloads(t, fsys, ".dat"); n != 12 {
				t.Errorf("%d payloads left, want all 12", n)
			}
			if !draining && le != nil {
				checkFixedReads(t, e, fsys, le, tc.producer, strings.Join(payloads, ","))
			}
		}
	}
}

// checkFixedReads checks that a consumer with the options a LayoutError
// names (Fixed) reads every chunk of the spool, in order.
func checkFixedReads(t TB, e *env, fsys core.FS, le *core.LayoutError, producer, want string) {
	if le.Fixed == nil {
		t.Errorf("%s spool: the refusal names no options that read it", producer)
		return
	}
	o := *le.Fixed
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer with the fixed options", err)
	got, err := readToEnd(e, c)
	if !errors.Is(err, core.ErrEnd) || got != want {
		t.Errorf("%s spool, read with the fixed options (%s): %q, then %v; want %q, then the end", producer, le.Fix, got, err, want)
	}
	noErr(t, "Close", c.Close())
}

// Layouts that fit are not refused: sidecars a consumer without sidecars
// ignores, a drained sharded spool's empty shard directory under a flat
// consumer, files not named like chunks, and digit-named files of another
// type without a sidecar.
func checkLayoutNoFalseAlarm(t TB, e *env) {
	for _, tc := range []struct {
		producer, consumer, want string
		drainFirst               bool
	}{
		{"", "metadata_extension=", "0,1,2", false},
		{"shard_depth=1&shard_width=4", "shard_depth=1&shard_width=4", "0,1,2", false},
		{"shard_depth=2", "", "", true},
	} {
		fsys := e.newFS()
		produceAll(t, e, fsys, tc.producer, "0", "1", "2")
		if tc.drainFirst {
			po := spoolOptions(t, tc.producer)
			po.ExitWhenEmpty = true
			c, err := core.OpenConsumer(fsys, po)
			noErr(t, "OpenConsumer", err)
			if _, err := readToEnd(e, c); !errors.Is(err, core.ErrEnd) {
				t.Fatalf("drain with the producer's options: %v", err)
			}
			noErr(t, "Close", c.Close())
		}
		writeFile(t, fsys, "README", []byte("not a chunk"))
		writeFile(t, fsys, "000000001.txt.orig", []byte("an editor backup"))
		writeFile(t, fsys, "000000007.txt", []byte("digits, another type, no sidecar"))
		o := spoolOptions(t, tc.consumer)
		o.ExitWhenEmpty = true
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		got, err := readToEnd(e, c)
		if !errors.Is(err, core.ErrEnd) || got != tc.want {
			t.Errorf("%q on a %q spool: read %q, %v; want %q, then the end", tc.consumer, tc.producer, got, err, tc.want)
		}
		noErr(t, "Close", c.Close())
	}
}

// Chunks of another layout that arrive while a consumer runs stop it at
// the end instead of letting it end with success.
func checkLayoutMismatchLater(t TB, e *env) {
	fsys := e.newFS()
	produceAll(t, e, fsys, "", "a")
	o := spoolOptions(t, "")
	o.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ds := readBatch(t, e, c, 10, 5*time.Second)
	noErr(t, "Mkdir", fsys.Mkdir("001"))
	writeFile(t, fsys, "001/000000002.bin", []byte("late and sharded"))
	noErr(t, "Ack", c.Ack(ds...))
	if _, err := c.Read(e.ctx, 10); !errors.Is(err, core.ErrLayoutMismatch) {
		t.Errorf("Read at the end = %v, want core.ErrLayoutMismatch", err)
	}
}

// Files with the payload extension that do not fit the pattern are warned
// about once per name, however often the consumer lists them, and counted.
func checkForeignWarnedOnce(t TB, e *env) {
	fsys := e.newFS()
	produceAll(t, e, fsys, "", "a")
	writeFile(t, fsys, "notes.bin", []byte("x"))
	writeFile(t, fsys, "000000001-copy.bin", []byte("x"))
	o := spoolOptions(t, "drain_on_read=false&poll_interval=5ms")
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	var logs logBuffer
	c.SetLogger(logs.logger())
	readBatch(t, e, c, 10, 5*time.Second)
	writeFile(t, fsys, "late.bin", []byte("x")) // appears while the consumer runs
	for range 3 {
		ctx, cancel := context.WithTimeout(e.ctx, 30*time.Millisecond)
		_, _ = c.Read(ctx, 10)
		cancel()
	}
	for _, name := range []string{"notes.bin", "000000001-copy.bin", "late.bin"} {
		if n := strings.Count(logs.String(), "file="+name+" "); n != 1 {
			t.Errorf("%s warned %d times, want once:\n%s", name, n, logs.String())
		}
	}
	sv, err := core.SurveyLayout(context.Background(), fsys, o)
	if err != nil || sv.Foreign != 3 || sv.Mismatch != nil {
		t.Errorf("SurveyLayout = %+v, %v; want 3 foreign files and no mismatch", sv, err)
	}
}

// With stop_on_done, a DONE whose last chunk this consumer never delivered
// ends with core.ErrUnseenChunks and a warning, not core.ErrEnd. That
// covers a payload_extension the layout check cannot see (no sidecars).
func checkDoneUnseen(t TB, e *env) {
	fsys := e.newFS()
	produceAll(t, e, fsys, "emit_done=success", "a", "b", "c")
	o := spoolOptions(t, "stop_on_done=true")
	var logs logBuffer
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	c.SetLogger(logs.logger())
	if got, err := readToEnd(e, c); got != "a,b,c" || !errors.Is(err, core.ErrEnd) {
		t.Errorf("first reader: %q, %v; want a,b,c then the end", got, err)
	}
	noErr(t, "Close", c.Close())
	if logs.String() != "" {
		t.Errorf("a reader that saw everything warned: %s", logs.String())
	}
	c, err = core.OpenConsumer(fsys, o) // finds DONE and nothing else
	noErr(t, "OpenConsumer", err)
	c.SetLogger(logs.logger())
	_, err = readToEnd(e, c)
	noErr(t, "Close", c.Close())
	var ue *core.UnseenError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "DONE records 3 message(s) up to sequence 2, but this consumer delivered none of them") {
		t.Errorf("second reader: %v, want a *core.UnseenError", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "done_last_seq=2") {
		t.Errorf("no warning: %s", logs.String())
	}

	fsys = e.newFS()
	produceAll(t, e, fsys, "emit_done=success&metadata_extension=", "a", "b")
	o = spoolOptions(t, "stop_on_done=true&metadata_extension=&payload_extension=.dat")
	c, err = core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	c.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := readToEnd(e, c); !errors.Is(err, core.ErrUnseenChunks) {
		t.Errorf("another extension without sidecars: %v, want core.ErrUnseenChunks", err)
	}
	noErr(t, "Close", c.Close())
	if countPayloads(t, fsys, ".bin") != 2 {
		t.Errorf("chunks were deleted")
	}
}

// bad_sidecar=deliver keeps what parses of a bad sidecar and warns once per
// file.
func checkBadSidecarSalvage(t TB, e *env) {
	for _, tc := range []struct{ sidecar, id, md string }{
		{`{"message_id":"m-1","metadata":{"a":"x","b":1}}`, "m-1", "map[a:x]"},
		{`{"message_id":"m-2","metadata":[1]}`, "m-2", "map[]"},
		{`{"message_id":"m-3","metadata":{"k":"v"}} junk`, "m-3", "map[k:v]"},
		{`{"message_id":7,"metadata":{"k":"v","n":null}}`, "", "map[k:v]"},
		{`{not json`, "", "map[]"},
	} {
		fsys := e.newFS()
		writeFile(t, fsys, "000000000.bin", []byte("payload"))
		writeFile(t, fsys, "000000000.json", []byte(tc.sidecar))
		c, err := core.OpenConsumer(fsys, spoolOptions(t, "bad_sidecar=deliver&drain_on_read=false"))
		noErr(t, "OpenConsumer", err)
		var logs logBuffer
		c.SetLogger(logs.logger())
		ds := readBatch(t, e, c, 10, 5*time.Second)
		if ds[0].MessageID != tc.id || fmt.Sprint(ds[0].Metadata) != tc.md {
			t.Errorf("sidecar %s: delivered id %q metadata %v; want %q %s", tc.sidecar, ds[0].MessageID, ds[0].Metadata, tc.id, tc.md)
		}
		noErr(t, "Nack", c.Nack(ds...))
		noErr(t, "Ack", c.Ack(readBatch(t, e, c, 10, 5*time.Second)...))
		if n := strings.Count(logs.String(), "file=000000000.json"); n != 1 {
			t.Errorf("sidecar %s: warned %d times, want once:\n%s", tc.sidecar, n, logs.String())
		}
		noErr(t, "Close", c.Close())
	}
}
