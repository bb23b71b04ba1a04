//go:build linux

package osfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pairings of producers and consumers that are not in one process, on the
// real filesystem: our producer and our consumer in two processes; an
// external producer (sh, printf, mv) feeding our consumer; our producer
// feeding an external consumer (sh, ls | sort, cat, rm).

var pairings = []struct {
	batch  int
	policy core.FsyncPolicy
}{
	{1, core.FsyncChunk}, {7, core.FsyncChunk}, {256, core.FsyncChunk},
	{1, core.FsyncBatch}, {7, core.FsyncBatch}, {256, core.FsyncBatch},
	{1, core.FsyncNone}, {7, core.FsyncNone}, {256, core.FsyncNone},
}

// TestProcessPair runs a producer process and a consumer process at the same
// time on one spool: the consumer must get every message, in order, whole,
// once, and end on the producer's DONE.
func TestProcessPair(t *testing.T) {
	const total = 400
	for _, pc := range pairings {
		t.Run(fmt.Sprintf("batch=%d/fsync=%s", pc.batch, pc.policy), func(t *testing.T) {
			dir := scratchDir(t)
			layout := "naming_pattern={seq:06}&shard_depth=2&shard_width=2&fsync=" + string(pc.policy)
			c := startHelper(t, "consumer", helperParams{dir: dir, query: layout + "&stop_on_done=true", batch: pc.batch})
			require.NoError(t, c.opened(30*time.Second))
			p := startHelper(t, "producer", helperParams{dir: dir, query: layout + "&emit_done=success", count: total, batch: pc.batch})
			require.NoError(t, p.wait(60*time.Second))
			require.NoError(t, c.wait(60*time.Second))
			var acked, got []string
			for _, ev := range p.events() {
				if ev[0] == "acked" {
					acked = append(acked, ev[1]+" "+ev[2])
				}
			}
			done := 0
			for _, ev := range c.events() {
				switch ev[0] {
				case "got":
					got = append(got, ev[1]+" "+ev[2])
					assert.Equal(t, "1", ev[3], "consumer got a torn payload: %v", ev)
				case "done":
					done++
				}
			}
			var want []string
			for i := range total {
				want = append(want, fmt.Sprintf("%d %s", i, helperID(0, i)))
			}
			assert.True(t, slices.Equal(acked, want), "producer acknowledged %d messages, not the %d in order", len(acked), total)
			assert.True(t, slices.Equal(got, want), "consumer got %d messages, not the %d in order (first difference at %d)", len(got), total, firstDiff(got, want))
			assert.Equal(t, total, done, "consumer acks")
			fsys, err := osfs.New(dir, osfs.Options{})
			require.NoError(t, err)
			defer fsys.Close()
			o, _ := core.ParseURL("dir-spool://" + dir + "?" + layout)
			st, err := core.Scan(context.Background(), fsys, o)
			require.NoError(t, err)
			assert.Zero(t, st.Chunks+st.Tmp+st.Orphans, "after the pair: %+v", st)
		})
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func needSh(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
}

// TestExternalProducer feeds our consumer from a shell loop that knows
// nothing of mqb but the naming: printf to a .tmp name, then mv.
func TestExternalProducer(t *testing.T) {
	needSh(t)
	for _, tc := range []struct {
		name, query, script string
		total               int
	}{
		{"flat", "", `
i=0
while [ $i -lt $N ]; do
  n=$(printf %09d $i)
  printf 'external %d\000\377\n' $i > $n.bin.tmp && mv $n.bin.tmp $n.bin
  i=$((i+1))
done
printf '{"status":"success"}\n' > DONE.tmp && mv DONE.tmp DONE
`, 80},
		{"sharded", "naming_pattern={seq:03}&shard_depth=1&shard_width=1", `
i=0
while [ $i -lt $N ]; do
  d=$((i/100)); n=$(printf %02d $((i%100)))
  mkdir -p $d
  printf 'external %d\000\377\n' $i > $d/$n.bin.tmp && mv $d/$n.bin.tmp $d/$n.bin
  i=$((i+1))
done
printf '{"status":"success"}\n' > DONE.tmp && mv DONE.tmp DONE
`, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := scratchDir(t)
			fsys, err := osfs.New(dir, osfs.Options{})
			require.NoError(t, err)
			defer fsys.Close()
			o, err := core.ParseURL("dir-spool://" + dir + "?stop_on_done=true&poll_interval=10ms&" + tc.query)
			require.NoError(t, err)
			c, err := core.OpenConsumer(fsys, o)
			require.NoError(t, err)
			defer c.Close()
			sh := exec.Command("sh", "-c", tc.script)
			sh.Dir = dir
			sh.Env = append(os.Environ(), "N="+strconv.Itoa(tc.total))
			var stderr bytes.Buffer
			sh.Stderr = &stderr
			require.NoError(t, sh.Start())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var got []*core.Delivery
			for {
				ds, err := c.Read(ctx, 10)
				if errors.Is(err, core.ErrEnd) {
					break
				}
				require.NoError(t, err, "Read after %d", len(got))
				got = append(got, ds...)
				require.NoError(t, c.Ack(ds...))
			}
			require.NoError(t, sh.Wait(), "external producer: %s", stderr.String())
			require.Len(t, got, tc.total)
			for i, d := range got {
				require.Equal(t, fmt.Sprintf("external %d\x00\xff\n", i), string(d.Payload), "message %d (order or bytes)", i)
				assert.Equal(t, uint64(i), d.Seq, "message %d", i)
				assert.Empty(t, d.MessageID, "message %d", i)
				assert.Empty(t, d.Metadata, "message %d", i)
			}
		})
	}
}

// externalConsumer is a shell consumer that uses only ls | sort, cat and
// rm on the spool (and sleep between looks that found nothing): each look
// appends the payloads it found, in order, to OUT, then removes them and
// their sidecars. It ends once DONE was there before a look that found
// nothing.
const externalConsumer = `
cd "$SPOOL"
while :; do
  fin=0; [ -e DONE ] && fin=1
  pay=""; side=""
  for f in $(ls | LC_ALL=C sort); do
    case $f in
      *.bin) pay="$pay $f"; side="$side ${f%.bin}.json";;
    esac
  done
  if [ -n "$pay" ]; then
    cat $pay >> "$OUT" && rm $pay && rm -f $side || exit 1
  else
    [ $fin = 1 ] && exit 0
    sleep 0.01
  fi
done
`

// TestExternalConsumer feeds a shell consumer from our producer while it
// runs.
func TestExternalConsumer(t *testing.T) {
	needSh(t)
	const total = 300
	for _, pc := range pairings {
		t.Run(fmt.Sprintf("batch=%d/fsync=%s", pc.batch, pc.policy), func(t *testing.T) {
			dir := scratchDir(t)
			out := filepath.Join(t.TempDir(), "out")
			fsys, err := osfs.New(dir, osfs.Options{})
			require.NoError(t, err)
			defer fsys.Close()
			o, err := core.ParseURL("dir-spool://" + dir + "?emit_done=success&fsync=" + string(pc.policy))
			require.NoError(t, err)
			sh := exec.Command("sh", "-c", externalConsumer)
			sh.Env = append(os.Environ(), "SPOOL="+dir, "OUT="+out)
			var stderr bytes.Buffer
			sh.Stderr = &stderr
			require.NoError(t, sh.Start())
			p, err := core.OpenProducer(fsys, o)
			require.NoError(t, err)
			var want bytes.Buffer
			for i := 0; i < total; {
				n := min(pc.batch, total-i)
				msgs := make([]core.Message, n)
				for k := range msgs {
					msgs[k].Payload = fmt.Appendf(nil, "line %06d\n", i+k)
					want.Write(msgs[k].Payload)
				}
				k, err := p.Write(context.Background(), msgs)
				require.NoError(t, err)
				require.Equal(t, n, k, "messages written")
				i += n
			}
			require.NoError(t, p.Close())
			done := make(chan error, 1)
			go func() { done <- sh.Wait() }()
			select {
			case err := <-done:
				require.NoError(t, err, "external consumer: %s", stderr.String())
			case <-time.After(time.Minute):
				sh.Process.Kill()
				require.FailNow(t, "external consumer did not finish")
			}
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			gl, wl := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
			require.True(t, bytes.Equal(got, want.Bytes()), "external consumer read %d lines, want %d; first difference at line %d", len(gl)-1, len(wl)-1, firstDiff(gl, wl))
			st, err := core.Scan(context.Background(), fsys, o)
			require.NoError(t, err)
			assert.Zero(t, st.Chunks+st.Tmp+st.Orphans, "after the external consumer: %+v", st)
		})
	}
}

// TestKill SIGKILLs a producer process and a consumer process that run at
// the same time, at random moments, many times, restarting each at once:
// the claims must be free right after death, no acknowledged message may
// be lost or torn, sequence numbers never reused, and a message is
// delivered twice only if the consumer that first got it died before its
// Ack returned.
func TestKill(t *testing.T) {
	kills := 30 // of each role
	if longMode() {
		kills = 150
	}
	if testing.Short() {
		kills = 5
	}
	dir := scratchDir(t)
	layout := "naming_pattern={seq:06}&shard_depth=2&shard_width=2&poll_interval=20ms"
	policies := []core.FsyncPolicy{core.FsyncChunk, core.FsyncBatch, core.FsyncNone}
	seed := time.Now().UnixNano()
	t.Logf("kill timing seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	gen := 0
	var producers, consumers []*helper
	startP := func() *helper {
		gen++
		h := startHelper(t, "producer", helperParams{dir: dir, gen: gen, query: layout + "&fsync=" + string(policies[gen%3]),
			batch: []int{1, 7, 32}[gen%3], pace: time.Millisecond})
		producers = append(producers, h)
		return h
	}
	startC := func(exit bool) *helper {
		gen++
		h := startHelper(t, "consumer", helperParams{dir: dir, gen: gen, query: layout + "&fsync=" + string(policies[gen%3]),
			batch: []int{1, 5, 16}[gen%3], exit: exit})
		consumers = append(consumers, h)
		return h
	}
	var openWait time.Duration
	restart := func(start func() *helper, role string) *helper {
		t0 := time.Now()
		h := start()
		require.NoError(t, h.opened(30*time.Second), "right after a %s was killed", role)
		openWait = max(openWait, time.Since(t0))
		return h
	}
	p := restart(startP, "producer")
	c := restart(func() *helper { return startC(false) }, "consumer")
	for k := range 2 * kills {
		time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		if k%2 == 0 {
			p.kill()
			p = restart(startP, "producer")
		} else {
			c.kill()
			c = restart(func() *helper { return startC(false) }, "consumer")
		}
	}
	require.NoError(t, p.finish(time.Minute))
	c.kill()
	last := restart(func() *helper { return startC(true) }, "consumer")
	require.NoError(t, last.wait(2*time.Minute))

	// What the producers acknowledged: sequence -> id, never two ids for one
	// sequence.
	acked := map[uint64]string{}
	gens := map[int]*helper{}
	for _, h := range producers {
		gens[h.gen] = h
		for _, ev := range h.events() {
			if ev[0] != "acked" {
				continue
			}
			seq, _ := strconv.ParseUint(ev[1], 10, 64)
			prev, reused := acked[seq]
			assert.False(t, reused, "sequence %d acknowledged for %s and again for %s: a number was reused", seq, prev, ev[2])
			acked[seq] = ev[2]
		}
	}
	// What the consumers delivered, in order per process.
	type delivery struct {
		c    *helper
		id   string
		done bool
	}
	deliveries := map[uint64][]delivery{}
	unacked := 0 // delivered messages that no producer acknowledged (in flight at a producer's death)
	for _, h := range consumers {
		var prev uint64
		n := 0
		doneSeq := map[uint64]bool{}
		for _, ev := range h.events() {
			if ev[0] == "done" {
				s, _ := strconv.ParseUint(ev[1], 10, 64)
				doneSeq[s] = true
			}
		}
		for _, ev := range h.events() {
			if ev[0] != "got" {
				continue
			}
			seq, _ := strconv.ParseUint(ev[1], 10, 64)
			assert.Equal(t, "1", ev[3], "consumer %d got a torn or foreign payload at %d: %v", h.gen, seq, ev)
			if n > 0 {
				assert.Greater(t, seq, prev, "consumer %d: out of order", h.gen)
			}
			prev, n = seq, n+1
			if id, ok := acked[seq]; ok {
				assert.Equal(t, id, ev[2], "sequence %d delivered as %s but acknowledged as %s", seq, ev[2], id)
			} else {
				var g int
				fmt.Sscanf(ev[2], "g%d-", &g)
				ph := gens[g]
				assert.True(t, ph != nil && ph.killed, "%s delivered at %d: no producer that died in flight wrote it", ev[2], seq)
				unacked++
			}
			deliveries[seq] = append(deliveries[seq], delivery{c: h, id: ev[2], done: doneSeq[seq]})
		}
	}
	lost := 0
	for seq, id := range acked {
		if len(deliveries[seq]) == 0 {
			lost++
			if lost <= 5 { // the first few say enough
				assert.Fail(t, "an acknowledged message was lost", "%s (sequence %d) was acknowledged by its producer and never delivered", id, seq)
			}
		}
	}
	dups := 0
	for seq, ds := range deliveries {
		for _, d := range ds[:len(ds)-1] {
			dups++
			assert.True(t, d.c.killed && !d.done, "sequence %d delivered again after consumer %d acked it (killed %v, ack returned %v)", seq, d.c.gen, d.c.killed, d.done)
		}
	}
	fsys, err := osfs.New(dir, osfs.Options{})
	require.NoError(t, err)
	defer fsys.Close()
	o, _ := core.ParseURL("dir-spool://" + dir + "?" + layout)
	st, err := core.Scan(context.Background(), fsys, o)
	require.NoError(t, err)
	assert.Zero(t, st.Chunks+st.Tmp, "after the last consumer drained: %+v", st)
	conformance.Report(t, fmt.Sprintf("%d SIGKILLs (%d producers, %d consumers); %d messages acknowledged, %d deliveries, %d duplicates of in-flight deliveries, %d delivered that a dying producer had not acknowledged, %d orphan sidecars left; slowest restart to open %v",
		2*kills+1, len(producers), len(consumers), len(acked), len(deliveries)+dups, dups, unacked, st.Orphans, openWait.Round(time.Millisecond)))
}
