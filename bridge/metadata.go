package bridge

// Metadata keys that the built-in record sources (file, stdin, drop zone)
// set on every message, and that a dir-spool target stores in the sidecar.
const (
	// MetaContentType is the media type of the payload, e.g.
	// application/json.
	MetaContentType = "content_type"
	// MetaSource names where the message came from: by default the input
	// file's name without its extension (orders for orders.jsonl), or
	// stdin.
	MetaSource = "source"
	// MetaPath is the absolute path of the input file.
	MetaPath = "path"
	// MetaLine is the 1-based line where the record starts in its file
	// (not set for format=raw).
	MetaLine = "line"
)
