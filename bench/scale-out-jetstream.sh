#!/usr/bin/env bash
# Throughput of 1 vs 3 forwarders (spool -> R3 stream) and 1 vs 2 consumers
# (stream -> PostgreSQL) on a loopback 3-node JetStream cluster, for
# docs/guide/scale-out-jetstream.md. Needs nats-server, psql and a
# PostgreSQL at 127.0.0.1 (user postgres, database test); uses the loopback
# ports 14221-14223 and 16221-16223 and the tables bench_one and bench_two.
#
#   MQB=./mqb N=30000 bench/scale-out-jetstream.sh
set -euo pipefail
MQB=${MQB:-mqb}
tmp=""
if [ -z "${W:-}" ]; then W=$(mktemp -d); tmp=$W; fi
N=${N:-30000}
mkdir -p "$W"
servers=()
for i in 1 2 3; do
  routes=$(for j in 1 2 3; do [ $j != $i ] && printf 'nats://127.0.0.1:1622%d,' $j; done || true)
  /usr/sbin/nats-server -a 127.0.0.1 -p 1422$i -js -sd "$W/n$i" --server_name n$i \
    --cluster_name bench --cluster nats://127.0.0.1:1622$i --routes "${routes%,}" 2>"$W/n$i.log" &
  servers+=($!)
done
trap 'kill ${servers[*]} 2>/dev/null || true; wait; [ -z "$tmp" ] || rm -rf "$tmp"' EXIT
sleep 5
NATS=nats://127.0.0.1:14221,127.0.0.1:14222,127.0.0.1:14223
PG='postgres://postgres@127.0.0.1/test'
seq 1 "$N" | sed 's/.*/{"n":&}/' > "$W/in.jsonl"
split -n l/3 -d "$W/in.jsonl" "$W/part"
$MQB copy --drain --from "file://$W/in.jsonl?format=json" --to "dir-spool://$W/one" 2>/dev/null
for p in 0 1 2; do $MQB copy --drain --from "file://$W/part0$p?format=json" --to "dir-spool://$W/s$p" 2>/dev/null; done
for tb in bench_one bench_two; do
  psql -q "$PG" -c "DROP TABLE IF EXISTS $tb; CREATE TABLE $tb (message_id text PRIMARY KEY, n int)"
done
now() { date +%s.%N; }
rate() { echo "scale=0; $N / ($(now) - $1)" | bc; }

s=$(now)
$MQB copy --drain --from "dir-spool://$W/one" --to "$NATS?subject=b1&stream=B1&create_stream=true&replicas=3" 2>"$W/f1.log"
echo "1 forwarder:  $(rate $s) msg/s"

s=$(now); pids=()
for p in 0 1 2; do
  $MQB copy --drain --from "dir-spool://$W/s$p" --to "$NATS?subject=b3&stream=B3&create_stream=true&replicas=3" 2>"$W/f3-$p.log" & pids+=($!)
done
wait "${pids[@]}"
echo "3 forwarders: $(rate $s) msg/s"

s=$(now)
$MQB copy --drain --from "$NATS?subject=b1&stream=B1&durable=db" --to "$PG?table=bench_one&id_column=message_id" 2>"$W/c1.log"
echo "1 consumer:   $(rate $s) msg/s"

s=$(now); pids=()
for p in 0 1; do
  $MQB copy --drain --from "$NATS?subject=b3&stream=B3&durable=db" --to "$PG?table=bench_two&id_column=message_id" 2>"$W/c2-$p.log" & pids+=($!)
done
wait "${pids[@]}"
echo "2 consumers:  $(rate $s) msg/s"
psql -q "$PG" -Atc "SELECT (SELECT count(*) FROM bench_one), (SELECT count(*) FROM bench_two)"
for tb in bench_one bench_two; do psql -q "$PG" -c "DROP TABLE $tb"; done
