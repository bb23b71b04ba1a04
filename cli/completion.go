package cli

import (
	"fmt"

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
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return usage(fmt.Errorf("unknown shell %q (valid: bash, zsh, fish, powershell)", args[0]))
		},
	}
}
