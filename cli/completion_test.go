//go:build unix

package cli_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shellSession is an interactive shell on a pseudo-terminal in which a
// key (C-x C-l) prints the command line being edited as LINE<...>.
type shellSession struct {
	name   string
	ptmx   *os.File
	screen *lockedBuffer
	lines  int
}

// startShell starts shell with args and the environment env on a new
// pseudo-terminal and waits for its prompt ("$ ").
func startShell(t *testing.T, shell string, args, env []string) *shellSession {
	t.Helper()
	cmd := exec.Command(shell, args...)
	cmd.Env = append(env, "PATH="+os.Getenv("PATH"), "LANG=C.UTF-8")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	require.NoError(t, err)
	s := &shellSession{name: filepath.Base(shell), ptmx: ptmx, screen: &lockedBuffer{}}
	go func() { _, _ = io.Copy(s.screen, ptmx) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); ptmx.Close() })
	require.Eventually(t, func() bool { return strings.Contains(s.screen.String(), "$ ") }, 20*time.Second, 20*time.Millisecond,
		"%s showed no prompt; terminal:\n%s", s.name, s.screen)
	return s
}

var printedLine = regexp.MustCompile(`(?m)LINE<(.*)>\r?$`)

// complete types typed, then TAB, and returns the command line the shell
// then holds; it clears the line for the next one.
func (s *shellSession) complete(t *testing.T, typed string) string {
	t.Helper()
	s.lines++
	_, err := s.ptmx.Write([]byte(typed + "\t\x18\x0c\x15")) // TAB, C-x C-l, C-u
	require.NoError(t, err)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := printedLine.FindAllStringSubmatch(s.screen.String(), -1); len(got) >= s.lines {
			return got[s.lines-1][1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s printed no command line for %q; terminal:\n%s", s.name, typed, s.screen)
	return ""
}

// An interactive bash with "mqb completion bash" loaded (and no other
// completion package) completes what the user typed, as typed: with ? and
// & escaped, in an open quote, after --flag=.
func TestBashCompletionInATerminal(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the completion script cannot be tried in a real shell")
	}
	dir := t.TempDir()
	rc := writeFile(t, filepath.Join(dir, "rc"), fmt.Sprintf(`PS1='$ '
PATH=%s:$PATH
source <(mqb completion bash)
bind 'set bell-style none'
bind -x '"\C-x\C-l": printf "\nLINE<%%s>\n" "$READLINE_LINE"'
`, filepath.Dir(mqb)))
	sh := startShell(t, bash, []string{"--noprofile", "--rcfile", rc, "-i"}, []string{"HOME=" + dir, "TERM=dumb"})
	for typed, want := range map[string]string{
		`mqb copy --to dro`:                                    `mqb copy --to dropzone://`,
		`mqb copy --from dir-spool:///tmp/s?fs`:                `mqb copy --from dir-spool:///tmp/s\?fsync=`,
		`mqb copy --from 'dir-spool:///tmp/s?fs`:               `mqb copy --from 'dir-spool:///tmp/s?fsync='`,
		`mqb copy --from "dir-spool:///tmp/my s?fs`:            `mqb copy --from "dir-spool:///tmp/my s?fsync="`,
		`mqb copy --from dir-spool:///tmp/s\?fsync=ba`:         `mqb copy --from dir-spool:///tmp/s\?fsync=batch`,
		`mqb copy --from dir-spool:///tmp/s\?fsync=none\&sh`:   `mqb copy --from dir-spool:///tmp/s\?fsync=none\&shard_`,
		`mqb copy --from dir-spool:///tmp/s\?fsync=none\&emit`: `mqb copy --from dir-spool:///tmp/s\?fsync=none\&emit_done=`,
		`mqb copy --from 'dir-spool:///tmp/s?fsync='ch`:        `mqb copy --from dir-spool:///tmp/s\?fsync=chunk`,
		`mqb copy --to file:///tmp/o\?append=f`:                `mqb copy --to file:///tmp/o\?append=false`,
		`mqb copy --from=dir-spool:///x\?drain_on`:             `mqb copy --from=dir-spool:///x\?drain_on_read=`,
		`mqb copy --fr`: `mqb copy --from `,
		`mqb spool st`:  `mqb spool stat `,
	} {
		assert.Equal(t, want, sh.complete(t, typed), "completing %q", typed)
	}
}

// zsh, with compinit and "mqb completion zsh", completes the same URLs.
func TestZshCompletionInATerminal(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed: the zsh completion script cannot be tried in a real shell")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".zshrc"), fmt.Sprintf(`PS1='$ '
PATH=%s:$PATH
autoload -U compinit && compinit -u -D
source <(mqb completion zsh)
unsetopt beep
__print_line() { zle -I; print -r -- "LINE<$BUFFER>"; }
zle -N __print_line
bindkey '^X^L' __print_line
`, filepath.Dir(mqb)))
	sh := startShell(t, zsh, []string{"-i"}, []string{"HOME=" + dir, "ZDOTDIR=" + dir, "TERM=xterm"})
	for typed, want := range map[string]string{
		`mqb copy --to dro`:                                       `mqb copy --to dropzone://`,
		`mqb copy --from dir-spool:///tmp/s\?fs`:                  `mqb copy --from dir-spool:///tmp/s\?fsync=`,
		`mqb copy --from 'dir-spool:///tmp/s?fs`:                  `mqb copy --from 'dir-spool:///tmp/s?fsync=`,
		`mqb copy --from dir-spool:///tmp/s\?fsync=ba`:            `mqb copy --from dir-spool:///tmp/s\?fsync=batch`,
		`mqb copy --from dir-spool:///tmp/s\?fsync=none\&shard_w`: `mqb copy --from dir-spool:///tmp/s\?fsync=none\&shard_width=`,
		`mqb copy --from=dir-spool:///x\?drain_on`:                `mqb copy --from=dir-spool:///x\?drain_on_read=`,
		`mqb spool st`: `mqb spool stat `,
	} {
		assert.Equal(t, want, sh.complete(t, typed), "completing %q", typed)
	}
}

// fish, given the script "mqb completion fish" prints, completes option
// names and values in a URL whose ? and & are escaped or quoted.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed: the fish completion script cannot be tried")
	}
	script := writeFile(t, filepath.Join(t.TempDir(), "mqb.fish"), ok(t, "", "completion", "fish").stdout)
	complete := func(line string) []string {
		cmd := exec.Command(fish, "--private", "-c", "source "+script+"; complete -C "+line)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(mqb)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		var texts []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			text, _, _ := strings.Cut(l, "\t") // then its description
			texts = append(texts, text)
		}
		return texts
	}
	assert.Equal(t, []string{"dir-spool:///s?fsync="}, complete(`'mqb copy --from dir-spool:///s\?fs'`))
	assert.Equal(t, []string{"dir-spool:///s?fsync="}, complete(`"mqb copy --from 'dir-spool:///s?fs"`))
	assert.Equal(t, []string{"dir-spool:///s?fsync=none&shard_width="}, complete(`'mqb copy --from dir-spool:///s\?fsync=none\&shard_w'`))
	assert.Equal(t, []string{"dir-spool:///s?fsync=batch", "dir-spool:///s?fsync=chunk", "dir-spool:///s?fsync=none"}, complete(`'mqb copy --from dir-spool:///s\?fsync='`))
	assert.Equal(t, []string{"--from=dir-spool:///s?fsync="}, complete(`'mqb copy --from=dir-spool:///s\?fs'`))
}
