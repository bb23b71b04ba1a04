package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core"
)

type peekEntry struct {
	Name          string            `json:"name"`
	Seq           uint64            `json:"seq"`
	MessageID     string            `json:"message_id,omitempty"`
	Metadata      map[string]string `json:"metadata"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
}

func (a *app) spoolPeekCommand() *cobra.Command {
	var asJSON bool
	var count int
	cmd := &cobra.Command{
		Use:   "peek SPOOL",
		Short: "Show the next messages of a spool without consuming them",
		Long: `peek reads the first messages a consumer would get — payload, message id and
metadata — without deleting anything and without taking the CONSUMER claim,
so it works next to a running consumer. Payloads are printed as they are;
with --json, as a string when they are UTF-8 and in base64 otherwise.`,
		Args: exactArgs(1, "one spool path or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 1 {
				return usage(fmt.Errorf("-n must be 1 or more (got %d)", count))
			}
			o, fsys, release, err := a.openSpool(args[0])
			if err != nil {
				return err
			}
			defer release()
			ds, err := peek(cmd.Context(), fsys, o, count)
			var le *core.LayoutError
			if errors.As(err, &le) {
				if fixed, fix := layoutOnDisk(args[0], o, le); fix != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "mqb: spool %s: %s\n", o.Path, layoutNote(fix))
					ds, err = peek(cmd.Context(), fsys, fixed, count)
				}
			}
			if errors.Is(err, core.ErrEnd) {
				return nil // an empty spool: nothing to show
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, d := range ds {
				if asJSON {
					e := peekEntry{Name: d.Name, Seq: d.Seq, MessageID: d.MessageID, Metadata: d.Metadata}
					if utf8.Valid(d.Payload) {
						s := string(d.Payload)
						e.Payload = &s
					} else {
						e.PayloadBase64 = d.Payload
					}
					if err := writeJSONLine(out, e); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "==> %s (seq %d, message_id %s)", d.Name, d.Seq, orDash(d.MessageID))
				keys := make([]string, 0, len(d.Metadata))
				for k := range d.Metadata {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(out, " %s=%s", k, d.Metadata[k])
				}
				fmt.Fprintln(out)
				out.Write(d.Payload)
				if !bytes.HasSuffix(d.Payload, []byte("\n")) {
					fmt.Fprintln(out)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per message")
	cmd.Flags().IntVarP(&count, "count", "n", 1, "how many messages to show")
	return cmd
}

// peek reads the first count messages of the spool without consuming
// them or taking the CONSUMER claim.
func peek(ctx context.Context, fsys core.FS, o dirspool.Config, count int) ([]*core.Delivery, error) {
	o.DrainOnRead, o.ExitWhenEmpty, o.StopOnDone = false, true, false
	c, err := core.OpenConsumer(fsys, o.Options)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Read(ctx, count)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func readFile(fsys core.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
