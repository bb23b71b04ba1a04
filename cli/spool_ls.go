package cli

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/spf13/cobra"

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
			l, err := o.Layout()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			n := 0
			err = walkPayloads(fsys, l, func(name string, seq uint64, e fs.DirEntry) bool {
				ent := lsEntry{Name: name, Seq: seq}
				if fi, err := e.Info(); err == nil {
					ent.Size = fi.Size()
				}
				if l.Sidecars() {
					if b, err := readFile(fsys, l.SidecarOf(name)); err == nil {
						ent.Sidecar = true
						var sc struct {
							ID string `json:"message_id"`
						}
						if jsonUnmarshal(b, &sc) == nil {
							ent.MessageID = sc.ID
						}
					}
				}
				if asJSON {
					_ = writeJSONLine(out, ent)
				} else {
					id := ent.MessageID
					if id == "" {
						id = "-"
					}
					fmt.Fprintf(out, "%s\t%d\t%d\t%s\n", ent.Name, ent.Seq, ent.Size, id)
				}
				n++
				return limit == 0 || n < limit
			})
			if err != nil {
				return fmt.Errorf("spool %s: list: %w", o.Path, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per chunk")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many chunks (0: all)")
	return cmd
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
