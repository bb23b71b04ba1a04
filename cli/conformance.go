package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

type conformanceResult struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"` // PASS, FAIL or SKIP
	Detail  string  `json:"detail,omitempty"`
	Seconds float64 `json:"seconds"`
}

func (a *app) conformanceCommand() *cobra.Command {
	var (
		run, skip string
		long      bool
		timeout   time.Duration
		asJSON    bool
		keep      bool
	)
	cmd := &cobra.Command{
		Use:   "conformance DIR",
		Short: "Check that a directory's filesystem keeps the spool's promises",
		Long: `conformance runs the checks of the conformance suite — the filesystem
contract (exclusive create, rename that never replaces, sorted listings,
claims...) and the spool protocol on top of it — against the real
filesystem under DIR, for example a network mount you want to put a spool on.
Each check works in a fresh subdirectory of DIR, removed afterwards. It
prints PASS, FAIL or SKIP per check and exits 1 when any check failed.`,
		Args: exactArgs(1, "one directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if !filepath.IsAbs(dir) {
				abs, _ := filepath.Abs(dir)
				return usage(fmt.Errorf("directory %q is relative: give an absolute path such as %s", dir, abs))
			}
			cfg := conformance.Config{Long: long, Timeout: timeout}
			var err error
			if run != "" {
				if cfg.Match, err = regexp.Compile(run); err != nil {
					return usage(fmt.Errorf("--run: %w", err))
				}
			}
			if skip != "" {
				if cfg.Skip, err = regexp.Compile(skip); err != nil {
					return usage(fmt.Errorf("--skip: %w", err))
				}
			}
			if fi, err := os.Stat(dir); err != nil {
				return fmt.Errorf("conformance: %w", err)
			} else if !fi.IsDir() {
				return fmt.Errorf("conformance: %s is not a directory", dir)
			}
			work, err := os.MkdirTemp(dir, "mqb-conformance-")
			if err != nil {
				return fmt.Errorf("conformance: make a work directory in %s: %w", dir, err)
			}
			if !keep {
				defer os.RemoveAll(work)
			}
			var n atomic.Int64
			newFS := func() (core.FS, error) {
				sub := filepath.Join(work, fmt.Sprintf("fs-%04d", n.Add(1)))
				return osfs.New(sub, osfs.Options{CreateRoot: true})
			}
			out := cmd.OutOrStdout()
			failed := 0
			for _, r := range conformance.CheckConfig(cmd.Context(), cfg, newFS) {
				res := conformanceResult{Name: r.Name, Status: "PASS", Seconds: r.Duration.Seconds()}
				switch {
				case r.Skipped:
					res.Status, res.Detail = "SKIP", r.Err
				case !r.Passed:
					res.Status, res.Detail = "FAIL", r.Err
					failed++
				}
				if asJSON {
					if err := writeJSONLine(out, res); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%s\t%s\t%.2fs\n", res.Status, res.Name, res.Seconds)
				if res.Detail != "" {
					for _, line := range strings.Split(strings.TrimRight(res.Detail, "\n"), "\n") {
						fmt.Fprintf(out, "\t%s\n", line)
					}
				}
			}
			if cmd.Context().Err() != nil {
				return fmt.Errorf("conformance: %w", cmd.Context().Err())
			}
			if failed > 0 {
				return fmt.Errorf("conformance: %d check(s) failed on %s", failed, dir)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&run, "run", "", "run only the checks whose name matches this regular expression")
	fl.StringVar(&skip, "skip", "", "leave out the checks whose name matches this regular expression")
	fl.BoolVar(&long, "long", false, "explore more faults and crash points")
	fl.DurationVar(&timeout, "timeout", 0, "limit per check (default 2m, 10m with --long)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per check")
	fl.BoolVar(&keep, "keep", false, "keep the work directory for inspection")
	return cmd
}
