#!/usr/bin/env bash
# GET /incr (distributions that forget) over keep-alive HTTP, issue 10's
# target: >= 100k requests/s on this machine with --fsync off.
#
# One server, 8 connections of `http_load incr` (each request adds 1 to a
# random field of a random distribution, 1M distributions x 20 fields), in
# closed loops of one request a round trip and pipelined 4 and 16 deep
# (HTTP/1.1 pipelining: the server answers a round's requests with one
# write). Also --fsync batch (an answer waits for its fsync, shared by the
# requests waiting together) with 64 connections. The stand-in for
# forgettable's Go server on Redis (4 Redis commands an increment) is one
# Redis HINCRBY a request, redis-benchmark with the same connections and
# pipeline depths (its field is always the same one; ebb spreads over 20).
# Medians of 5 rounds, the two servers interleaved. The store fills as the
# rounds go (each run draws new targets): by the end about 1M
# distributions of ~5 bins, so the later runs pay for a large store.
#   bench/incr_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
load="$build/bench/http_load"
source "$(dirname "$0")/common/serve.sh"

start_server "$tmp/off" --fsync off
off=$port
start_server "$tmp/batch" --fsync batch
batch=$port
redis=
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
  redis=$(free_port)
  redis-server --port "$redis" --save '' --appendonly no --daemonize no >"$tmp/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$redis" ping >/dev/null 2>&1 && break; sleep 0.05; done
fi

n=400000
rps() { sed -n 's/.*s, \([0-9]*\) requests\/s.*/\1/p'; }
# A run with failed requests is reported, not taken as a figure.
run() {
  local line
  line=$("$@" || true)
  if [[ $line != *", 0 failed"* ]]; then echo "run failed: $* -> $line" >&2; exit 1; fi
  echo "$line"
}
declare -A results
for round in 1 2 3 4 5; do
  for depth in 1 4 16; do
    results[ebb_$depth]+="$(run "$load" incr --port "$off" --requests $n --connections 8 --pipeline $depth --warmup 100 --seed "$round$depth" | rps) "
    if [[ -n $redis ]]; then
      results[redis_$depth]+="$(redis-benchmark -p "$redis" -c 8 -n $n -P $depth -r 1000000 -q hincrby 'd:__rand_int__' f 1 |
        tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1) "
    fi
  done
  results[batch_64]+="$(run "$load" incr --port "$batch" --requests 200000 --connections 64 --pipeline 1 --warmup 10 --seed "$round" | rps) "
done
printf '%-40s %12s %12s %8s\n' "GET /incr, 8 connections" "ebb req/s" "Redis req/s" "ratio"
for depth in 1 4 16; do
  e=$(tr ' ' '\n' <<<"${results[ebb_$depth]}" | grep . | median)
  if [[ -n $redis ]]; then
    r=$(tr ' ' '\n' <<<"${results[redis_$depth]}" | grep . | median)
    printf '%-40s %12.0f %12.0f %8.2f\n' "--fsync off, pipeline $depth" "$e" "$r" "$(awk -v e="$e" -v r="$r" 'BEGIN {print e / r}')"
  else
    printf '%-40s %12.0f %12s %8s\n' "--fsync off, pipeline $depth" "$e" "-" "-"
  fi
done
echo "(rounds, ebb pipeline 1/4/16: ${results[ebb_1]}/ ${results[ebb_4]}/ ${results[ebb_16]})"
printf '%-40s %12.0f\n' "--fsync batch, 64 connections, pipeline 1" "$(tr ' ' '\n' <<<"${results[batch_64]}" | grep . | median)"
