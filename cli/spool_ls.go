package cli

import (
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core"
)

type lsEntry struct {
	Name      string `json:"name"`
	Seq       uint64 `json:"seq"`
	Size      int64  `json:"size"`
	Sidecar   bool   `json:"sidecar"`
	MessageID string `json:"message_id,omitempty"`
}

func (a *app) spoolLsCommand() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "ls SPOOL",
		Short: "List the chunks waiting in a spool, oldest first",
		Long: `ls lists the committed chunks of a spool in delivery order: payload file,
sequence number, payload size and message id (from the sidecar). With --json
it prints one JSON object per line.`,
		Args: exactArgs(1, "one spool path or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usage(fmt.Errorf("--limit must not be negative"))
			}
			o, fsys, release, err := a.openSpool(args[0])
			if err != nil {
				return err
			}
			defer release()
			n, err := listChunks(cmd.OutOrStdout(), fsys, o, asJSON, limit)
			if err != nil || n > 0 {
				return err
			}
			// Nothing listed: the spool may be empty, or laid out otherwise.
			sv, err := core.SurveyLayout(cmd.Context(), fsys, o.Options)
			if err != nil || sv.Mismatch == nil {
				return err
			}
			fixed, fix := layoutOnDisk(args[0], o, sv.Mismatch)
			if fix == "" {
				return sv.Mismatch
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "mqb: spool %s: %s\n", o.Path, layoutNote(fix))
			_, err = listChunks(cmd.OutOrStdout(), fsys, fixed, asJSON, limit)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per chunk")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many chunks (0: all)")
	return cmd
}

// listChunks prints the chunks of the spool, at most limit of them (0:
// all), and returns how many it printed.
func listChunks(out io.Writer, fsys core.FS, o dirspool.Config, asJSON bool, limit int) (int, error) {
	l, err := o.Layout()
	if err != nil {
		return 0, err
	}
	n := 0
	err = walkPayloads(fsys, l, func(name string, seq uint64, e fs.DirEntry) bool {
		ent := lsEntry{Name: name, Seq: seq}
		if fi, err := e.Info(); err == nil {
			ent.Size = fi.Size()
		}
		if l.Sidecars() {
			ent.Sidecar, ent.MessageID = sidecarID(fsys, l.SidecarOf(name))
		}
		if asJSON {
			_ = writeJSONLine(out, ent)
		} else {
			fmt.Fprintf(out, "%s\t%d\t%d\t%s\n", ent.Name, ent.Seq, ent.Size, orDash(ent.MessageID))
		}
		n++
		return limit == 0 || n < limit
	})
	if err != nil {
		return n, fmt.Errorf("spool %s: list: %w", o.Path, err)
	}
	return n, nil
}

// sidecarID reads the message id from a chunk's sidecar: whether the
// sidecar is there, and the id ("" when it holds none).
func sidecarID(fsys core.FS, name string) (bool, string) {
	b, err := readFile(fsys, name)
	if err != nil {
		return false, ""
	}
	var sc struct {
		ID string `json:"message_id"`
	}
	_ = jsonUnmarshal(b, &sc)
	return true, sc.ID
}

// walkPayloads calls fn for every committed payload in delivery order until
// fn returns false.
func walkPayloads(fsys core.FS, l *core.Layout, fn func(name string, seq uint64, e fs.DirEntry) bool) error {
	var walk func(dir string, level int) (bool, error)
	walk = func(dir string, level int) (bool, error) {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			if dir != "." && isNotExist(err) {
				return true, nil // removed behind a consumer
			}
			return false, err
		}
		for _, e := range entries {
			full := e.Name()
			if dir != "." {
				full = path.Join(dir, e.Name())
			}
			if level < l.Depth() {
				if e.IsDir() && e.Type()&fs.ModeSymlink == 0 && l.IsShardDir(e.Name()) {
					if more, err := walk(full, level+1); err != nil || !more {
						return more, err
					}
				}
				continue
			}
			if !e.Type().IsRegular() {
				continue
			}
			if seq, kind, ok := l.ParseLeaf(dir, e.Name()); ok && kind == core.KindPayload {
				if !fn(full, seq, e) {
					return false, nil
				}
			}
		}
		return true, nil
	}
	_, err := walk(".", 0)
	return err
}
