package benchrun

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"
)

// LargeConfig selects a large-payload run: one payload of Size bytes is
// copied from a file into a spool and from the spool into a drop zone, by
// Copy (the bridge's connectors, which benchrun does not import), and in
// the same rounds the same two copies are made with bare file copies.
type LargeConfig struct {
	Dir    string // where the files, spool and drop zone are made
	Size   int64  // default 1 GiB
	Rounds int    // default 3
	// Copy moves the payload file in into the spool, then the spool into
	// the drop zone, and returns the path of the file it published there.
	Copy func(ctx context.Context, in, spool, zone string) (string, error)
	// Progress, when set, is told what is being done.
	Progress func(string)
}

// LargeResult is a large-payload run: medians over the rounds.
type LargeResult struct {
	Size   int64 `json:"size"`
	Rounds int   `json:"rounds"`
	// MBps is payload bytes over the time of both copies, in MB/s
	// (10^6), for the connectors and for the bare copies.
	MBps    float64 `json:"mb_per_s"`
	RawMBps float64 `json:"raw_mb_per_s"`
	Ratio   float64 `json:"x_raw"`
	// PeakRSSMiB is the largest resident set (VmHWM) of the process during
	// any round of the connectors' copies, reset before each.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	PeakReset  bool    `json:"peak_reset"`
}

// Large runs the large-payload case.
func Large(ctx context.Context, cfg LargeConfig) (LargeResult, error) {
	if cfg.Size <= 0 {
		cfg.Size = 1 << 30
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 3
	}
	res := LargeResult{Size: cfg.Size, Rounds: cfg.Rounds}
	if cfg.Dir == "" || cfg.Copy == nil {
		return res, errors.New("benchrun: LargeConfig needs Dir and Copy")
	}
	say := func(f string, a ...any) {
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf(f, a...))
		}
	}
	dir, err := os.MkdirTemp(cfg.Dir, "mqb-large-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "input.bin")
	say("writing a %s input file", FormatSize(cfg.Size))
	if err := writeLargeInput(in, cfg.Size); err != nil {
		return res, err
	}
	var mb, raw []float64
	for round := 1; round <= cfg.Rounds; round++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		say("round %d/%d: bare copies", round, cfg.Rounds)
		d, err := rawCopies(in, filepath.Join(dir, fmt.Sprint("raw", round)))
		if err != nil {
			return res, fmt.Errorf("bare copy: %w", err)
		}
		raw = append(raw, float64(cfg.Size)*2/d.Seconds()/1e6)
		say("round %d/%d: file -> spool -> drop zone", round, cfg.Rounds)
		runtime.GC()
		debug.FreeOSMemory()
		res.PeakReset = resetPeakRSS()
		d, err = connectorCopies(ctx, cfg, in, filepath.Join(dir, fmt.Sprint("route", round)))
		res.PeakRSSMiB = max(res.PeakRSSMiB, readStatusMiB("VmHWM"))
		if err != nil {
			return res, err
		}
		mb = append(mb, float64(cfg.Size)*2/d.Seconds()/1e6)
	}
	res.MBps, res.RawMBps = median(mb), median(raw)
	res.Ratio = res.MBps / res.RawMBps
	return res, nil
}

// connectorCopies runs cfg.Copy into base, checks what it published has
// the input's size, and removes it all.
func connectorCopies(ctx context.Context, cfg LargeConfig, in, base string) (time.Duration, error) {
	defer os.RemoveAll(base)
	start := time.Now()
	out, err := cfg.Copy(ctx, in, filepath.Join(base, "spool"), filepath.Join(base, "zone"))
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return d, err
	}
	if fi.Size() != cfg.Size {
		return d, fmt.Errorf("the drop zone got %d bytes, want %d", fi.Size(), cfg.Size)
	}
	return d, nil
}

// rawCopies copies in to a temporary file, syncs it and renames it into
// place, then does the same from that copy: the file operations of the two
// legs, with io.Copy between *os.File values (copy_file_range on Linux).
func rawCopies(in, base string) (time.Duration, error) {
	if err := os.Mkdir(base, 0o700); err != nil {
		return 0, err
	}
	defer os.RemoveAll(base)
	start := time.Now()
	mid, out := filepath.Join(base, "mid"), filepath.Join(base, "out")
	if err := rawCopy(in, mid); err != nil {
		return 0, err
	}
	if err := rawCopy(mid, out); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func rawCopy(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to+".tmp", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(to+".tmp", to)
	}
	if err == nil {
		err = syncDir(filepath.Dir(to))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeLargeInput writes size bytes that differ in every MiB.
func writeLargeInput(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	block := makePayload(1 << 20)
	for off := int64(0); off < size; off += int64(len(block)) {
		binary.LittleEndian.PutUint64(block, uint64(off))
		if _, err := f.Write(block[:min(int64(len(block)), size-off)]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteLargeText writes a large-payload result as a table.
func WriteLargeText(w io.Writer, r LargeResult) error {
	_, err := fmt.Fprintf(w, "%8s %7s %10s %10s %7s %10s\n%8s %7d %10.0f %10.0f %6.2fx %8.1fMi\n",
		"size", "rounds", "MB/s", "raw MB/s", "x raw", "peak RSS",
		FormatSize(r.Size), r.Rounds, r.MBps, r.RawMBps, r.Ratio, r.PeakRSSMiB)
	return err
}
