#!/usr/bin/env bash
# Cluster mode (ebb serve --nats, docs/cluster.md) on this machine, NATS
# and the load generators beside it: ingest of the same stream (1000-event
# batches, Zipf 1.1 over 1M keys) into a single node (--fsync off, as the
# peer comparisons run) and into clusters of 1, 2 and 3 nodes, on one
# nats-server -js (R=1) and on three clustered nats-servers (R=3), one
# http_load per node at once, median of RUNS (default 3); then GET /top-k
# (k=100) closed-loop latency through one node of each.
#   bench/cluster_bench.sh [BUILD_DIR]     (needs nats-server: scripts/bootstrap)
#   REPLICAS="3" RUNS=1 bench/cluster_bench.sh build    (only the R=3 clusters, one run each)
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
# utime + stime of the given processes together, in clock ticks.
ticks_of() { local p t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
# The machine's busy ticks (every CPU: user, nice, system, irq, softirq;
# not idle, iowait, nor steal: the hypervisor's).
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# Core-microseconds an event over $1 events, of the ticks between two readings.
per_event() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}'; }
# (2000 requests and a warm-up of 20 a connection: 2080 in all.)
queries() {
  "$load" query --port "$1" --target "/top-k?namespace=hot&k=100" --closed --requests 2000 --connections 4 --warmup 20 2>&1 | tail -2 | tr '\n' ' '
}

echo "== single node (--fsync off)"
start_server "$tmp/single" --fsync off
curl -sf -X POST "localhost:$port/namespaces" -d "$ns" >/dev/null
n0=$(ticks_of "$server") b0=$(busy_ticks)
for _ in $(seq "$runs"); do ingest "$port"; done >"$tmp/single.txt"
n1=$(ticks_of "$server") b1=$(busy_ticks)
echo "ingest: $(tr '\n' ' ' <"$tmp/single.txt")-> median $(median <"$tmp/single.txt") M events/s"
echo "CPU an event (core-us): ebb $(per_event $((n1 - n0)) $((events * runs))), rest $(per_event $((b1 - b0 - (n1 - n0))) $((events * runs))), machine $(per_event $((b1 - b0)) $((events * runs)))"
echo "GET /top-k k=100: $(queries "$port")"
kill "$server"

# NATS for a cluster: one nats-server -js (R=1), or three clustered by
# routes (R=3: JetStream replicates the stream and the bucket on all
# three). Sets nats_urls and nats_pids.
start_nats() {
  local replicas=$1 name=$2
  nats_urls="" nats_pids=()
  if [ "$replicas" = 1 ]; then
    local p
    p=$(free_port)
    nats-server -js -a 127.0.0.1 -p "$p" -sd "$tmp/$name" >"$tmp/$name.log" 2>&1 &
    nats_pids+=($!)
    nats_urls="nats://127.0.0.1:$p"
  else
    local client=() route=() routes="" i
    # Six distinct free ports (free_port may hand out one just released again).
    local all
    all=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(6)]
[s.bind(("127.0.0.1", 0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')
    read -r -a all <<<"$all"
    client=("${all[@]:0:3}") route=("${all[@]:3:3}")
    for i in 0 1 2; do routes+="${routes:+,}nats://127.0.0.1:${route[$i]}"; done
    for i in 0 1 2; do
      nats-server -js -a 127.0.0.1 -p "${client[$i]}" -n "$name-s$i" -sd "$tmp/$name-s$i" \
        --cluster_name "$name" --cluster "nats://127.0.0.1:${route[$i]}" --routes "$routes" >"$tmp/$name-s$i.log" 2>&1 &
      nats_pids+=($!)
      nats_urls+="${nats_urls:+,}nats://127.0.0.1:${client[$i]}"
    done
  fi
  pids+=("${nats_pids[@]}")
  # JetStream answers once it is up (R=3: once the servers elected a
  # metadata leader).
  local ready="Server is ready"
  [ "$replicas" = 1 ] || ready="JetStream cluster new metadata leader"
  for _ in $(seq 200); do
    cat "$tmp/$name"*.log 2>/dev/null | grep -q "$ready" && sleep 1 && return 0
    sleep 0.1
  done
  echo "NATS did not come up: $(tail -5 "$tmp/$name"*.log)" >&2
  return 1
}

for replicas in ${REPLICAS:-1 3}; do
  for nodes in 1 2 3; do
    servers=$([ "$replicas" = 1 ] && echo "one nats-server -js" || echo "three clustered nats-servers")
    echo "== cluster of $nodes node(s), $servers, R=$replicas, 16 partitions"
    start_nats "$replicas" "nats-r$replicas-$nodes"
    ports=()
    node_pids=()
    for i in $(seq "$nodes"); do
      start_server "$tmp/node-r$replicas-$nodes-$i" --nats "$nats_urls" --nats-replicas "$replicas" --node-id "n$i"
      ports+=("$port")
      node_pids+=("$server")
    done
    curl -sf -X POST "localhost:${ports[0]}/namespaces" -d "$ns" >/dev/null
    # Ownership settles within a few heartbeats.
    for _ in $(seq 100); do
      curl -sf "localhost:${ports[0]}/top-k?namespace=hot" | grep -q '"partial":false' && break
      sleep 0.1
    done
    # Where the CPU goes while ingesting: the ebb nodes, the NATS servers
    # and the rest (load generators, kernel work not charged to either).
    n0=$(ticks_of "${node_pids[@]}") s0=$(ticks_of "${nats_pids[@]}") b0=$(busy_ticks)
    for _ in $(seq "$runs"); do ingest "${ports[@]}"; done >"$tmp/cluster-r$replicas-$nodes.txt"
    n1=$(ticks_of "${node_pids[@]}") s1=$(ticks_of "${nats_pids[@]}") b1=$(busy_ticks)
    echo "ingest: $(tr '\n' ' ' <"$tmp/cluster-r$replicas-$nodes.txt")-> median $(median <"$tmp/cluster-r$replicas-$nodes.txt") M events/s"
    all=$((events * runs))
    echo "CPU an event (core-us): ebb nodes $(per_event $((n1 - n0)) "$all"), nats-server(s) $(per_event $((s1 - s0)) "$all"), rest $(per_event $((b1 - b0 - (n1 - n0) - (s1 - s0))) "$all"), machine $(per_event $((b1 - b0)) "$all")"
    n0=$(ticks_of "${node_pids[@]}") s0=$(ticks_of "${nats_pids[@]}")
    echo "GET /top-k k=100: $(queries "${ports[0]}")"
    n1=$(ticks_of "${node_pids[@]}") s1=$(ticks_of "${nats_pids[@]}")
    echo "CPU a query (core-us, 2080 queries with the warm-up's): ebb nodes $(per_event $((n1 - n0)) 2080), nats-server(s) $(per_event $((s1 - s0)) 2080)"
    echo "stream: $(du -shc "$tmp/nats-r$replicas-$nodes"* | tail -1 | cut -f1) on disk (all servers)"
    kill "${node_pids[@]}" "${nats_pids[@]}" 2>/dev/null || true
    wait "${node_pids[@]}" "${nats_pids[@]}" 2>/dev/null || true
  done
done
