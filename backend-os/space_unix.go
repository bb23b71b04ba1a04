//go:build unix

package osfs

import (
	"golang.org/x/sys/unix"

	"github.com/mqb-project/mqb/core"
)

var _ core.SpaceReporter = (*FS)(nil)

// FreeBytes returns the bytes an unprivileged writer may still use on the
// filesystem holding the spool (statfs's f_bavail times the block size).
func (f *FS) FreeBytes() (uint64, error) {
	var free uint64
	err := f.do("statfs", ".", func(rootfd int) error {
		var st unix.Statfs_t
		if err := ignoringEINTR(func() error { return unix.Fstatfs(rootfd, &st) }); err != nil {
			return err
		}
		free = uint64(st.Bavail) * uint64(st.Bsize)
		return nil
	})
	return free, err
}
