//go:build linux

package osfs_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
	"github.com/stretchr/testify/require"
)

// The helper-process pattern: the test binary re-executes itself with
// helperEnv set to a role, and TestMain runs runHelper instead of the tests.
// A helper reports on stdout, one line per event, each written before the
// next step so that a SIGKILL loses nothing it reported:
//
//	open                      the role is claimed and ready
//	claimed <error>           the claim was held (exit 3)
//	fail <error>              anything else failed (exit 4)
//	acked <seq> <id>          producer: Write returned for this message
//	got <seq> <id> <0|1>      consumer: delivered; 1 if the payload is whole
//	done <seq>                consumer: Ack returned for this message
//	end                       finished normally (exit 0)
//
// lock_test.go's TestMain runs the role named by helperEnv.
const helperEnv = "MQB_CONFORMANCE_HELPER"

// longMode is conformance's long mode: more process kills.
func longMode() bool {
	v := os.Getenv("MQB_CONFORMANCE_LONG")
	return v != "" && v != "0" && v != "false"
}

type helperParams struct {
	dir   string
	query string // spool URL query
	gen   int    // generation: message ids are g<gen>-<i>
	count int    // producer: messages to write; 0 = until stdin closes
	batch int
	pace  time.Duration // producer: pause between batches
	exit  bool          // consumer: end when the spool is empty
	wrap  []string      // a command to run the helper under (strace ...), or nil
}

func (p helperParams) env(role string) []string {
	return append(os.Environ(),
		helperEnv+"="+role,
		"MQB_CH_DIR="+p.dir,
		"MQB_CH_QUERY="+p.query,
		"MQB_CH_GEN="+strconv.Itoa(p.gen),
		"MQB_CH_COUNT="+strconv.Itoa(p.count),
		"MQB_CH_BATCH="+strconv.Itoa(p.batch),
		"MQB_CH_PACE="+p.pace.String(),
		"MQB_CH_EXIT="+strconv.FormatBool(p.exit),
	)
}

// helperID is the id of message i of generation gen.
func helperID(gen, i int) string { return fmt.Sprintf("g%d-%06d", gen, i) }

func runHelper(role string) int {
	atoi := func(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
	pace, _ := time.ParseDuration(os.Getenv("MQB_CH_PACE"))
	p := helperParams{dir: os.Getenv("MQB_CH_DIR"), query: os.Getenv("MQB_CH_QUERY"), gen: atoi("MQB_CH_GEN"),
		count: atoi("MQB_CH_COUNT"), batch: max(1, atoi("MQB_CH_BATCH")), pace: pace, exit: os.Getenv("MQB_CH_EXIT") == "true"}
	out := os.Stdout
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(out, format+"\n", args...) }
	fail := func(err error) int {
		if errors.Is(err, core.ErrClaimed) {
			say("claimed %v", err)
			return 3
		}
		say("fail %v", err)
		return 4
	}
	o, err := core.ParseURL("dir-spool://" + p.dir + "?" + p.query)
	if err != nil {
		return fail(err)
	}
	fsys, err := osfs.New(p.dir, osfs.Options{CreateRoot: true})
	if err != nil {
		return fail(err)
	}
	// Closing stdin asks the helper to finish.
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	switch role {
	case "producer":
		pr, err := core.OpenProducer(fsys, o)
		if err != nil {
			return fail(err)
		}
		say("open")
		for i := 0; (p.count == 0 || i < p.count) && !stopped(); {
			n := p.batch
			if p.count > 0 {
				n = min(n, p.count-i)
			}
			msgs := make([]core.Message, n)
			for k := range msgs {
				id := helperID(p.gen, i+k)
				msgs[k] = core.Message{ID: id, Payload: conformance.MakePayload(id, (i+k)*97%2000), Metadata: map[string]string{"gen": strconv.Itoa(p.gen)}}
			}
			first := pr.NextSeq()
			k, err := pr.Write(context.Background(), msgs)
			var b bytes.Buffer
			for j := range k {
				fmt.Fprintf(&b, "acked %d %s\n", first+uint64(j), msgs[j].ID)
			}
			_, _ = out.Write(b.Bytes())
			if err != nil {
				return fail(err)
			}
			i += n
			if p.pace > 0 {
				time.Sleep(p.pace)
			}
		}
		if err := pr.Close(); err != nil {
			return fail(err)
		}
	case "consumer":
		o.ExitWhenEmpty = p.exit
		c, err := core.OpenConsumer(fsys, o)
		if err != nil {
			return fail(err)
		}
		say("open")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for {
			ds, err := c.Read(ctx, p.batch)
			if errors.Is(err, core.ErrEnd) {
				break
			}
			if err != nil {
				return fail(err)
			}
			var b bytes.Buffer
			for _, d := range ds {
				id, ok := conformance.ParsePayload(d.Payload)
				if d.MessageID != id {
					ok = false
				}
				fmt.Fprintf(&b, "got %d %s %d\n", d.Seq, id, map[bool]int{false: 0, true: 1}[ok])
			}
			_, _ = out.Write(b.Bytes())
			if err := c.Ack(ds...); err != nil {
				return fail(err)
			}
			b.Reset()
			for _, d := range ds {
				fmt.Fprintf(&b, "done %d\n", d.Seq)
			}
			_, _ = out.Write(b.Bytes())
		}
		if err := c.Close(); err != nil {
			return fail(err)
		}
	case "holder":
		if err := holdDeliveries(fsys, o, p, say, stop); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown helper role %q", role))
	}
	say("end")
	return 0
}

