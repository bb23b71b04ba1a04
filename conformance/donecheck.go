package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mqb-project/mqb/core"
)

// Spool checks of the DONE sentinel: when emit_done writes it, stop_on_done
// ending a consumer, and a stale DONE removed by the next producer
// (protocol section 8).

func checkDone(t TB, e *env) {
	for _, policy := range []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone} {
		doneWritten(t, e, policy)
	}
	doneWhen(t, e)
}

// doneWritten checks that a successful run's Close writes DONE durably
// under policy: DONE.tmp synced, renamed into place, the root synced.
func doneWritten(t TB, e *env, policy core.FsyncPolicy) {
	inner := e.newFS()
	fsys, log := recording(inner)
	o := spoolOptions(t, "emit_done=success&fsync="+string(policy))
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("d", 0, 3))
	noErr(t, "Write", err)
	if exists(fsys, core.DoneFile) {
		t.Fatalf("DONE exists before Close")
	}
	log.take()
	noErr(t, "Close", p.Close())
	ops := log.take()
	ri := find(ops, 0, isRename(core.DoneFile+core.TmpSuffix, core.DoneFile))
	if ri < 0 {
		t.Fatalf("fsync=%s: DONE was not renamed into place from DONE.tmp: %v", policy, ops)
	}
	if policy != core.FsyncNone {
		if find(ops[:ri], 0, isOp(OpSync, core.DoneFile+core.TmpSuffix)) < 0 {
			t.Errorf("fsync=%s: DONE.tmp not synced before its rename: %v", policy, ops)
		}
		if find(ops, ri, isOp(OpSyncDir, ".")) < 0 {
			t.Errorf("fsync=%s: no SyncDir(.) after DONE appeared: %v", policy, ops)
		}
	}
	rec, err := core.ReadDone(inner)
	noErr(t, "ReadDone", err)
	if rec.Status != "success" || rec.Count != 3 || rec.LastSeq == nil || *rec.LastSeq != 2 {
		t.Errorf("DONE = %+v, want success, count 3, last_seq 2", rec)
	}
	var raw map[string]any
	if err := json.Unmarshal(mustRead(t, inner, core.DoneFile), &raw); err != nil || raw["status"] != "success" {
		t.Errorf("DONE is not the JSON record: %v %v", raw, err)
	}
}

// doneWhen checks that emit_done decides when DONE is written.
func doneWhen(t TB, e *env) {
	for _, tc := range []struct {
		emit   core.EmitDone
		cause  error
		status string // "" = no DONE
	}{
		{core.EmitNever, nil, ""},
		{core.EmitNever, errors.New("boom"), ""},
		{core.EmitSuccess, errors.New("boom"), ""},
		{core.EmitAlways, nil, "success"},
		{core.EmitAlways, errors.New("boom"), "failure"},
	} {
		fsys := e.newFS()
		p, err := core.OpenProducer(fsys, spoolOptions(t, "emit_done="+string(tc.emit)))
		noErr(t, "OpenProducer", err)
		_ = p.CloseWithError(tc.cause)
		rec, err := core.ReadDone(fsys)
		switch {
		case tc.status == "" && err == nil:
			t.Errorf("emit_done=%s, cause %v: DONE written", tc.emit, tc.cause)
		case tc.status == "" && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("emit_done=%s: ReadDone: %v", tc.emit, err)
		case tc.status != "" && err != nil:
			t.Errorf("emit_done=%s, cause %v: no DONE: %v", tc.emit, tc.cause, err)
		case tc.status != "" && rec.Status != tc.status:
			t.Errorf("emit_done=%s, cause %v: DONE status %q, want %q", tc.emit, tc.cause, rec.Status, tc.status)
		case tc.status == "failure" && !strings.Contains(rec.Error, "boom"):
			t.Errorf("DONE of a failed run does not say why: %+v", rec)
		}
	}
}

func checkStopOnDone(t TB, e *env) {
	fsys := e.newFS()
	o := spoolOptions(t, "emit_done=success&stop_on_done=true")
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	_, err = p.Write(e.ctx, testMessages("x", 0, 1))
	noErr(t, "Write", err)
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	noErr(t, "Ack", c.Ack(readBatch(t, e, c, 10, 10*time.Second)...))
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	_, err = c.Read(ctx, 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with an empty spool and no DONE = %v, want it to wait", err)
	}
	_, err = p.Write(e.ctx, testMessages("x", 1, 1))
	noErr(t, "Write", err)
	noErr(t, "Close", p.Close())
	ds := readBatch(t, e, c, 10, 10*time.Second)
	// DONE and nothing left on disk, but a delivery in flight: not the end.
	ended := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		ds, err := c.Read(ctx, 10)
		if err == nil {
			err = fmt.Errorf("Read returned %d deliveries", len(ds))
			if len(ds) == 1 && ds[0].Redelivered {
				err = c.Ack(ds...)
			}
		}
		ended <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-ended:
		t.Fatalf("Read returned (%v) while a delivery was in flight", err)
	default:
	}
	noErr(t, "Nack", c.Nack(ds...))
	noErr(t, "redelivery after DONE", <-ended)
	_, err = c.Read(e.ctx, 1)
	wantErr(t, "Read with DONE, nothing left and nothing in flight", err, core.ErrEnd)

	// The producer and the consumer racing: the consumer must not end
	// before it has everything the producer wrote before DONE.
	for round := range 5 {
		fsys := e.newFS()
		const total = 120
		p, err := core.OpenProducer(fsys, o)
		noErr(t, "OpenProducer", err)
		c, err := core.OpenConsumer(fsys, o)
		noErr(t, "OpenConsumer", err)
		go func() {
			for i := 0; i < total; i += 8 {
				if _, err := p.Write(e.ctx, testMessages("y", i, min(8, total-i))); err != nil {
					break
				}
			}
			p.Close()
		}()
		ds := drain(t, e, c, 7)
		noErr(t, "Close", c.Close())
		if len(ds) != total {
			t.Fatalf("round %d: stop_on_done ended after %d of %d messages", round, len(ds), total)
		}
	}
}

func checkStaleDone(t TB, e *env) {
	inner := e.newFS()
	crash := crashModelOf(inner)
	fsys, log := recording(inner)
	writeFile(t, fsys, core.DoneFile, []byte(`{"status":"success","count":1}`))
	noErr(t, "SyncDir", fsys.SyncDir("."))
	if crash != nil && !exists(crash(e.cfg.Seed, 0), core.DoneFile) {
		t.Errorf("DONE is not there after a power cut, though SyncDir(.) returned after its creation")
	}
	o := spoolOptions(t, "stop_on_done=true")
	log.take()
	p, err := core.OpenProducer(fsys, o)
	noErr(t, "OpenProducer", err)
	defer p.Close()
	ops := log.take()
	if exists(fsys, core.DoneFile) {
		t.Fatalf("a producer opened without removing the stale DONE")
	}
	ri := find(ops, 0, isOp(OpRemove, core.DoneFile))
	if ri < 0 || find(ops, ri, isOp(OpSyncDir, ".")) < 0 {
		t.Errorf("the stale DONE was not removed durably (Remove then SyncDir(.)) at open: %v", ops)
	}
	if crash != nil {
		if exists(crash(e.cfg.Seed, 0), core.DoneFile) {
			t.Errorf("after a power cut right after OpenProducer, the stale DONE is back")
		}
	}
	// A stop_on_done consumer now waits for the new producer.
	c, err := core.OpenConsumer(fsys, o)
	noErr(t, "OpenConsumer", err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a stop_on_done consumer with a new producer running: Read = %v, want to wait", err)
	}
}
