package core

import (
	"cmp"
	"net/url"
	"slices"
	"time"

	"github.com/mqb-project/mqb/core/option"
)

// FsyncPolicy says when a producer or a consumer flushes its writes and
// deletes to stable storage (the fsync option).
type FsyncPolicy string

// The fsync policies.
const (
	FsyncNone  FsyncPolicy = "none"  // never: survives a process crash, not a power cut
	FsyncBatch FsyncPolicy = "batch" // once per batch
	FsyncChunk FsyncPolicy = "chunk" // after every chunk
)

// FsyncPolicies lists every fsync policy, in the order the reference shows.
var FsyncPolicies = []FsyncPolicy{FsyncNone, FsyncBatch, FsyncChunk}

// Valid reports whether p is one of FsyncPolicies.
func (p FsyncPolicy) Valid() bool { return slices.Contains(FsyncPolicies, p) }

// EmitDone says when a producer writes the DONE sentinel as it closes (the
// emit_done option).
type EmitDone string

// The emit_done values.
const (
	EmitNever   EmitDone = "never"
	EmitSuccess EmitDone = "success"
	EmitAlways  EmitDone = "always"
)

// EmitDoneValues lists every emit_done value.
var EmitDoneValues = []EmitDone{EmitNever, EmitSuccess, EmitAlways}

// Valid reports whether e is one of EmitDoneValues.
func (e EmitDone) Valid() bool { return slices.Contains(EmitDoneValues, e) }

// BadSidecar says what a consumer does with a sidecar it cannot parse (the
// bad_sidecar option).
type BadSidecar string

// The bad_sidecar values.
const (
	BadSidecarFail    BadSidecar = "fail"
	BadSidecarDeliver BadSidecar = "deliver"
)

// BadSidecarValues lists every bad_sidecar value.
var BadSidecarValues = []BadSidecar{BadSidecarFail, BadSidecarDeliver}

// Valid reports whether b is one of BadSidecarValues.
func (b BadSidecar) Valid() bool { return slices.Contains(BadSidecarValues, b) }

