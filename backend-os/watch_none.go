//go:build mqb_portable && (linux || darwin || freebsd)

package osfs

// The mqb_portable build has no wake-ups: the FS is not a core.DirWatcher,
// and consumers find new messages by polling (poll_interval). watcher is
// the type of FS.watcher, which stays nil.
type watcher struct{}

func (*watcher) close() {}
