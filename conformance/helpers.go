package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqb-project/mqb/core"
)

// spoolOptions parses extra URL query fields on top of the defaults, with a
// short poll interval so that waiting consumers react fast; a field in query
// replaces the default.
func spoolOptions(t TB, query string) core.Options {
	t.Helper()
	v := url.Values{"poll_interval": {"20ms"}}
	extra, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("options %q: %v", query, err)
	}
	for k, vs := range extra {
		v[k] = vs
	}
	o, err := core.ParseURL("dir-spool:///conformance?" + v.Encode())
	if err != nil {
		t.Fatalf("options %q: %v", query, err)
	}
	return o
}

// MakePayload returns a payload that names its message and can be checked
// for tearing: a header "mqb:<id>:<n>:" and n bytes derived from id, zero
// bytes and high bytes included.
func MakePayload(id string, n int) []byte {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	seed := h.Sum32()
	b := make([]byte, 0, n+len(id)+16)
	b = fmt.Appendf(b, "mqb:%s:%d:", id, n)
	for i := range n {
		b = append(b, byte(uint32(i)*131+seed>>(i%4*8)))
	}
	return b
}

// ParsePayload returns the id a payload from MakePayload names, and whether
// the payload is whole and exact.
func ParsePayload(b []byte) (id string, ok bool) {
	if !bytes.HasPrefix(b, []byte("mqb:")) {
		return "", false
	}
	rest := b[4:]
	i := bytes.IndexByte(rest, ':')
	if i < 0 {
		return "", false
	}
	id = string(rest[:i])
	rest = rest[i+1:]
	j := bytes.IndexByte(rest, ':')
	if j < 0 {
		return id, false
	}
	n, err := strconv.Atoi(string(rest[:j]))
	if err != nil || n < 0 {
		return id, false
	}
	return id, bytes.Equal(b, MakePayload(id, n))
}

// testMessage is message number i of a workload: its id names it, its
// payload can be checked, its metadata says the number.
func testMessage(prefix string, i int) core.Message {
	id := fmt.Sprintf("%s%06d", prefix, i)
	return core.Message{
		ID:       id,
		Metadata: map[string]string{"n": strconv.Itoa(i), "prefix": prefix},
		Payload:  MakePayload(id, (i*37)%300),
	}
}

func testMessages(prefix string, from, n int) []core.Message {
	msgs := make([]core.Message, n)
	for i := range msgs {
		msgs[i] = testMessage(prefix, from+i)
	}
	return msgs
}

// writeAll writes msgs to the spool on fsys in one Write and closes the
// producer.
func writeAll(t TB, e *env, fsys core.FS, o core.Options, msgs []core.Message) {
	t.Helper()
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	noErr(t, "Producer.Close", p.Close())
}

// writeFile creates name with data through fsys.
func writeFile(t TB, fsys core.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.CreateExcl(name)
	if err != nil {
		t.Fatalf("CreateExcl(%q): %v", name, err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("Write(%q): %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close(%q): %v", name, err)
	}
}

// readFile returns the content of name, or an error.
func readFile(fsys core.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func mustRead(t TB, fsys core.FS, name string) []byte {
	t.Helper()
	b, err := readFile(fsys, name)
	if err != nil {
		t.Fatalf("read %q: %v", name, err)
	}
	return b
}

func exists(fsys core.FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil
}

// wantErr fails t unless err matches target (errors.Is).
func wantErr(t TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one matching %v", what, err, target)
	}
}

// wantPathErr fails t unless err matches target and is an *fs.PathError, as
// the core.FS contract says.
func wantPathErr(t TB, what string, err, target error) {
	t.Helper()
	wantErr(t, what, err, target)
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T) is not an *fs.PathError", what, err, err)
	}
}

