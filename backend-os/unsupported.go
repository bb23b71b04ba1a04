//go:build !linux && !darwin && !freebsd

package osfs

import (
	"io/fs"
	"os"

	"github.com/mqb-project/mqb/core"
)

// FS is the spool filesystem of the systems this backend supports (Linux,
// macOS, FreeBSD). Here New never returns one.
type FS struct {
	core.FS
}

// New fails with ErrUnsupportedOS: on this system there is no spool
// filesystem yet. Its claims, renames and syncs have not been built or
// tested here.
func New(root string, opts Options) (*FS, error) {
	return nil, ErrUnsupportedOS
}

// Root is the root directory given to New.
func (f *FS) Root() string { return "" }

// Close does nothing: no FS is ever opened here.
func (f *FS) Close() error { return nil }

// SameFile reports whether a and b describe the same file, as os.SameFile
// does: no FS of this backend exists here, so both come from os.
func SameFile(a, b fs.FileInfo) bool { return os.SameFile(a, b) }
