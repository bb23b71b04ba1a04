package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/mqb-project/mqb/cli.Version=v1.2.3".
var Version = "dev"

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of mqb",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rev, modified := "", false
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						rev = s.Value
					case "vcs.modified":
						modified = s.Value == "true"
					}
				}
			}
			line := fmt.Sprintf("mqb %s %s %s/%s", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if rev != "" {
				if len(rev) > 12 {
					rev = rev[:12]
				}
				if modified {
					rev += "+dirty"
				}
				line += " " + rev
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			return nil
		},
	}
}
