package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) completionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `completion prints the completion script of a shell. For example:

  mqb completion bash > /etc/bash_completion.d/mqb
  mqb completion zsh > "${fpath[1]}/_mqb"
  mqb completion fish > ~/.config/fish/completions/mqb.fish`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				_, err := io.WriteString(out, bashScript)
				return err
			case "zsh":
				return writeZshCompletion(root, out)
			case "fish":
				return writeFishCompletion(root, out)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usage(fmt.Errorf("unknown shell %q (valid: bash, zsh, fish, powershell)", args[0]))
		},
	}
}

// patchScript applies fixes (old, new) to a completion script cobra
// generated, failing when cobra's text changed under one of them.
func patchScript(shell, script string, fixes [][2]string, out io.Writer) error {
	for _, fix := range fixes {
		if !strings.Contains(script, fix[0]) {
			return fmt.Errorf("%s completion: cobra's script no longer contains %q", shell, fix[0])
		}
		script = strings.ReplaceAll(script, fix[0], fix[1])
	}
	_, err := io.WriteString(out, script)
	return err
}

// writeZshCompletion prints cobra's zsh script with two fixes: a word in
// an open quote ('dir-spool:///s?fs) gets its quote closed before the
// script evaluates it, and only a word starting with - counts as
// --flag=value (cobra's test matched "-spool:///s?fsync=" in a URL and
// garbled the value).
func writeZshCompletion(root *cobra.Command, out io.Writer) error {
	var b strings.Builder
	if err := root.GenZshCompletion(&b); err != nil {
		return err
	}
	const truncate = "    words=(\"${=words[1,CURRENT]}\")\n"
	return patchScript("zsh", b.String(), [][2]string{
		{truncate, truncate + "    if [[ -n ${compstate[quote]} ]]; then words[-1]+=${compstate[quote]}; fi\n"},
		{`[[ "${lastParam}" =~ '-.*=' ]]`, `[[ "${lastParam}" =~ '^-.*=' ]]`},
	}, out)
}

// writeFishCompletion prints cobra's fish script with the word at the
// cursor unescaped before it goes to "mqb __complete" and before the
// candidates are matched against it, so that an escaped or quoted ? or &
// in a URL (dir-spool:///s\?fs) completes to option names, and with the
// zsh script's --flag=value fix.
func writeFishCompletion(root *cobra.Command, out io.Writer) error {
	var b strings.Builder
	if err := root.GenFishCompletion(&b, true); err != nil {
		return err
	}
	return patchScript("fish", b.String(), [][2]string{
		{"(commandline -ct)", "(commandline -ct | string unescape)"},
		{"(commandline -t | string escape", "(commandline -t | string unescape | string escape"},
		{`(string match -r -- '-.*=' "$lastArg")`, `(string match -r -- '^-.*=' (commandline -ct | string unescape))`},
		{`string split --max 1 \t $`, `string split --max 1 \t -- $`}, // a value may start with -
	}, out)
}
