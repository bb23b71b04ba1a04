package dropzone

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"strings"
	"syscall"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/internal/records"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

// Schema is the option table of the drop-zone connector.
var Schema = &option.Schema{
	Name: "dropzone",
	Fields: []option.Field{
		{Name: "path", Type: option.TypeString, Required: true,
			Doc: "Absolute path of the drop-zone directory. In a URL it is the URL path (dropzone:///data/incoming)."},
		records.FormatField(records.Lines),
		records.DelimiterField,
		records.ContentTypeField,
		records.SourceField(""),
		{Name: "pattern", Type: option.TypeString, Default: "*",
			Doc: "Source: glob (path.Match) that file names must match to be read. Hidden names and names ending in .tmp, .part or .partial are never read."},
		{Name: "poll_interval", Type: option.TypeDuration, Default: "1s",
			Doc: "Source: how often the directory is listed for new files."},
		{Name: "state_path", Type: option.TypeString,
			Doc: "Source: absolute path of the progress file (default: .mqb-dropzone-state.json in the directory)."},
		{Name: "roll_count", Type: option.TypeInt, Default: "1000", Min: 1,
			Doc: "Target: most records per file."},
		{Name: "roll_interval", Type: option.TypeDuration, Default: "10s",
			Doc: "Target: a file is published at most this long after its first record (0: only when roll_count is reached or the route ends)."},
		{Name: "prefix", Type: option.TypeString,
			Doc: "Target: text at the start of each file name; names then carry a UTC timestamp and a counter, so they sort in write order."},
		{Name: "extension", Type: option.TypeString,
			Doc: "Target: file name extension (default by format: .jsonl, .csv, .txt, .bin)."},
		{Name: "file_mode", Type: option.TypeFileMode, Default: "0600",
			Doc: "Target: permission bits of the files it writes (less the umask); 0000 is refused."},
	},
}

// Register adds the drop-zone connector (scheme dropzone) to env.
func Register(env *bridge.Env) {
	env.Register(&bridge.Connector{
		Name:      "dropzone",
		Schemes:   []string{"dropzone"},
		Schema:    Schema,
		URLFields: func(u *url.URL) (map[string]any, error) { return option.FromURL(u, option.PathAbsolute, "/data/file") },
		NewSource: NewSource,
		NewTarget: NewTarget,
	})
}

func init() { Register(bridge.DefaultEnv) }

// Names of the connector's own files in the directory.
const (
	DefaultStateFile = ".mqb-dropzone-state.json"
	WriterLockFile   = ".mqb-dropzone-writer.lock"
	partialSuffix    = ".partial"
)

// ignored reports whether a name is never read: hidden, or a file still
// being written by the usual conventions.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") ||
		strings.HasSuffix(name, ".part") || strings.HasSuffix(name, partialSuffix)
}

// zoneFS is a confined filesystem rooted at a directory: the zone, or the
// directory of a state file kept elsewhere.
type zoneFS interface {
	core.FS
	Close() error
}

// newFS opens a confined filesystem on the directory root. Tests replace it
// to interpose on the calls.
var newFS = func(root string, o osfs.Options) (zoneFS, error) { return osfs.New(root, o) }

// openDir opens the directory dir through newFS, saying plainly when it is
// missing or not a directory.
func openDir(what, dir string, o osfs.Options) (zoneFS, error) {
	fsys, err := newFS(dir, o)
	switch {
	case err == nil:
		return fsys, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %s: directory does not exist: %w", what, dir, err)
	case errors.Is(err, syscall.ENOTDIR):
		return nil, fmt.Errorf("%s %s: not a directory (%w)", what, dir, syscall.ENOTDIR)
	}
	return nil, fmt.Errorf("%s %s: %w", what, dir, err)
}

// lock takes the claim file name of fsys, shown as display in errors.
func lock(fsys core.FS, name, display string) (core.Claim, error) {
	c, err := fsys.Lock(name)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, core.ErrLocked):
		return nil, fmt.Errorf("%s is held by another process (%w)", display, core.ErrLocked)
	case errors.Is(err, osfs.ErrSymlink):
		// Wrapped, so that the route sees ELOOP and does not retry.
		return nil, fmt.Errorf("lock %s: it is a symbolic link, which mqb never follows: remove it (%w)", display, osfs.ErrSymlink)
	}
	return nil, fmt.Errorf("lock %s: %w", display, err)
}

// readFile returns the content of the regular file name of fsys.
func readFile(fsys core.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// removeIfPresent removes name (a symbolic link itself, never its target),
// reporting whether there was anything to remove.
func removeIfPresent(fsys core.FS, name string) (bool, error) {
	err := fsys.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// notRegular reports whether err says a name was a symbolic link or not a
// regular file: an entry the connector leaves alone.
func notRegular(err error) bool {
	return errors.Is(err, osfs.ErrSymlink) || errors.Is(err, osfs.ErrNotRegular)
}

// kind names the type of a directory entry that is not a regular file.
func kind(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t.IsDir():
		return "directory"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	}
	return "not a regular file"
}
