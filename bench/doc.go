// Package bench holds the Go benchmarks of the mqb directory spool; the
// measuring code itself is in package benchrun, which also backs
// `mqb bench`.
//
// Every produce and consume benchmark runs a raw-syscall baseline in the
// same process, interleaved with the spool one batch at a time (A B, B A;
// three or more arms in the orders of a Williams design, so that each runs
// in each place of a step and after each other arm as often), and reports
// both:
//
//	ns/op        spool nanoseconds per message
//	msgs/s       spool messages per second
//	raw-ns/op    the fastest raw baseline, nanoseconds per message
//	x-raw        spool msgs/s over raw msgs/s (1 = no overhead)
//	<strategy>-ns/op  each raw fsync=batch strategy, for produce fsync=batch
//
// The files go to $MQB_BENCH_DIR (a per-benchmark temporary directory when
// unset), so that the same benchmarks measure a tmpfs or a disk:
//
//	MQB_BENCH_DIR=/mnt/tmpfs go test -run XXX -bench 'Produce/fsync=batch/batch=256/size=1KiB/sidecar=on/layout=flat/backend=os' -count 6 | tee new.txt
//	benchstat old.txt new.txt
//
// BenchmarkScale fills and drains sharded backlogs of 10k and 100k
// messages (and 1M with MQB_BENCH_1M=1); BenchmarkHandoff measures the
// producer-to-consumer latency with wake-ups and with polling.
package bench
