package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bench/benchrun"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core"
)

type chunkInfo struct {
	Name     string    `json:"name"`
	Seq      uint64    `json:"seq"`
	Modified time.Time `json:"modified"`
}

type claimInfo struct {
	// Alive is true when a running process holds the claim now.
	Alive   bool       `json:"alive"`
	PID     int        `json:"pid,omitempty"`
	Host    string     `json:"host,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	NextSeq *uint64    `json:"next_seq,omitempty"`
	// AckedBelow is a draining consumer's resume point.
	AckedBelow *uint64 `json:"acked_below,omitempty"`
}

type statReport struct {
	Spool      string           `json:"spool"`
	Backend    string           `json:"backend"`
	Chunks     int              `json:"chunks"`
	Bytes      int64            `json:"bytes"`
	Oldest     *chunkInfo       `json:"oldest,omitempty"`
	Newest     *chunkInfo       `json:"newest,omitempty"`
	Producer   *claimInfo       `json:"producer,omitempty"`
	Consumer   *claimInfo       `json:"consumer,omitempty"`
	Done       *core.DoneRecord `json:"done,omitempty"`
	Tmp        int              `json:"tmp_files"`
	Orphans    int              `json:"orphan_sidecars"`
	Unexpected int              `json:"unexpected_files"`
	Bounds     *boundsInfo      `json:"bounds,omitempty"`
	// Foreign counts files with the payload extension that fit no chunk
	// name; Layout says which options would read the chunk-like ones.
	Foreign      int      `json:"foreign_payload_files"`
	ForeignNames []string `json:"foreign_payload_names,omitempty"`
	Links        []string `json:"symbolic_links,omitempty"`
	Layout       string   `json:"layout_mismatch,omitempty"`
	// LayoutFound names the settings a spool named by a bare path was
	// read with, those its files fit, when they are not the defaults.
	LayoutFound string `json:"layout_found,omitempty"`

	mismatch *core.LayoutError
}

// boundsInfo is how full a bounded spool is: its limits (from the URL given
// to stat, else as its producer recorded them) against what it holds.
type boundsInfo struct {
	core.Bounds
	Chunks int64 `json:"chunks"`
	Bytes  int64 `json:"bytes"` // payload and sidecar files, as max_bytes counts them
}

func (a *app) spoolStatCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stat SPOOL",
		Short: "Show a spool's backlog, claims and DONE status",
		Long: `stat shows how many chunks wait in a spool and how many payload bytes they
hold, the oldest and newest chunk, who holds the PRODUCER and CONSUMER claims
and whether that process is still alive, and the DONE sentinel's record.`,
		Args: exactArgs(1, "one spool path or URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, fsys, release, err := a.openSpool(args[0])
			if err != nil {
				return err
			}
			defer release()
			rep, err := spoolStat(cmd.Context(), fsys, o)
			if err != nil {
				return err
			}
			if fixed, fix := layoutOnDisk(args[0], o, rep.mismatch); rep.Chunks == 0 && fix != "" {
				if rep, err = spoolStat(cmd.Context(), fsys, fixed); err != nil {
					return err
				}
				rep.LayoutFound = fix
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			printStat(cmd, rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func spoolStat(ctx context.Context, fsys core.FS, o dirspool.Config) (*statReport, error) {
	st, err := core.Scan(ctx, fsys, o.Options)
	if err != nil {
		return nil, fmt.Errorf("spool %s: scan: %w", o.Path, err)
	}
	rep := &statReport{Spool: o.Path, Backend: o.Backend, Chunks: st.Chunks, Bytes: st.Bytes, Tmp: st.Tmp, Orphans: st.Orphans, Unexpected: st.Unexpected}
	info := func(name string, seq uint64) *chunkInfo {
		ci := &chunkInfo{Name: name, Seq: seq}
		if fi, err := fsys.Stat(name); err == nil {
			ci.Modified = fi.ModTime().UTC()
		}
		return ci
	}
	sv, err := core.SurveyLayout(ctx, fsys, o.Options)
	if err != nil {
		return nil, fmt.Errorf("spool %s: check layout: %w", o.Path, err)
	}
	rep.Foreign, rep.ForeignNames, rep.Links = sv.Foreign, sv.ForeignNames, sv.Links
	if sv.Mismatch != nil {
		rep.Layout, rep.mismatch = sv.Mismatch.Error(), sv.Mismatch
	}
	if st.Chunks > 0 {
		rep.Oldest, rep.Newest = info(st.Oldest, st.OldestSeq), info(st.Newest, st.NewestSeq)
	}
	for _, c := range []struct {
		file string
		dst  **claimInfo
	}{{core.ProducerFile, &rep.Producer}, {core.ConsumerFile, &rep.Consumer}} {
		h, held, err := core.ReadHolder(fsys, c.file)
		if err != nil {
			return nil, fmt.Errorf("spool %s: read %s claim: %w", o.Path, c.file, err)
		}
		if h == nil && !held {
			continue
		}
		ci := &claimInfo{Alive: held}
		if h != nil {
			ci.PID, ci.Host, ci.NextSeq, ci.AckedBelow = h.PID, h.Host, h.NextSeq, h.AckedBelow
			if since := h.Since; !since.IsZero() { // another implementation may leave it out
				ci.Since = &since
			}
		}
		*c.dst = ci
		if h != nil && h.Bounds != nil && !o.Bounds.Set() {
			o.Bounds = *h.Bounds
		}
	}
	rep.Bounds = statBounds(o.Options, st)
	done, err := core.ReadDone(fsys)
	var pathErr *fs.PathError
	switch {
	case err == nil:
		rep.Done = done
	case errors.Is(err, fs.ErrNotExist):
	case errors.As(err, &pathErr):
		return nil, fmt.Errorf("spool %s: read DONE: %w", o.Path, err)
	default:
		// Empty (touch DONE) or not our JSON: a consumer ends on it all
		// the same, and it says nothing more.
		rep.Done = &core.DoneRecord{}
	}
	return rep, nil
}

func printStat(cmd *cobra.Command, r *statReport) {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "spool\t%s (backend %s)\n", r.Spool, r.Backend)
	fmt.Fprintf(w, "backlog\t%d chunk(s), %s\n", r.Chunks, benchrun.FormatSize(r.Bytes))
	if r.Oldest != nil {
		fmt.Fprintf(w, "oldest\t%s\t%s\n", r.Oldest.Name, r.Oldest.Modified.Format(time.RFC3339))
		fmt.Fprintf(w, "newest\t%s\t%s\n", r.Newest.Name, r.Newest.Modified.Format(time.RFC3339))
	}
	claim := func(name string, c *claimInfo) {
		switch {
		case c == nil:
			fmt.Fprintf(w, "%s\tnone\n", name)
		case c.PID == 0:
			fmt.Fprintf(w, "%s\theld by a process that has not recorded itself\n", name)
		default:
			state := "not running (claim free)"
			if c.Alive {
				state = "alive"
			}
			fmt.Fprintf(w, "%s\t%s: %s\n", name, holderText(c), state)
		}
	}
	claim("producer", r.Producer)
	claim("consumer", r.Consumer)
	if d := r.Done; d != nil && *d == (core.DoneRecord{}) {
		fmt.Fprintf(w, "done\tpresent, no details\n")
	} else if d != nil {
		line := fmt.Sprintf("%s: %d message(s)", d.Status, d.Count)
		if d.LastSeq != nil {
			line += fmt.Sprintf(", last seq %d", *d.LastSeq)
		}
		if !d.Time.IsZero() {
			line += " at " + d.Time.Format(time.RFC3339)
		}
		if d.Error != "" {
			line += ": " + d.Error
		}
		fmt.Fprintf(w, "done\t%s\n", line)
	} else {
		fmt.Fprintf(w, "done\tno DONE sentinel\n")
	}
	if b := r.Bounds; b != nil {
		fmt.Fprintf(w, "bounds\t%s\n", b)
	}
	if r.Tmp+r.Orphans+r.Unexpected > 0 {
		fmt.Fprintf(w, "other\t%d tmp file(s), %d orphan sidecar(s), %d unexpected file(s)\n", r.Tmp, r.Orphans, r.Unexpected)
	}
	printSurvey(w, r)
}

// printSurvey prints what consumers with these options would never read.
func printSurvey(w io.Writer, r *statReport) {
	if r.Foreign > 0 {
		fmt.Fprintf(w, "foreign\t%d file(s) with the payload extension fit no chunk name and are never delivered", r.Foreign)
		if len(r.ForeignNames) > 0 {
			fmt.Fprintf(w, ", e.g. %s", r.ForeignNames[0])
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.Links {
		fmt.Fprintf(w, "link\t%s is a symbolic link; mqb never follows links in a spool\n", l)
	}
	if r.LayoutFound != "" {
		fmt.Fprintf(w, "layout\t%s\n", layoutNote(r.LayoutFound))
	}
	if r.Layout != "" {
		fmt.Fprintf(w, "layout\t%s\n", r.Layout)
	}
}

// holderText describes a claim holder by what its record gives, and names
// what it leaves out (a record from another implementation may).
func holderText(c *claimInfo) string {
	s := fmt.Sprintf("pid %d", c.PID)
	var missing []string
	if c.Host != "" {
		s += " on host " + c.Host
	} else {
		missing = append(missing, "host")
	}
	if c.Since != nil {
		s += " since " + c.Since.Format(time.RFC3339)
	} else {
		missing = append(missing, "since")
	}
	if len(missing) > 0 {
		s += fmt.Sprintf(" (%s: no details)", strings.Join(missing, ", "))
	}
	return s
}
func statBounds(o core.Options, st *core.Stats) *boundsInfo {
	if !o.Bounds.Set() {
		return nil
	}
	b := &boundsInfo{Bounds: o.Bounds, Chunks: int64(st.Chunks), Bytes: st.Bytes + st.MetaBytes}
	if b.WhenFull == "" {
		b.WhenFull = core.WhenFullBlock
	}
	return b
}

func (b *boundsInfo) String() string {
	var parts []string
	if b.MaxMessages > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d messages (%d%%)", b.Chunks, b.MaxMessages, b.Chunks*100/b.MaxMessages))
	}
	if b.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("%s of %s (%d%%)", benchrun.FormatSize(b.Bytes), benchrun.FormatSize(b.MaxBytes), b.Bytes*100/b.MaxBytes))
	}
	if b.MinFreeBytes > 0 {
		parts = append(parts, "keeps "+benchrun.FormatSize(b.MinFreeBytes)+" free on the filesystem")
	}
	return strings.Join(parts, ", ") + "; when full: " + string(b.WhenFull)
}
