// Package conformance checks that a core.FS implementation, and the spool
// protocol running on it, keep the promises of the mqb directory spool.
//
// A backend runs the whole suite with one call in its own test file:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) core.FS { return mybackend.New(t.TempDir()) })
//	}
//
// Run makes one flat subtest per check, with stable names for go test -run
// (for example -run 'Conformance/RenameNoReplace'), a fresh FS for every
// subtest and a timeout for each. The checks come in two layers: the FS
// contract (exclusive create, rename that never replaces, remove and list
// semantics, symbolic links, path confinement, claims) and the spool protocol
// on top of that FS (FIFO order across shards, the sidecar format, ack, nack,
// DONE, sequence numbers, claims, every on-disk layout option). Two loops
// stress durability: FaultInjection fails the i-th operation of each kind
// for i = 0, 1, ... (see FaultFS), and PowerCut, for backends with a crash
// model, takes the state a power cut would leave at many points of a run and
// reopens the spool on it. ClaimUpdateFaults and ClaimUpdatePowerCut do the
// same at every operation of every update of the PRODUCER record, which
// holds the sequence high-water mark, and require that a drained spool never
// gives a number twice.
//
// Checks for optional abilities skip with a reason when the FS lacks them:
// core.DirWatcher, core.FSSyncer, a crash model (CrashModel, or a Crash
// method shaped like the one of backend-memfs), and a way to plant symbolic
// links (a Symlink method, or a Root method naming an OS directory).
//
// Outside go test, Check runs the same checks and returns one Result per
// check; the mqb conformance command uses it on a real directory or mount.
//
// The package imports only core and the standard library, so running it adds
// no dependency to a backend's tests. MQB_CONFORMANCE_LONG=1 (or
// Config.Long) makes the fault and crash loops explore more.
package conformance
