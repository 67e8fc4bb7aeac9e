#!/usr/bin/env bash
# Cluster mode's retention (docs/cluster.md, "Retention") on this machine:
# one node on one nats-server -js, fed a steady paced stream (1000-event
# batches, Zipf 1.1 over 1M keys) for SECONDS, once with --nats-retention
# RETENTION and once with 0 (the stream kept whole), both sharing
# checkpoints every INTERVAL. Every 10 s it prints the events stream's and
# the checkpoint stream's messages and bytes (nats-server's /jsz), and at
# the end the node's acknowledged events/s: the stream stays bounded with
# retention, and the uploads' cost shows as the difference in ingest.
#   bench/cluster_retention.sh [BUILD_DIR]    (needs nats-server: scripts/bootstrap)
#   SECONDS_=120 RATE=100000 RETENTION=30s INTERVAL=5s bench/cluster_retention.sh build
set -euo pipefail
build=${1:-build}
load="$build/bench/http_load"
seconds=${SECONDS_:-90}
rate=${RATE:-100000}
retention=${RETENTION:-20s}
interval=${INTERVAL:-5s}
source "$(dirname "$0")/common/serve.sh"
command -v nats-server >/dev/null || { echo "nats-server is not installed (scripts/bootstrap installs it): skipped"; exit 0; }
[[ -x $load && -x $build/ebb ]] || { echo "cluster_retention: build $build first (ebb, bench/http_load)" >&2; exit 1; }

# "messages bytes" of a stream, from the server's monitoring port.
stream_size() {
  curl -sf "localhost:$2/jsz?streams=true" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for a in d.get("account_details", []):
    for s in a.get("stream_detail", []):
        if s["name"] == sys.argv[1]:
            print(s["state"]["messages"], s["state"]["bytes"], s["state"]["first_seq"]); sys.exit()
print(0, 0, 0)' "$1"
}

run() {
  local keep=$1 name=$2 np mp
  np=$(free_port)
  mp=$(free_port)
  nats-server -js -a 127.0.0.1 -p "$np" -m "$mp" -sd "$tmp/$name-nats" >"$tmp/$name-nats.log" 2>&1 &
  pids+=($!)
  local nats=$!
  for _ in $(seq 100); do curl -sf "localhost:$mp/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  start_server "$tmp/$name" --nats "nats://127.0.0.1:$np" --node-id n1 --nats-partitions 8 --nats-checkpoint-interval "$interval" \
    --nats-retention "$keep" --log-level warn
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"hot","windows":["all"],"k":100}' >/dev/null
  echo "== --nats-retention $keep, --nats-checkpoint-interval $interval, $rate events/s for $seconds s"
  "$load" ingest --port "$port" --namespace hot --events 2000000 --connections 4 --rate "$rate" --seconds "$seconds" >"$tmp/$name.ingest" 2>&1 &
  local gen=$!
  printf '   %4s %14s %12s %10s %16s %14s\n' s 'EBB msgs' 'EBB MB' 'first seq' 'checkpoint msgs' 'checkpoint MB'
  for t in $(seq 10 10 "$seconds"); do
    sleep 10
    read -r m b f <<<"$(stream_size EBB "$mp")"
    read -r cm cb _ <<<"$(stream_size EBB_checkpoints "$mp")"
    printf '   %4d %14d %12.1f %10d %16d %14.1f\n' "$t" "$m" "$(awk -v b="$b" 'BEGIN {print b / 1e6}')" "$f" "$cm" "$(awk -v b="$cb" 'BEGIN {print b / 1e6}')"
  done
  wait "$gen" || true
  echo "   ingest: $(tail -1 "$tmp/$name.ingest")"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  kill "$nats" 2>/dev/null || true
  wait "$nats" 2>/dev/null || true
}

run "$retention" kept
run 0 whole
