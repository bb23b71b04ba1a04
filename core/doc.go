// Package core implements the mqb directory spool: a durable FIFO queue in
// which every message is one payload file, with an optional JSON metadata
// sidecar, in a directory tree. It works against the small FS interface so
// that the same protocol runs on the real filesystem (backend-os), in memory
// (backend-memfs) or on a backend of your own.
//
// core is the protocol of docs/protocol.md and nothing else. Each rule
// lives in one file:
//
//   - fs.go: the filesystem contract the rules are written against (FS,
//     File, Claim: no-follow lookups, exclusive create, no-replace rename,
//     directory sync), used by §4.1 and §7.1.
//   - options.go: §2.1 parameters (SpoolSchema, Options, the FsyncPolicy,
//     EmitDone and BadSidecar enumerations) and the dir-spool URL.
//   - naming.go: §2.2 building a name, §2.3 control file names, §2.4
//     reading a name back, §2.5 order (Layout, ChunkKind).
//   - walk.go: the walk of every leaf directory that §6.2 recovery uses,
//     and Scan (what `mqb spool stat` counts).
//   - message.go: §3 the sidecar (its JSON shape, message ids).
//   - producer.go: §4 writing (one batch, failures, writing without atomic
//     renames), §6 sequence numbers and recovery (§6.3 the high-water mark:
//     reserve), §8.1–8.2 writing DONE and its record.
//   - consumer.go: §5 reading and acknowledging (opening, listing,
//     delivery, ack and nack, empty shard directories, waiting) and §8.3
//     reading DONE.
//   - claim.go: §7 claims (taking the lock, the holder record in which a
//     producer keeps its high-water mark).
//   - errors.go: the errors the rules return (ClaimError, SidecarError and
//     the sentinels).
//
// The option table machinery that reads SpoolSchema from URLs and YAML is
// core/option; §9 (checking an implementation) is the conformance module.
package core