func noErr(t TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// tree lists every entry below the root, sorted; directories end in "/".
func tree(t TB, fsys core.FS) []string {
	t.Helper()
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatalf("ReadDir(%q): %v", dir, err)
		}
		for _, e := range ents {
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			if e.IsDir() {
				out = append(out, p+"/")
				walk(p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(".")
	sort.Strings(out)
	return out
}

// chunkFiles returns the names in a tree that are not control files or
// directories.
func chunkFiles(names []string) []string {
	var out []string
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "/"), n == core.ProducerFile, n == core.ConsumerFile, n == core.DoneFile:
			continue
		}
		out = append(out, n)
	}
	return out
}

// readBatch reads one batch, failing t when nothing comes within d.
func readBatch(t TB, e *env, c *core.Consumer, limit int, d time.Duration) []*core.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, d)
	defer cancel()
	ds, err := c.Read(ctx, limit)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return ds
}

// drain reads and acks until Read returns core.ErrEnd (the consumer must be
// opened with ExitWhenEmpty or stop_on_done) and returns what it read.
func drain(t TB, e *env, c *core.Consumer, limit int) []*core.Delivery {
	t.Helper()
	var all []*core.Delivery
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		ds, err := c.Read(ctx, limit)
		cancel()
		if errors.Is(err, core.ErrEnd) {
			return all
		}
		if err != nil {
			t.Fatalf("Read after %d deliveries: %v", len(all), err)
		}
		all = append(all, ds...)
		if err := c.Ack(ds...); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
}

// checkDeliveries checks that ds are exactly msgs in order, payload, id and
// metadata included (withSidecars false: metadata must be empty).
func checkDeliveries(t TB, ds []*core.Delivery, msgs []core.Message, withSidecars bool) {
	t.Helper()
	if len(ds) != len(msgs) {
		t.Errorf("got %d deliveries, want %d", len(ds), len(msgs))
	}
	for i := range min(len(ds), len(msgs)) {
		d, m := ds[i], msgs[i]
		if !bytes.Equal(d.Payload, m.Payload) {
			id, _ := ParsePayload(d.Payload)
			t.Fatalf("delivery %d (%s): payload of %q, want %q (order or content broken)", i, d.Name, id, m.ID)
		}
		if i > 0 && d.Seq <= ds[i-1].Seq {
			t.Errorf("delivery %d: sequence %d after %d", i, d.Seq, ds[i-1].Seq)
		}
		if withSidecars {
			if d.MessageID != m.ID {
				t.Errorf("delivery %d: message id %q, want %q", i, d.MessageID, m.ID)
			}
			if !equalMaps(d.Metadata, m.Metadata) {
				t.Errorf("delivery %d: metadata %v, want %v", i, d.Metadata, m.Metadata)
			}
		} else if d.MessageID != "" || len(d.Metadata) != 0 {
			t.Errorf("delivery %d without sidecar: id %q metadata %v, want none", i, d.MessageID, d.Metadata)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// names is an independent oracle for the on-disk names: it does not use
// core.Layout.
type names struct {
	digits  int
	suffix  string
	depth   int
	width   int
	payload string
	meta    string
}

func (n names) base(seq uint64) (dir, leaf string) {
	s := fmt.Sprintf("%0*d", n.digits, seq)
	var dirs []string
	for i := range n.depth {
		dirs = append(dirs, s[i*n.width:(i+1)*n.width])
	}
	leaf = s[n.depth*n.width:] + n.suffix
	if len(dirs) == 0 {
		return ".", leaf
	}
	return strings.Join(dirs, "/"), leaf
}

func (n names) payloadName(seq uint64) string {
	dir, leaf := n.base(seq)
	return path.Join(dir, leaf+n.payload)
}

func (n names) sidecarName(seq uint64) string {
	if n.meta == "" {
		return ""
	}
	dir, leaf := n.base(seq)
	return path.Join(dir, leaf+n.meta)
}

// raceAll runs fn for workers 0 to n-1 in goroutines released at the same
// instant, and returns each worker's error once all have returned.
func raceAll(n int, fn func(w int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			<-start
			errs[w] = fn(w)
		})
	}
	close(start)
	wg.Wait()
	return errs
}
