package benchrun

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// inodeFlags returns dir's inode flags (FS_IOC_GETFLAGS).
func inodeFlags(t *testing.T, dir string) (uint32, error) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	return unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
}

// supportsTopdir reports whether the filesystem of a fresh temporary directory
// keeps FS_TOPDIR_FL, set here without spreadTrials.
func supportsTopdir(t *testing.T) bool {
	t.Helper()
	probe := t.TempDir()
	fd, err := unix.Open(probe, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL)) != nil {
		return false
	}
	after, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	return err == nil && after&fsTopdirFL != 0
}

func TestSpreadTrialsFlagsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	if !supportsTopdir(t) {
		t.Skipf("the filesystem of %s has no FS_TOPDIR_FL (only ext2, ext3 and ext4 do)", dir)
	}
	before, err := inodeFlags(t, dir)
	require.NoError(t, err)
	require.Zero(t, before&fsTopdirFL, "a fresh directory is not flagged")
	spreadTrials(dir)
	after, err := inodeFlags(t, dir)
	require.NoError(t, err)
	require.Equal(t, before|fsTopdirFL, after, "spreadTrials adds FS_TOPDIR_FL and keeps the other flags")
}
