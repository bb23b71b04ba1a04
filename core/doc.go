// Package core implements the mqb directory spool: a durable FIFO queue in
// which every message is one payload file, with an optional JSON metadata
// sidecar, in a directory tree. It works against the small FS interface so
// that the same protocol runs on the real filesystem (backend-os), in memory
// (backend-memfs) or on a backend of your own.
package core
