package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

func (a *app) spoolCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spool",
		Short: "Inspect a directory spool",
		Long: `The spool commands look into a directory spool without changing it. SPOOL is
an absolute path or a dir-spool URL. Given a path, they read a spool whose
files the default options do not fit with the naming and sharding the files
show, and say so; a URL gives the options to use:

  mqb spool stat 'dir-spool:///var/spool/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				hint := ""
				if c := option.Closest(args[0], []string{"stat", "ls", "peek", "fields"}); c != "" {
					hint = fmt.Sprintf("; did you mean %q?", c)
				}
				return usage(fmt.Errorf("unknown spool command %q (valid: stat, ls, peek, fields)%s", args[0], hint))
			}
			return usage(fmt.Errorf("spool needs a command: stat, ls, peek or fields"))
		},
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(a.spoolStatCommand(), a.spoolLsCommand(), a.spoolPeekCommand(), a.spoolFieldsCommand())
	return cmd
}

// spoolOptions turns a SPOOL argument into spool options.
func (a *app) spoolOptions(arg string) (dirspool.Config, error) {
	if strings.Contains(arg, "://") {
		a.rememberSecrets(bridge.Endpoint{URL: arg})
		r, err := a.env.Resolve(bridge.Endpoint{URL: arg})
		if err != nil {
			return dirspool.Config{}, err
		}
		if r.Connector.Schema != dirspool.Schema {
			return dirspool.Config{}, usage(fmt.Errorf("%s is not a directory spool (valid schemes: %s)", r.Display, strings.Join(core.SpoolSchemes, ", ")))
		}
		o, err := dirspool.Decode(a.env, r.Values)
		if err != nil {
			return dirspool.Config{}, &bridge.ConfigError{Where: r.Display, Err: err}
		}
		return o, nil
	}
	if !filepath.IsAbs(arg) {
		abs, _ := filepath.Abs(arg)
		return dirspool.Config{}, usage(fmt.Errorf("spool path %q is relative: give an absolute path such as %s", arg, abs))
	}
	return dirspool.DefaultConfig(filepath.Clean(arg)), nil
}

// openSpool opens the filesystem of a SPOOL argument for reading.
func (a *app) openSpool(arg string) (dirspool.Config, core.FS, func() error, error) {
	o, err := a.spoolOptions(arg)
	if err != nil {
		return o, nil, nil, err
	}
	fsys, release, err := o.OpenFS(a.env, false)
	if err != nil {
		return o, nil, nil, err
	}
	return o, fsys, release, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// layoutOnDisk returns the options that read a spool named by a bare path
// when its chunks all sit in one layout other than the defaults (a sharded
// spool, longer names), as the refusal m describes it, and the settings
// that differ (m.Fix); o and "" otherwise. A spool named by a URL is read
// with the options the URL gives.
func layoutOnDisk(arg string, o dirspool.Config, m *core.LayoutError) (dirspool.Config, string) {
	if strings.Contains(arg, "://") || m == nil || m.Fixed == nil || m.Others > 0 {
		return o, ""
	}
	o.Options = *m.Fixed
	return o, m.Fix
}

// layoutNote tells that a spool was read with the settings fix.
func layoutNote(fix string) string {
	return fmt.Sprintf("read as %s, the layout found on disk (name the spool by a dir-spool URL to choose the options)", fix)
}
