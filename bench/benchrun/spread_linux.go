package benchrun

import "golang.org/x/sys/unix"

// fsTopdirFL is FS_TOPDIR_FL of linux/fs.h (chattr +T), which x/sys/unix
// does not define.
const fsTopdirFL = 0x00020000

// spreadTrials asks the filesystem to place each directory made in dir
// away from the others, in a block group of its own: ext2, ext3 and ext4
// do so below a directory flagged FS_TOPDIR_FL, as below their root.
// Without it every trial's files went into the block group of the last
// one, just deleted, and on ext4 without a journal each new file then
// cost up to a millisecond of kernel time: the allocator skips every
// inode freed in the last one to six minutes (recently_deleted), one by
// one, from the start of the group. That cost rose and fell by ten times
// within a round of a disk produce cell, so it followed an arm's place
// in the round, not the arm. Other filesystems refuse the flag, and
// nothing changes there.
func spreadTrials(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL))
}
