#!/usr/bin/env bash
# Remakes cli/cmd/mqb/default.pgo, the CPU profile the Go toolchain uses to
# build the mqb command with profile-guided optimization (go build picks up
# default.pgo in the main package's directory on its own). The profile is
# the spool alone, with no raw baseline beside it: BenchmarkSpoolAlone
# producing and draining 1 KiB messages with sidecars through backend-os,
# flat and sharded, fsync none and chunk, batches of 1 and 256, payloads
# read both ways. That is the code every route through a directory spool
# runs. Run it on a quiet machine after a change to core or backend-os's
# hot paths, from the repository root:
#
#   bench/pgo.sh            # writes cli/cmd/mqb/default.pgo
#
# MQB_BENCH_DIR (default /dev/shm when it exists) is where the spools go.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/cli/cmd/mqb/default.pgo"
dir=${MQB_BENCH_DIR:-}
if [ -z "$dir" ] && [ -d /dev/shm ]; then dir=/dev/shm/mqb-pgo; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root/bench"
MQB_BENCH_DIR=${dir:-$work/spools} go test -run '^$' -bench '^BenchmarkSpoolAlone$' \
  -benchtime 50000x -count 1 -cpuprofile "$work/cpu.pprof" -o "$work/bench.test" . >"$work/bench.out"
go tool pprof -proto "$work/bench.test" "$work/cpu.pprof" >"$out"
[ -n "${dir:-}" ] && [ "$dir" = /dev/shm/mqb-pgo ] && rm -rf "$dir"
echo "wrote $out ($(wc -c <"$out") bytes) from $(grep -c '^BenchmarkSpoolAlone/' "$work/bench.out") benchmarks"