// enum returns the values of an enumeration as the option table lists them.
func enum[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// SpoolSchema is the option table of the directory spool protocol: the
// fields core reads. Every field has the same name as a URL query parameter
// and under dir_spool: in YAML. The dir_spool connector adds the fields that
// choose and configure the filesystem (backend, file_mode, dir_mode; see
// bridge.BackendFields), which core never reads.
var SpoolSchema = &option.Schema{
	Name: "dir_spool",
	Fields: []option.Field{
		{Name: "path", Type: option.TypeString, Required: true,
			Doc: "Absolute path of the spool directory. In a URL it is the URL path, never a query parameter."},
		{Name: "naming_pattern", Type: option.TypeString, Default: "{seq:09}",
			Doc: "File name pattern. Must start with {seq:N}: the sequence number zero-padded to N digits (1-19); literal text may follow. The producer stops with an error rather than exceed N digits."},
		{Name: "payload_extension", Type: option.TypeString, Default: ".bin",
			Doc: "Suffix of payload files. Only changes names and which files a consumer picks up, never how payloads are parsed."},
		{Name: "metadata_extension", Type: option.TypeString, Default: ".json",
			Doc: "Suffix of the JSON metadata sidecars. Empty: no sidecars are written, and none are read."},
		{Name: "shard_depth", Type: option.TypeInt, Default: "0", Min: 0, Max: 18,
			Doc: "Number of directory levels made from the leading sequence digits. 0 keeps every chunk in the spool directory."},
		{Name: "shard_width", Type: option.TypeInt, Default: "3", Min: 1, Max: 18,
			Doc: "Digits per shard directory. shard_depth*shard_width must be less than N."},
		{Name: "fsync", Type: option.TypeEnum, Default: string(FsyncChunk), Enum: enum(FsyncPolicies),
			Doc: "When writes and deletes are flushed to stable storage: after every chunk, once per batch, or never (survives a process crash, not a power cut)."},
		{Name: "atomic", Type: option.TypeBool, Default: "true",
			Doc: "Write each file under a .tmp name and rename it into place, so readers never see a partial chunk. false writes final names directly."},
		{Name: "emit_done", Type: option.TypeEnum, Default: string(EmitNever), Enum: enum(EmitDoneValues),
			Doc: "When a producer writes the DONE sentinel as it closes: never, only after a successful run, or always (recording the status)."},
		{Name: "stop_on_done", Type: option.TypeBool, Default: "false",
			Doc: "A consumer ends once DONE exists, no payload is left and nothing is in flight."},
		{Name: "drain_on_read", Type: option.TypeBool, Default: "true",
			Doc: "A consumer deletes each chunk once its message is acknowledged. false reads without deleting and without a CONSUMER claim."},
		{Name: "claims", Type: option.TypeBool, Default: "true",
			Doc: "Take the PRODUCER and CONSUMER claims. Disabling them is unsafe: two producers can collide and two consumers can deliver duplicates."},
		{Name: "bad_sidecar", Type: option.TypeEnum, Default: string(BadSidecarFail), Enum: enum(BadSidecarValues),
			Doc: "What a consumer does with a sidecar it cannot parse: stop with an error naming the file, or deliver the payload with whatever parses (a string message_id, string metadata values) and a warning once per file."},
		{Name: "poll_interval", Type: option.TypeDuration, Default: "250ms",
			Doc: "How often a waiting consumer looks for new chunks. Backends with wake-ups (inotify) react at once and poll only as a safety net."},
		{Name: "max_messages", Type: option.TypeInt, Default: "0", Min: 0,
			Doc: "Most chunks a producer lets the spool hold; when_full says what happens to a message past it. 0 (the default): no limit."},
		{Name: "max_bytes", Type: option.TypeSize, Default: "0", Min: 0,
			Doc: "Most bytes of payload and sidecar files a producer lets the spool hold, such as 512MiB or 10GB (filesystem block overhead is not counted). 0 (the default): no limit."},
		{Name: "min_free_bytes", Type: option.TypeSize, Default: "0", Min: 0,
			Doc: "Free space a producer leaves on the spool's filesystem, such as 1GiB, so that a stalled consumer never fills the disk for everyone else. 0 (the default): no limit."},
		{Name: "when_full", Type: option.TypeEnum, Default: string(WhenFullBlock), Enum: WhenFullValues,
			Doc: "What a producer does with a message that does not fit the bounds above: block (wait for the consumer, so the source stops reading and acknowledging), fail (stop with an error), or drop_newest (drop it, count it in mqb_spool_dropped_total and log it)."},
	},
}

// Options configures a producer or a consumer. Build it with DefaultOptions,
// OptionsFromValues or ParseURL so that defaults are right; the zero value is
// not valid.
type Options struct {
	Path          string // spool directory; used in messages and by backends
	NamingPattern string
	PayloadExt    string
	MetadataExt   string
	ShardDepth    int
	ShardWidth    int
	Fsync         FsyncPolicy
	Atomic        bool
	EmitDone      EmitDone
	StopOnDone    bool
	DrainOnRead   bool
	Claims        bool
	BadSidecar    BadSidecar
	PollInterval  time.Duration
	// Bounds limit what a producer lets the spool hold (max_messages,
	// max_bytes, min_free_bytes, when_full). Consumers ignore them.
	Bounds Bounds

	// ExitWhenEmpty makes Consumer.Read return ErrEnd as soon as the backlog
	// is empty and nothing is in flight (the route's --drain). It has no URL
	// spelling.
	ExitWhenEmpty bool
}

// DefaultOptions returns the defaults of every field for the spool at path.
func DefaultOptions(path string) Options {
	v, err := SpoolSchema.DecodeMap(map[string]any{"path": path})
	if err != nil {
		panic(err)
	}
	o, err := OptionsFromValues(v)
	if err != nil {
		panic(err)
	}
	return o
}

// OptionsFromValues converts decoded values into Options and validates the
// combination.
func OptionsFromValues(v *option.Values) (Options, error) {
	o := Options{
		Path:          v.String("path"),
		NamingPattern: v.String("naming_pattern"),
		PayloadExt:    v.String("payload_extension"),
		MetadataExt:   v.String("metadata_extension"),
		ShardDepth:    v.Int("shard_depth"),
		ShardWidth:    v.Int("shard_width"),
		Fsync:         FsyncPolicy(v.String("fsync")),
		Atomic:        v.Bool("atomic"),
		EmitDone:      EmitDone(v.String("emit_done")),
		StopOnDone:    v.Bool("stop_on_done"),
		DrainOnRead:   v.Bool("drain_on_read"),
		Claims:        v.Bool("claims"),
		BadSidecar:    BadSidecar(v.String("bad_sidecar")),
		PollInterval:  v.Duration("poll_interval"),
	}
	b, err := boundsFromValues(v)
	if err != nil {
		return o, err
	}
	o.Bounds = b
	return o, o.Validate()
}

// Validate checks o as the option table checks a URL or YAML: every field
// goes through SpoolSchema, so a value a URL refuses is refused here with
// the same *option.Error, then the combination is checked.
func (o Options) Validate() error {
	if o.Path == "" {
		return &option.Error{Field: "path", Msg: "is required"}
	}
	if _, err := SpoolSchema.DecodeMap(o.fields()); err != nil {
		return err
	}
	if o.PollInterval <= 0 {
		return &option.Error{Field: "poll_interval", Value: o.PollInterval.String(), Msg: "must be positive"}
	}
	if err := o.Bounds.Validate(); err != nil {
		return err
	}
	_, err := o.Layout()
	return err
}

// fields returns o as the field map a URL or YAML would give.
func (o Options) fields() map[string]any {
	m := map[string]any{
		"path":               o.Path,
		"naming_pattern":     o.NamingPattern,
		"payload_extension":  o.PayloadExt,
		"metadata_extension": o.MetadataExt,
		"shard_depth":        o.ShardDepth,
		"shard_width":        o.ShardWidth,
		"fsync":              string(o.Fsync),
		"atomic":             o.Atomic,
		"emit_done":          string(o.EmitDone),
		"stop_on_done":       o.StopOnDone,
		"drain_on_read":      o.DrainOnRead,
		"claims":             o.Claims,
		"bad_sidecar":        string(o.BadSidecar),
		"poll_interval":      o.PollInterval.String(),
		"when_full":          string(cmp.Or(o.Bounds.WhenFull, WhenFullBlock)),
	}
	for name, n := range map[string]int64{"max_messages": o.Bounds.MaxMessages,
		"max_bytes": o.Bounds.MaxBytes, "min_free_bytes": o.Bounds.MinFreeBytes} {
		if n != 0 { // 0 is unset: a URL that gives 0 is refused
			m[name] = n
		}
	}
	return m
}

// Layout returns the naming layout the options describe.
func (o Options) Layout() (*Layout, error) {
	return NewLayout(o.NamingPattern, o.ShardDepth, o.ShardWidth, o.PayloadExt, o.MetadataExt)
}

// SpoolSchemes are the URL schemes of the directory spool.
var SpoolSchemes = []string{"dir-spool", "spool", "dirspool"}

// ParseURL parses dir-spool:///abs/path?field=value (or the spool:// and
// dirspool:// aliases). The path must be absolute and come from the URL
// path; a path query parameter is refused.
func ParseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, &option.Error{Field: "url", Value: raw, Msg: err.Error()}
	}
	return OptionsFromURL(u)
}

// OptionsFromURL is ParseURL for an already parsed URL.
func OptionsFromURL(u *url.URL) (Options, error) {
	known := false
	for _, s := range SpoolSchemes {
		known = known || u.Scheme == s
	}
	if !known {
		return Options{}, &option.Error{Field: "scheme", Value: u.Scheme, Msg: "not a directory spool URL", Valid: SpoolSchemes}
	}
	m, err := option.FromURL(u, option.PathAbsolute, "/var/spool/orders")
	if err != nil {
		return Options{}, err
	}
	v, err := SpoolSchema.DecodeMap(m)
	if err != nil {
		return Options{}, err
	}
	return OptionsFromValues(v)
}
