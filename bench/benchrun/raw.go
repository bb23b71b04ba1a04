package benchrun

import "strconv"

// Raw batch strategies for fsync=batch. Each writes every file of the batch,
// makes the bytes durable its own way, then renames sidecars, syncs the
// directory, renames payloads and syncs the directory again, as the
// protocol does.
const (
	RawPerFile    = "fsync-per-file"   // fsync each file right after writing it
	RawConcurrent = "fsync-concurrent" // write all, then fsync all files at once from many threads
	RawSyncfs     = "syncfs"           // write all, then one syncfs for the filesystem
)

// Raw read strategies for consume cases. The plain baseline reads every
// payload into one reused buffer and drops it, which a consumer that hands
// a whole batch over in memory cannot do: RawHeld keeps each payload of a
// batch in a buffer of its own until the batch is removed, as the spool's
// lent buffers are kept until Ack (Case.RawHeld).
const (
	RawOneBuffer = "one-buffer" // every payload into one buffer
	RawHeld      = "held"       // each payload of a batch into its own buffer
)

// rawNames builds chunk names the way the default layout does, {seq:09}
// with an optional 2x3 sharding, without the library.
type rawNames struct {
	sharded bool
	sidecar bool
}

func (r rawNames) digits(seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	if len(s) < 9 {
		s = "000000000"[:9-len(s)] + s
	}
	return s
}

// split returns the leaf directory ("." when flat) and the base name
// without extension.
func (r rawNames) split(seq uint64) (dir, base string) {
	d := r.digits(seq)
	if !r.sharded {
		return ".", d
	}
	return d[0:3] + "/" + d[3:6], d[6:]
}
