package conformance

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/mqb-project/mqb/core"
)

// Spool checks of claims and sequence numbers: PRODUCER and CONSUMER
// exclusion, numbers never reused across runs, recovery of a crashed
// producer's leftovers, and the end of the sequence (protocol sections 6
// and 7).

func checkSeqNeverReused(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "")
	do := o
	do.ExitWhenEmpty = true
	ro := do
	ro.DrainOnRead = false
	write := func(prefix string, n int) (first uint64) {
		t.Helper()
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		first = p.NextSeq()
		_, err = p.Write(e.ctx, testMessages(prefix, 0, n))
		noErr(t, "Write", err)
		noErr(t, "Close", p.Close())
		return first
	}
	if s := write("a", 3); s != 0 {
		t.Errorf("a fresh spool starts at %d", s)
	}
	r, err := core.OpenConsumer(fsys, ro)
	noErr(t, "OpenConsumer(drain_on_read=false)", err)
	defer r.Close()
	if ds := drain(t, e, r, 10); len(ds) != 3 {
		t.Fatalf("reader got %d", len(ds))
	}
	c, err := core.OpenConsumer(fsys, do)
	noErr(t, "OpenConsumer", err)
	if ds := drain(t, e, c, 10); len(ds) != 3 {
		t.Fatalf("consumer got %d", len(ds))
	}
	noErr(t, "Close", c.Close())
	if left := chunkFiles(tree(t, fsys)); len(left) != 0 {
		t.Fatalf("not drained: %q", left)
	}
	// Fully drained: the producer must still continue after 2.
	if s := write("b", 2); s != 3 {
		t.Errorf("after a full drain a new producer starts at %d, want 3", s)
	}
	ds := drain(t, e, r, 10)
	if len(ds) != 2 || ds[0].Seq != 3 {
		t.Errorf("the non-destructive reader's cursor missed the new chunks: got %d deliveries", len(ds))
	}
	// A failed batch burns its numbers.
	ff := NewFaultFS(fsys)
	ob := o
	ob.Fsync = core.FsyncBatch
	p, err := core.OpenProducer(ff.FS(), ob)
	noErr(t, "OpenProducer", err)
	ff.Fail(OpRename, 0, syscall.EIO)
	if _, err := p.Write(e.ctx, testMessages("c", 0, 3)); !errors.Is(err, ErrInjected) {
		t.Fatalf("Write with a failing rename = %v, want the injected error", err)
	}
	_, err = p.Write(e.ctx, testMessages("d", 0, 1))
	if err == nil {
		if p.NextSeq() != 9 || !exists(fsys, "000000008.bin") {
			t.Errorf("after a failed batch of 3 at 5, the next message got %d, want 8", p.NextSeq()-1)
		}
	} else if !errors.Is(err, core.ErrProducerFailed) {
		t.Errorf("Write after a failed batch: %v", err)
	}
	noErr(t, "Close", p.Close())
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	if p.NextSeq() < 9 {
		t.Errorf("a producer reopened after a failed batch of 5-7 and a chunk at 8 starts at %d: numbers reused", p.NextSeq())
	}
	noErr(t, "Close", p.Close())
}

func checkRecovery(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "shard_depth=1&shard_width=3")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	msgs := testMessages("v", 0, 2)
	_, err = p.Write(e.ctx, msgs)
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	// What a producer killed mid-batch leaves, plus foreign files.
	noErr(t, "Mkdir", fsys.Mkdir("000/sub"))
	leftovers := map[string]string{
		"000/000002.json":     `{"message_id":"x","metadata":{}}`,
		"000/000003.json.tmp": `{"mess`,
		"000/000003.bin.tmp":  "par",
		"000/000017.bin.tmp":  "",
		"DONE.tmp":            "{",
	}
	for n, data := range leftovers {
		writeFile(t, fsys, n, []byte(data))
	}
	writeFile(t, fsys, "000/keep.txt", []byte("foreign"))
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	for n := range leftovers {
		if n != "DONE.tmp" && exists(fsys, n) {
			t.Errorf("%s survived recovery", n)
		}
	}
	if !exists(fsys, "000/keep.txt") || !exists(fsys, "000/sub") {
		t.Errorf("recovery removed foreign entries")
	}
	if p.NextSeq() < 18 {
		t.Errorf("NextSeq = %d: the number of a leftover (17) could be reused", p.NextSeq())
	}
	more := testMessages("v", 2, 2)
	_, err = p.Write(e.ctx, more)
	noErr(t, "Write after recovery", err)
	noErr(t, "Close", p.Close())
	do := o
	do.ExitWhenEmpty = true
	c, err := core.OpenConsumer(fsys, do)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	checkDeliveries(t, drain(t, e, c, 10), append(msgs, more...), true)
}

