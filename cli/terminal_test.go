//go:build unix

package cli_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onTerminal is an mqb process whose standard error (and, when asked,
// standard output) is a pseudo-terminal, as in an interactive shell.
type onTerminal struct {
	cmd    *exec.Cmd
	screen *lockedBuffer // everything written to the terminal
	done   chan struct{}
	code   int
}

// startOnTerminal starts mqb with standard error on a new 120x30
// pseudo-terminal; stdin and stdout are what cmd gets in setup (the
// terminal when stdoutTerminal is set).
func startOnTerminal(t *testing.T, stdoutTerminal bool, setup func(*exec.Cmd), args ...string) *onTerminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 30, Cols: 120}))
	cmd := exec.Command(mqb, args...)
	cmd.Stderr = tty
	if stdoutTerminal {
		cmd.Stdout = tty
	}
	if setup != nil {
		setup(cmd)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
	require.NoError(t, cmd.Start())
	require.NoError(t, tty.Close())
	p := &onTerminal{cmd: cmd, screen: &lockedBuffer{}, done: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(p.screen, ptmx) // ends with EIO once the process is gone
	}()
	go func() {
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		ptmx.Close()
	})
	return p
}

// waitFor waits until the terminal shows text matching re.
func (p *onTerminal) waitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for !rx.MatchString(p.screen.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q; it shows:\n%q", re, p.screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *onTerminal) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(60 * time.Second):
		t.Fatalf("mqb %v did not exit; terminal: %q", p.cmd.Args, p.screen.String())
		return -1
	}
}

// A live consumer printing to the terminal it runs in: every data line
// stays visible and no progress display is drawn over them.
func TestTerminalLiveConsumerKeepsDataLines(t *testing.T) {
	spool := "dir-spool://" + filepath.Join(t.TempDir(), "live") + "?shard_depth=1"
	ok(t, "first\nsecond\n", "copy", "--from", "stdin://", "--to", spool)
	p := startOnTerminal(t, true, nil, "copy", "--from", spool, "--to", "stdout://")
	p.waitFor(t, `second\r\n`)
	ok(t, "third\n", "copy", "--from", "stdin://", "--to", spool)
	p.waitFor(t, `third\r\n`)
	time.Sleep(time.Second) // five refreshes of a display, were one drawn
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 130, p.wait(t))
	screen := p.screen.String()
	assert.Contains(t, screen, "first\r\nsecond\r\n")
	assert.NotContains(t, screen, "msg/s", "a progress display was drawn over the data")
	assert.NotContains(t, screen, "\x1b[K", "a progress display was drawn over the data")
}

// With an input of unknown size the display counts messages and gives a
// rate, never a total of 0 or an ETA; an interrupt leaves a line saying
// how many messages were written.
func TestTerminalProgressUnknownTotalThenInterrupt(t *testing.T) {
	spool := "dir-spool://" + filepath.Join(t.TempDir(), "in")
	var stdin io.WriteCloser
	p := startOnTerminal(t, false, func(cmd *exec.Cmd) {
		var err error
		stdin, err = cmd.StdinPipe()
		require.NoError(t, err)
	}, "copy", "--from", "stdin://", "--to", spool)
	_, err := io.WriteString(stdin, "a\nb\nc\n")
	require.NoError(t, err)
	p.waitFor(t, `copy  3 msgs  \d+ msg/s`)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 130, p.wait(t))
	stdin.Close()
	screen := p.screen.String()
	assert.Regexp(t, `copy interrupted  3 msgs  \d+ msg/s  [0-9.]+m?s\x1b\[K\r\n`, screen)
	assert.NotContains(t, screen, "/ 0")
	assert.NotContains(t, screen, "ETA")
}

// A drain with a known total interrupted part way: the last line says how
// far it got, not 100%.
func TestTerminalInterruptedDrainShowsWhereItStopped(t *testing.T) {
	spool := "dir-spool://" + filepath.Join(t.TempDir(), "big") + "?fsync=none"
	line := strings.Repeat("x", 999) + "\n"
	ok(t, strings.Repeat(line, 400), "copy", "--from", "stdin://", "--to", spool)
	var stdout io.ReadCloser
	p := startOnTerminal(t, false, func(cmd *exec.Cmd) {
		var err error
		stdout, err = cmd.StdoutPipe() // left unread: the copy blocks once the pipe is full
		require.NoError(t, err)
	}, "copy", "--drain", "--batch-size", "10", "--from", spool, "--to", "stdout://")
	p.waitFor(t, `\] +\d+%  \d+ / 400 msgs`)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	time.Sleep(300 * time.Millisecond) // the signal is handled before the pipe is read
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	assert.Equal(t, 130, p.wait(t))
	m := regexp.MustCompile(`copy interrupted +(\d+)%  (\d+) / 400 msgs`).FindStringSubmatch(p.screen.String())
	require.NotNil(t, m, "no final line in %q", p.screen.String())
	pct, _ := strconv.Atoi(m[1])
	done, _ := strconv.Atoi(m[2])
	assert.Less(t, done, 400)
	assert.InDelta(t, float64(done)*100/400, pct, 0.51, "the percentage matches the count")
}
