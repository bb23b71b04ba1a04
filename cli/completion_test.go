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

// An interactive bash with "mqb completion bash" loaded (and no other
// completion package) completes what the user typed: TAB is sent through
// a pseudo-terminal and a key bound to print $READLINE_LINE reads the
// command line back.
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
	cmd := exec.Command(bash, "--noprofile", "--rcfile", rc, "-i")
	cmd.Env = []string{"HOME=" + dir, "TERM=dumb", "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	require.NoError(t, err)
	screen := &lockedBuffer{}
	go func() { _, _ = io.Copy(screen, ptmx) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); ptmx.Close() })

	require.Eventually(t, func() bool { return strings.Contains(screen.String(), "$ ") }, 20*time.Second, 20*time.Millisecond,
		"bash showed no prompt; terminal:\n%s", screen)
	lines := 0
	complete := func(typed string) string {
		t.Helper()
		lines++
		_, err := ptmx.Write([]byte(typed + "\t\x18\x0c\x15")) // TAB, C-x C-l, C-u
		require.NoError(t, err)
		line := regexp.MustCompile(`(?m)^LINE<(.*)>\r?$`)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if got := line.FindAllStringSubmatch(screen.String(), -1); len(got) >= lines {
				return got[lines-1][1]
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("bash printed no command line for %q; terminal:\n%s", typed, screen)
		return ""
	}
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
		assert.Equal(t, want, complete(typed), "completing %q", typed)
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
