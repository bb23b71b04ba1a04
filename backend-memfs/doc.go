// Package memfs is an in-memory implementation of the mqb filesystem contract
// (core.FS) with a crash model, for tests and benchmarks.
//
// The namespace is kept and checked by memfs itself so that the contract
// holds exactly: exclusive create, rename that never replaces, sorted
// listings, *fs.PathError values wrapping fs.ErrExist, fs.ErrNotExist,
// syscall.ENOTEMPTY or core.ErrLocked. Claims are locks in an in-process
// table; WatchDir wakes waiters in-process; SyncAll flushes every file
// written since it last ran.
//
// There is one way of storing bytes: each file's bytes live in a private
// afero.MemMapFs under the file's inode number, so renames and directories
// live only in memfs's tree and no operation gets slower as files
// accumulate.
//
// The point of the package is Crash: memfs remembers what was made durable
// (file bytes by File.Sync, SyncAll or Claim.Sync; directory entries by
// SyncDir of their directory) and Crash returns a new FS with only that, or,
// with CrashOptions.KeepUnsynced, a seeded random share of what was not
// synced, always in a state a real filesystem could leave after a power cut.
// See Crash for the exact promises.
//
// A write survives a power cut only once its bytes and its entry are synced:
//
//	fsys := memfs.New()
//	f, _ := fsys.CreateExcl("msg.tmp")
//	f.Write([]byte("hello"))
//	f.Sync()
//	f.Close()
//	fsys.Rename("msg.tmp", "msg")
//
//	after := fsys.Crash(memfs.CrashOptions{})
//	_, err := after.Stat("msg") // fs.ErrNotExist: the rename was not synced
//
//	fsys.SyncDir(".")
//	after = fsys.Crash(memfs.CrashOptions{}) // "msg" holds "hello"
//
// Random crash states, reproducible by seed:
//
//	for seed := range int64(100) {
//		after := fsys.Crash(memfs.CrashOptions{Seed: seed, KeepUnsynced: 0.5})
//		_ = after // reopen the spool on after and check its invariants
//	}
package memfs

// Name is this backend's name in a spool's backend option (backend=memfs).
const Name = "memfs"
