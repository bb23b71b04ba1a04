package dropzone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// The target's crash recovery. A writer leaves, for each file it was
// filling, .NAME.N.partial whose first N bytes were acknowledged, and, if it
// died while cutting such a file back, .NAME.N.cut. recover publishes the
// acknowledged content of each under NAME (or a fresh name if NAME is
// taken).

const cutSuffix = ".cut"

// cutName is the hidden name of the copy of final's first n bytes made
// while cutting .final.n.partial back.
func cutName(final string, n int64) string {
	return "." + final + "." + strconv.FormatInt(n, 10) + cutSuffix
}

// parseHidden splits .FINAL.N<suffix> into FINAL and N.
func parseHidden(name, suffix string) (string, int64, bool) {
	if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, suffix) {
		return "", 0, false
	}
	body := strings.TrimSuffix(name[1:], suffix)
	i := strings.LastIndexByte(body, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(body[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return body[:i], n, true
}

// recover publishes what a previous writer left acknowledged in hidden
// files. Entries that are not regular files (a symbolic link planted on a
// hidden name) are left alone, with a warning. It stops with ctx's error
// once ctx is done.
func (t *Target) recover(ctx context.Context) error {
	entries, err := t.zone.ReadDir(".")
	if err != nil {
		return fmt.Errorf("drop zone: %w", err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	changed := false
	for i, e := range entries {
		if i%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		did, err := t.recoverEntry(e, present)
		if err != nil {
			return err
		}
		changed = changed || did
	}
	if changed {
		if err := t.zone.SyncDir("."); err != nil {
			return fmt.Errorf("drop zone: %w", err)
		}
	}
	return nil
}

// recoverEntry handles one entry of the zone, reporting whether it changed
// anything.
func (t *Target) recoverEntry(e fs.DirEntry, present map[string]bool) (bool, error) {
	name := e.Name()
	final, n, isPartial := parseHidden(name, partialSuffix)
	cfinal, cn, isCut := parseHidden(name, cutSuffix)
	if !isPartial && !isCut {
		return false, nil
	}
	if !e.Type().IsRegular() {
		t.env.Logger.Warn("drop zone: leaving alone an entry named like a writer's hidden file that is not a regular file (a symbolic link is never followed)",
			"path", filepath.Join(t.dir, name), "type", kind(e.Type()))
		return false, nil
	}
	if isCut && cn > 0 {
		return true, t.recoverCut(name, cfinal, cn, present[partialName(cfinal, cn)])
	}
	if n == 0 || isCut { // nothing acknowledged: nothing to publish
		if _, err := removeIfPresent(t.zone, name); err != nil {
			return false, fmt.Errorf("drop zone: remove empty leftover: %w", err)
		}
		return true, nil
	}
	return t.recoverPartial(name, final, n)
}

// recoverCut handles .final.n.cut: incomplete while .final.n.partial is
// still there (removed, the cut is done again from the partial), complete
// otherwise (published).
func (t *Target) recoverCut(name, final string, n int64, partialThere bool) error {
	if partialThere {
		if _, err := removeIfPresent(t.zone, name); err != nil {
			return fmt.Errorf("drop zone: remove an interrupted cut: %w", err)
		}
		return nil
	}
	return t.publishRecovered(name, final)
}

// recoverPartial cuts .final.n.partial back to its n acknowledged bytes
// and publishes it. One shorter than n was not written by mqb as it is: it
// is left alone, with a warning.
func (t *Target) recoverPartial(name, final string, n int64) (bool, error) {
	fi, err := t.zone.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("drop zone: %w", err)
	}
	switch {
	case !fi.Mode().IsRegular(): // replaced since it was listed
		return false, nil
	case fi.Size() < n:
		t.env.Logger.Warn("drop zone: leaving alone a hidden file shorter than the length its name records",
			"path", filepath.Join(t.dir, name), "size", fi.Size(), "recorded", n)
		return false, nil
	case fi.Size() > n:
		f, err := t.cut(name, final, n)
		if err != nil {
			return true, fmt.Errorf("drop zone: cut leftover back to its acknowledged length: %w", err)
		}
		if err := f.Close(); err != nil {
			return true, fmt.Errorf("drop zone: %w", err)
		}
	}
	return true, t.publishRecovered(name, final)
}

func (t *Target) publishRecovered(name, final string) error {
	to, err := t.publish(name, final)
	if err != nil {
		return err
	}
	t.env.Logger.Info("drop zone: published a file left by an interrupted writer", "path", filepath.Join(t.dir, to))
	return nil
}

// cut makes .final.n.partial, the hidden file from, hold exactly its first
// n bytes, and returns it open for appending after them. The confined FS
// has no truncate, and no path is ever opened for writing except by
// exclusive create, so the bytes are copied:
//
//  1. copy the first n bytes of from to a fresh .final.n.cut, fsync it and
//     the directory;
//  2. remove from; fsync the directory;
//  3. rename .final.n.cut to .final.n.partial; fsync the directory.
//
// recover reads a crash at any instant from the names: a .cut beside its
// .partial is incomplete, one alone is complete. An error from step 2 on
// matches bridge.ErrPermanent: from is gone, and only recover finishes the
// cut; an error before leaves from as it was.
func (t *Target) cut(from, final string, n int64) (core.File, error) {
	tmp, to := cutName(final, n), partialName(final, n)
	f, err := t.copyPrefix(from, tmp, n)
	if err != nil {
		return nil, err
	}
	err = t.zone.Remove(from)
	if err == nil {
		err = t.zone.SyncDir(".")
	}
	if err == nil {
		err = t.zone.Rename(tmp, to)
	}
	if err == nil {
		err = t.zone.SyncDir(".")
	}
	if err != nil {
		f.Close()
		return nil, bridge.Permanent(fmt.Errorf("drop zone: cut %s back to %d bytes: %w", filepath.Join(t.dir, from), n, err))
	}
	return f, nil
}

// copyPrefix writes the first n bytes of from to the fresh file tmp and
// makes them and its entry durable; it returns tmp open for writing.
func (t *Target) copyPrefix(from, tmp string, n int64) (core.File, error) {
	if _, err := removeIfPresent(t.zone, tmp); err != nil {
		return nil, err
	}
	src, err := t.zone.Open(from)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := t.zone.CreateExcl(tmp)
	if err != nil {
		return nil, err
	}
	_, err = io.CopyN(dst, src, n)
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s holds fewer than the %d bytes its name records", filepath.Join(t.dir, from), n)
	}
	if err == nil {
		err = dst.Sync()
	}
	if err == nil {
		err = t.zone.SyncDir(".")
	}
	if err != nil {
		dst.Close()
		t.zone.Remove(tmp)
		return nil, err
	}
	return dst, nil
}
