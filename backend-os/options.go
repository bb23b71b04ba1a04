package osfs

import (
	"io/fs"

	"github.com/mqb-project/mqb/core/option"
)

// Default permissions of what an FS creates, before the process umask.
const (
	DefaultFileMode fs.FileMode = 0o600
	DefaultDirMode  fs.FileMode = 0o700
)

// Flush says how File.Sync and SyncDir make data durable where the system
// offers a choice, which today is only macOS. Elsewhere every value means
// fsync(2).
type Flush string

const (
	// FlushFull, the default, makes data durable across a power cut. On
	// macOS it is fcntl(F_FULLFSYNC): plain fsync there only hands the data
	// to the drive, whose cache can lose it, so F_FULLFSYNC also flushes
	// that cache, which costs milliseconds per call on most drives.
	// Where a filesystem refuses F_FULLFSYNC (some network mounts) it
	// falls back to fsync, the most that filesystem offers.
	FlushFull Flush = "full"
	// FlushBarrier is fcntl(F_BARRIERFSYNC) on macOS: writes are ordered
	// (nothing written after the barrier reaches the disk before what was
	// written before it) but a power cut can lose the most recent ones,
	// acknowledged or not. Much faster than FlushFull; choose it only when
	// losing the last acknowledged messages on a power cut is acceptable.
	FlushBarrier Flush = "barrier"
)

// Options configure New.
type Options struct {
	// FileMode is the permission of files created by CreateExcl and Lock;
	// zero means DefaultFileMode (0600). The process umask applies.
	FileMode fs.FileMode
	// DirMode is the permission of directories created by Mkdir and, with
	// CreateRoot, of the root and its missing parents; zero means
	// DefaultDirMode (0700). The process umask applies.
	DirMode fs.FileMode
	// CreateRoot creates the root directory, and its missing parents,
	// when it does not exist. Without it a missing root is an error.
	CreateRoot bool
	// Flush is how syncs reach the disk on macOS; empty means FlushFull.
	Flush Flush
}

// flushOption checks Options.Flush.
func flushOption(v Flush) (Flush, error) {
	switch v {
	case "":
		return FlushFull, nil
	case FlushFull, FlushBarrier:
		return v, nil
	}
	return "", &option.Error{Field: "Flush", Value: string(v), Msg: "is not a flush mode",
		Valid: []string{string(FlushFull), string(FlushBarrier)}}
}

func permOption(field string, mode, def fs.FileMode) (uint32, error) {
	if mode == 0 {
		mode = def
	}
	if mode&^fs.ModePerm != 0 {
		return 0, &option.Error{Field: field, Value: mode.String(), Msg: "only permission bits (0777) are allowed"}
	}
	return uint32(mode), nil
}
