//go:build !linux

package benchrun

// spreadTrials does nothing: the block-group flag it sets on Linux is
// ext2/3/4's, and no other system's filesystems have it.
func spreadTrials(string) {}
