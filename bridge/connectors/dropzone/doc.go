// Package dropzone is local object storage: a drop-zone directory of
// immutable, multi-record files, the usual hand-off of CSV and JSON Lines
// ETL jobs.
//
//	dropzone:///data/incoming?format=csv
//	dropzone: {path: /data/incoming, format: json, pattern: "*.jsonl"}
//
// As a source it picks files up as they appear (the files of each listing
// in name order, listing again once they are read, polling every
// poll_interval), reads each once and emits one message per record,
// with content_type, source, path and line metadata. Its progress — which
// files are finished, and how many records of a file being read were
// acknowledged — is kept in a state file (state_path, by default
// .mqb-dropzone-state.json in the directory), saved durably on every
// acknowledgement (see state.go for how a crash at any instant leaves it
// recoverable), so a restart neither reads a finished file again nor skips
// one. Files must be complete when their name appears: write them under a
// name starting with "." or ending in .tmp, .part or .partial (never picked
// up) and rename them into place. Names must not be reused. With the
// route's drain flag the source ends once every file there is has been read
// and acknowledged.
//
// As a target it writes files of up to roll_count records, published
// after roll_interval at the latest: a file is filled under a hidden name
// and renamed into place when it is rolled, so readers only ever see whole
// files, and it never replaces a file already there. Each batch is fsync'd,
// and its length recorded in the hidden name, before it is acknowledged;
// after a crash the next writer cuts the hidden file back to its last
// acknowledged batch and publishes it. format raw writes one file per
// message.
//
// Every file under the zone (and the state file's directory) is reached
// through a confined core.FS (backend-os): no symbolic link is ever
// followed, files are created exclusively and renames never replace, so
// whoever can drop files into the zone cannot make mqb read, write, cut or
// replace anything else. Symbolic links and other non-regular entries in
// the zone are skipped with a warning.
//
// The files are split by concept: source.go reads, target.go writes,
// state.go keeps the source's progress, dropzone.go holds what both share.
package dropzone