func checkClaimsEnforced(t TB, e *env) {
	e.skipIfSharedLocks(t)
	fsys := e.newFS()
	o := spoolOptions(t, "")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = core.OpenProducer(fsys, o)
	var ce *core.ClaimError
	if !errors.Is(err, core.ErrClaimed) || !errors.As(err, &ce) {
		t.Fatalf("second producer: %v, want a *core.ClaimError", err)
	}
	host, _ := os.Hostname()
	if ce.Holder == nil || ce.Holder.PID != os.Getpid() || ce.Holder.Role != "producer" {
		t.Errorf("ClaimError.Holder = %+v, want this process", ce.Holder)
	} else if host != "" && ce.Holder.Host != host {
		t.Errorf("ClaimError.Holder.Host = %q, want %q", ce.Holder.Host, host)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), core.ProducerFile) {
		t.Errorf("the error does not name the holder and the claim: %v", err)
	}
	h, held, err := core.ReadHolder(fsys, core.ProducerFile)
	if err != nil || !held || h == nil || h.PID != os.Getpid() {
		t.Errorf("ReadHolder(PRODUCER) = %+v, held %v, %v", h, held, err)
	}
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "a consumer next to the producer", err)
	_, err = core.OpenConsumer(fsys, o)
	if !errors.Is(err, core.ErrClaimed) || !strings.Contains(err.Error(), core.ConsumerFile) {
		t.Errorf("second draining consumer: %v, want ErrClaimed naming CONSUMER", err)
	}
	noErr(t, "Producer.Close", p.Close())
	noErr(t, "Consumer.Close", c.Close())
	if _, held, _ := core.ReadHolder(fsys, core.ProducerFile); held {
		t.Errorf("PRODUCER still held after Close")
	}
	p, err = core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer after Close", err)
	noErr(t, "Close", p.Close())
	c, err = core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer after Close", err)
	noErr(t, "Close", c.Close())
	if !exists(fsys, core.ProducerFile) || !exists(fsys, core.ConsumerFile) {
		t.Errorf("claim files must stay in place after Close")
	}
	// claims=false takes none.
	nc := o
	nc.Claims = false
	p1, err := core.OpenProducer(fsys, nc)
	noErr(t, "OpenProducer(claims=false)", err)
	noErr(t, "Close", p1.Close())
}

func checkSeqExhausted(t TB, e *env) {
	for _, q := range []string{"naming_pattern={seq:02}", "naming_pattern={seq:02}&shard_depth=1&shard_width=1&fsync=batch"} {
		fsys := e.newFS()
		o := spoolOptions(t, q)
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		for i := 0; i < 90; i += 30 {
			_, err := p.Write(e.ctx, testMessages("e", i, 30))
			noErr(t, q+": Write", err)
		}
		n, err := p.Write(e.ctx, testMessages("e", 90, 11))
		if n != 0 || !errors.Is(err, core.ErrSequenceExhausted) {
			t.Errorf("%s: a batch of 11 from 90 = %d, %v, want 0 and ErrSequenceExhausted", q, n, err)
		} else if !strings.Contains(err.Error(), "99") {
			t.Errorf("%s: the error does not say the limit: %v", q, err)
		}
		n, err = p.Write(e.ctx, testMessages("e", 90, 10))
		if n != 10 || err != nil {
			t.Errorf("%s: the last 10 numbers: %d, %v", q, n, err)
		}
		_, err = p.Write(e.ctx, testMessages("e", 100, 1))
		wantErr(t, q+": Write past 99", err, core.ErrSequenceExhausted)
		noErr(t, "Close", p.Close())
		p, err = core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		_, err = p.Write(e.ctx, testMessages("e", 100, 1))
		wantErr(t, q+": Write past 99 after reopening", err, core.ErrSequenceExhausted)
		noErr(t, "Close", p.Close())
		for _, n := range tree(t, fsys) {
			if strings.Contains(n, "100") || strings.HasPrefix(n, "1/00") || strings.HasSuffix(n, ".tmp") {
				t.Errorf("%s: %s exists: the producer wrapped or widened", q, n)
			}
		}
		do := o
		do.ExitWhenEmpty = true
		c, err := core.OpenConsumer(fsys, do)
		noErr(t, "OpenConsumer", err)
		checkDeliveries(t, drain(t, e, c, 50), testMessages("e", 0, 100), true)
		noErr(t, "Close", c.Close())
	}
}