// holdDeliveries is the "holder" role: it acks p.count messages in
// batches of p.batch, reads one more batch, nacks its first half, says
// "holding" and waits, the other half in flight, to be killed.
func holdDeliveries(fsys core.FS, o core.Options, p helperParams, say func(string, ...any), stop <-chan struct{}) error {
	c, err := core.OpenConsumer(fsys, o)
	if err != nil {
		return err
	}
	say("open")
	ctx := context.Background()
	for acked := 0; acked < p.count; {
		ds, err := c.Read(ctx, min(p.batch, p.count-acked))
		if err != nil {
			return err
		}
		if err := c.Ack(ds...); err != nil {
			return err
		}
		for _, d := range ds {
			say("done %d", d.Seq)
		}
		acked += len(ds)
	}
	ds, err := c.Read(ctx, p.batch)
	if err != nil {
		return err
	}
	if err := c.Nack(ds[:len(ds)/2]...); err != nil {
		return err
	}
	say("holding")
	<-stop
	return c.Close()
}

// helper is a running helper process.
type helper struct {
	role   string
	gen    int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	killed bool

	mu     sync.Mutex
	lines  []string
	first  chan string // the first line
	eof    chan struct{}
	exited chan error
}

func startHelper(t testing.TB, role string, p helperParams) *helper {
	t.Helper()
	h := &helper{role: role, gen: p.gen, first: make(chan string, 1), eof: make(chan struct{}), exited: make(chan error, 1)}
	argv := append(slices.Clone(p.wrap), os.Args[0], "-test.run=^$")
	h.cmd = exec.Command(argv[0], argv[1:]...)
	h.cmd.Env = p.env(role)
	h.cmd.Stderr = &h.stderr
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	h.stdin, err = h.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, h.cmd.Start())
	go func() {
		defer close(h.eof)
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			h.mu.Lock()
			h.lines = append(h.lines, line)
			h.mu.Unlock()
			if !sent {
				h.first <- line
				sent = true
			}
		}
		if !sent {
			h.first <- ""
		}
	}()
	go func() {
		<-h.eof
		h.exited <- h.cmd.Wait()
	}()
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
		}
	})
	return h
}

// opened waits for the helper's first line and returns an error unless it
// is "open".
func (h *helper) opened(d time.Duration) error {
	select {
	case line := <-h.first:
		h.first <- line // keep it for a second look
		if line != "open" {
			return fmt.Errorf("%s %d did not open: %q (stderr %q)", h.role, h.gen, line, h.stderr.String())
		}
		return nil
	case <-time.After(d):
		return fmt.Errorf("%s %d did not open within %v", h.role, h.gen, d)
	}
}

// kill SIGKILLs the helper and waits until it is gone and its output read.
func (h *helper) kill() {
	h.killed = true
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.exited
}

// finish closes the helper's stdin and waits for it to exit normally.
func (h *helper) finish(d time.Duration) error {
	h.stdin.Close()
	return h.wait(d)
}

func (h *helper) wait(d time.Duration) error {
	select {
	case err := <-h.exited:
		if err != nil {
			return fmt.Errorf("%s %d: %v; last output %q; stderr %q", h.role, h.gen, err, h.tail(), h.stderr.String())
		}
		if last := h.tail(); last != "end" {
			return fmt.Errorf("%s %d exited without finishing: %q", h.role, h.gen, last)
		}
		return nil
	case <-time.After(d):
		_ = h.cmd.Process.Kill()
		return fmt.Errorf("%s %d did not finish within %v; last output %q", h.role, h.gen, d, h.tail())
	}
}

func (h *helper) tail() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lines) == 0 {
		return ""
	}
	return h.lines[len(h.lines)-1]
}

// events returns the helper's output lines split into fields.
func (h *helper) events() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]string, 0, len(h.lines))
	for _, l := range h.lines {
		out = append(out, strings.Fields(l))
	}
	return out
}
