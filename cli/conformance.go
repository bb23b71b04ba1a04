package cli

import (
	"fmt"
	"io"
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
		holdName  string
	)
	cmd := &cobra.Command{
		Use:   "conformance DIR",
		Short: "Check that a directory's filesystem keeps the spool's promises",
		Long: `conformance runs the checks of the conformance suite — the filesystem
contract (exclusive create, rename that never replaces, sorted listings,
claims...) and the spool protocol on top of it — against the real
filesystem under DIR, for example a network mount you want to put a spool on.
Each check works in a fresh subdirectory of DIR, removed afterwards. One
more check starts a second mqb process that holds a claim, to see that
claims (flock) exclude other processes and die with them.

It prints PASS, FAIL or SKIP per check, then a verdict per promise the
spool relies on (exclusive create, no-replace rename, atomic rename, fsync
of files and directories, claims within a process and across processes,
...): KEPT, BROKEN (with what goes wrong without it) or UNTESTED (with why).
It exits 1 when any check failed.`,
		Args: exactArgs(1, "one directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if holdName != "" {
				return holdClaim(dir, holdName, cmd.InOrStdin(), cmd.OutOrStdout())
			}
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
			return runConformance(cmd, dir, cfg, keep, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&run, "run", "", "run only the checks whose name matches this regular expression")
	fl.StringVar(&skip, "skip", "", "leave out the checks whose name matches this regular expression")
	fl.BoolVar(&long, "long", false, "explore more faults and crash points")
	fl.DurationVar(&timeout, "timeout", 0, "limit per check (default 2m, 10m with --long)")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object per check, then one per promise")
	fl.BoolVar(&keep, "keep", false, "keep the work directory for inspection")
	fl.StringVar(&holdName, holdClaimFlag, "", "hold this claim until stdin closes (the second process of ClaimAcrossProcesses)")
	_ = fl.MarkHidden(holdClaimFlag)
	return cmd
}

// runConformance runs the checks selected by cfg in a fresh work directory
// under dir, and prints them and the promise verdicts.
func runConformance(cmd *cobra.Command, dir string, cfg conformance.Config, keep, asJSON bool) error {
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
	results := conformance.CheckConfig(cmd.Context(), cfg, newFS)
	if (cfg.Match == nil || cfg.Match.MatchString(conformance.ClaimAcrossProcesses)) &&
		(cfg.Skip == nil || !cfg.Skip.MatchString(conformance.ClaimAcrossProcesses)) {
		results = append(results, claimAcrossProcesses(cmd.Context(), filepath.Join(work, "processes")))
	}
	failed, err := printConformance(cmd.OutOrStdout(), dir, results, asJSON)
	if err != nil {
		return err
	}
	if cmd.Context().Err() != nil {
		return fmt.Errorf("conformance: %w", cmd.Context().Err())
	}
	if failed > 0 {
		return fmt.Errorf("conformance: %d check(s) failed on %s", failed, dir)
	}
	return nil
}

// printConformance writes one line (or JSON object) per result, then one
// per promise verdict, and returns how many checks failed.
func printConformance(out io.Writer, dir string, results []conformance.Result, asJSON bool) (int, error) {
	failed := 0
	for _, r := range results {
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
				return failed, err
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
	verdicts := conformance.Verdicts(results)
	if !asJSON && len(verdicts) > 0 {
		fmt.Fprintf(out, "\nPromises on %s:\n", dir)
	}
	for _, v := range verdicts {
		if asJSON {
			if err := writeJSONLine(out, promiseVerdict{Promise: v.Promise, Verdict: v.Status, Checks: v.Checks, Detail: v.Detail}); err != nil {
				return failed, err
			}
			continue
		}
		line := fmt.Sprintf("%-9s %-42s %s", v.Status, v.Promise, strings.Join(v.Checks, ", "))
		if v.Detail != "" {
			line += "\n          " + v.Detail
		}
		fmt.Fprintln(out, line)
	}
	return failed, nil
}

// promiseVerdict is the --json form of a conformance.Verdict.
type promiseVerdict struct {
	Promise string   `json:"promise"`
	Verdict string   `json:"verdict"` // KEPT, BROKEN or UNTESTED
	Checks  []string `json:"checks"`
	Detail  string   `json:"detail,omitempty"`
}
