#!/usr/bin/env bash
# Cluster mode (ebb serve --nats, docs/cluster.md) on this machine, NATS
# and the load generators beside it: ingest of the same stream (1000-event
# batches, Zipf 1.1 over 1M keys) into a single node (--fsync off, as the
# peer comparisons run) and into clusters of 1, 2 and 3 nodes on one
# nats-server -js (R=1; a 3-server NATS cluster for R=3 is not set up
# here), one http_load per node at once, median of RUNS (default 3); then
# GET /top-k (k=100) closed-loop latency through one node of each.
#   bench/cluster_bench.sh [BUILD_DIR]     (needs nats-server: scripts/bootstrap)
set -euo pipefail
build=${1:-build}
load="$build/bench/http_load"
runs=${RUNS:-3}
events=${EVENTS:-2000000}
source "$(dirname "$0")/common/serve.sh"
command -v nats-server >/dev/null || { echo "nats-server is not installed (scripts/bootstrap installs it): skipped"; exit 0; }

ns='{"name":"hot","windows":["all"],"k":100}'
# Sends $events events, split over the given ports at once; prints M events/s (wall).
ingest() {
  local per=$((events / $#)) start end
  start=$(date +%s.%N)
  local gens=()
  for p in "$@"; do
    "$load" ingest --port "$p" --namespace hot --events "$per" --connections 4 >/dev/null 2>&1 &
    gens+=($!)
  done
  for g in "${gens[@]}"; do wait "$g"; done
  end=$(date +%s.%N)
  awk -v n="$events" -v a="$start" -v b="$end" 'BEGIN {printf "%.3f\n", n / (b - a) / 1e6}'
}
queries() {
  "$load" query --port "$1" --target "/top-k?namespace=hot&k=100" --closed --requests 2000 --connections 4 --warmup 20 2>&1 | tail -2 | tr '\n' ' '
}

echo "== single node (--fsync off)"
start_server "$tmp/single" --fsync off
curl -sf -X POST "localhost:$port/namespaces" -d "$ns" >/dev/null
for _ in $(seq "$runs"); do ingest "$port"; done >"$tmp/single.txt"
echo "ingest: $(tr '\n' ' ' <"$tmp/single.txt")-> median $(median <"$tmp/single.txt") M events/s"
echo "GET /top-k k=100: $(queries "$port")"
kill "$server"

for nodes in 1 2 3; do
  echo "== cluster of $nodes node(s), one nats-server -js, R=1, 16 partitions"
  nats_port=$(free_port)
  nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$tmp/nats-$nodes" >"$tmp/nats-$nodes.log" 2>&1 &
  pids+=($!)
  nats_pid=$!
  sleep 0.5
  ports=()
  node_pids=()
  for i in $(seq "$nodes"); do
    start_server "$tmp/node-$nodes-$i" --nats "nats://127.0.0.1:$nats_port" --node-id "n$i"
    ports+=("$port")
    node_pids+=("$server")
  done
  curl -sf -X POST "localhost:${ports[0]}/namespaces" -d "$ns" >/dev/null
  # Ownership settles within a few heartbeats.
  for _ in $(seq 100); do
    curl -sf "localhost:${ports[0]}/top-k?namespace=hot" | grep -q '"partial":false' && break
    sleep 0.1
  done
  for _ in $(seq "$runs"); do ingest "${ports[@]}"; done >"$tmp/cluster-$nodes.txt"
  echo "ingest: $(tr '\n' ' ' <"$tmp/cluster-$nodes.txt")-> median $(median <"$tmp/cluster-$nodes.txt") M events/s"
  echo "GET /top-k k=100: $(queries "${ports[0]}")"
  echo "stream: $(du -sh "$tmp/nats-$nodes" | cut -f1) on disk"
  kill "${node_pids[@]}" "$nats_pid" 2>/dev/null || true
  wait "${node_pids[@]}" "$nats_pid" 2>/dev/null || true
done
