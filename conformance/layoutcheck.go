package conformance

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// The options that change the on-disk layout, crossed: naming pattern (with
// and without literal text after the sequence), extensions (or no
// sidecars), sharding; each layout is then written with atomic on and off
// and every fsync policy.

type layoutCase struct {
	name  string
	query string
	nm    names
}

func layoutCases() []layoutCase {
	patterns := []struct {
		name, pattern, suffix string
		digits                int
	}{
		{"seq09", "{seq:09}", "", 9},
		{"seq06part", "{seq:06}-part", "-part", 6},
	}
	exts := []struct{ name, payload, meta string }{
		{"bin-json", ".bin", ".json"},
		{"jsonl-meta", ".jsonl", ".meta.json"},
		{"bin-nosidecar", ".bin", ""},
	}
	shards := []struct {
		name         string
		depth, width int
	}{{"flat", 0, 0}, {"1x2", 1, 2}, {"2x2", 2, 2}}
	var out []layoutCase
	for _, p := range patterns {
		for _, x := range exts {
			for _, s := range shards {
				q := fmt.Sprintf("naming_pattern=%s&payload_extension=%s&metadata_extension=%s", p.pattern, x.payload, x.meta)
				if s.depth > 0 {
					q += fmt.Sprintf("&shard_depth=%d&shard_width=%d", s.depth, s.width)
				}
				out = append(out, layoutCase{
					name:  fmt.Sprintf("Layout_%s_%s_%s", p.name, x.name, s.name),
					query: q,
					nm:    names{digits: p.digits, suffix: p.suffix, depth: s.depth, width: s.width, payload: x.payload, meta: x.meta},
				})
			}
		}
	}
	// The sharded example of the documentation: message 1 at 000/000/001.bin.
	out = append(out, layoutCase{name: "Layout_DocsExample", query: "shard_depth=2&shard_width=3",
		nm: names{digits: 9, depth: 2, width: 3, payload: ".bin", meta: ".json"}})
	return out
}

func layoutChecks() []check {
	var out []check
	for _, lc := range layoutCases() {
		out = append(out, check{lc.name, func(t TB, e *env) { checkLayout(t, e, lc) }})
	}
	return out
}

func checkLayout(t TB, e *env, lc layoutCase) {
	if lc.name == "Layout_DocsExample" && lc.nm.payloadName(1) != "000/000/001.bin" {
		t.Fatalf("oracle broken: %s", lc.nm.payloadName(1))
	}
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		for _, atomic := range []bool{true, false} {
			q := fmt.Sprintf("%s&fsync=%s&atomic=%v", lc.query, policy, atomic)
			layoutCase1(t, e, q, lc.nm)
		}
	}
}

func layoutCase1(t TB, e *env, q string, nm names) {
	t.Helper()
	fsys := e.newFS()
	o := spoolOptions(t, q)
	p, err := core.OpenProducer(fsys, o)
	noErr(t, q+": OpenProducer", err)
	msgs := testMessages("L", 0, 23)
	for i, n := range []int{1, 7, 15} {
		from := []int{0, 1, 8}[i]
		if k, err := p.Write(e.ctx, msgs[from:from+n]); err != nil || k != n {
			t.Fatalf("%s: Write = %d, %v", q, k, err)
		}
	}
	noErr(t, q+": Close", p.Close())
	layoutWritten(t, fsys, q, nm, msgs)
	layoutConsumed(t, e, fsys, o, q, nm, msgs)
}

// layoutWritten checks that the spool holds exactly the files and shard
// directories nm names for msgs, and each payload byte for byte.
func layoutWritten(t TB, fsys core.FS, q string, nm names, msgs []core.Message) {
	t.Helper()
	want := map[string]bool{core.ProducerFile: true}
	for s := range uint64(len(msgs)) {
		for _, n := range []string{nm.payloadName(s), nm.sidecarName(s)} {
			if n == "" {
				continue
			}
			want[n] = true
			for d := path.Dir(n); d != "."; d = path.Dir(d) {
				want[d+"/"] = true
			}
		}
	}
	wantList := slices.Sorted(maps.Keys(want))
	if got := tree(t, fsys); !slices.Equal(got, wantList) {
		t.Fatalf("%s: the spool holds\n%q\nwant\n%q", q, got, wantList)
	}
	for s := range uint64(len(msgs)) {
		if b := mustRead(t, fsys, nm.payloadName(s)); string(b) != string(msgs[s].Payload) {
			t.Errorf("%s: %s does not hold the payload byte for byte", q, nm.payloadName(s))
		}
	}
}

// layoutConsumed reads msgs back in FIFO order, acking the first 10 and
// checking that exactly their files went, then drains the rest: nothing but
// the claims and the newest shard directory may stay.
func layoutConsumed(t TB, e *env, fsys core.FS, o core.Options, q string, nm names, msgs []core.Message) {
	t.Helper()
	co := o
	co.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, co)
	noErr(t, q+": OpenConsumer", err)
	var ds []*core.Delivery
	for len(ds) < 10 {
		ds = append(ds, readBatch(t, e, c, 10-len(ds), 10*time.Second)...)
	}
	noErr(t, q+": Ack", c.Ack(ds...))
	for _, d := range ds {
		if d.Name != nm.payloadName(d.Seq) {
			t.Errorf("%s: delivery named %s, seq %d, want %s", q, d.Name, d.Seq, nm.payloadName(d.Seq))
		}
		if exists(fsys, d.Name) || (nm.meta != "" && exists(fsys, nm.sidecarName(d.Seq))) {
			t.Errorf("%s: %s still on disk after its ack", q, d.Name)
		}
	}
	total := uint64(len(msgs))
	for s := uint64(10); s < total; s++ {
		if !exists(fsys, nm.payloadName(s)) {
			t.Errorf("%s: %s gone before being acked", q, nm.payloadName(s))
		}
	}
	ds = append(ds, drain(t, e, c, 4)...)
	noErr(t, q+": Consumer.Close", c.Close())
	if nm.meta == "" {
		for i := range msgs {
			msgs[i].ID, msgs[i].Metadata = "", nil
		}
	}
	checkDeliveries(t, ds, msgs, nm.meta != "")
	for _, n := range tree(t, fsys) {
		if !strings.HasSuffix(n, "/") && n != core.ProducerFile && n != core.ConsumerFile {
			t.Errorf("%s: %s left after draining", q, n)
		}
	}
	// The newest shard directory stays for the producer.
	if nm.depth > 0 {
		dir, _ := nm.base(total - 1)
		if !exists(fsys, dir) {
			t.Errorf("%s: the consumer removed the newest shard directory %s", q, dir)
		}
	}
}
