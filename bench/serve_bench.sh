#!/usr/bin/env bash
# ebb serve on this machine, load generators on the same machine:
#  1. ingest over HTTP, 1000-event batches, Zipf 1.1 over 1M keys (median of 5)
#     against Redis ZINCRBY of the same events through redis-cli --pipe
#     (Debian's redis-server, started here; median of 5);
#  2. GET /top-k (k=100) latency at 5000 requests/s while 2M events/s are
#     ingested: bench/http_load (open loop, latency from the scheduled send
#     time) and wrk (Debian's, paced with a Lua delay) as a cross-check;
#  3. resident memory while distinct keys grow from 1M to 50M.
#   bench/serve_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
load="$build/bench/http_load"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

"$build/ebb" serve --port 0 --data-dir "$tmp/data" --log-level warn >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$tmp/serve.out" 2>/dev/null && break; sleep 0.05; done
port=$(grep -o '[0-9]*$' "$tmp/serve.out")
curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"hot","half_lives":["5m"],"k":100}' >/dev/null
"$load" ingest --port "$port" --namespace hot --events 1000000 2>/dev/null >/dev/null  # warm up

echo "== ingest: 2M events, 1000-event batches, Zipf 1.1 over 1M keys"
for _ in 1 2 3 4 5; do "$load" ingest --port "$port" --namespace hot --events 2000000 --connections 4 2>/dev/null; done | tee "$tmp/ingest.txt"
ebb_rate=$(grep -o '[0-9.]* M events/s' "$tmp/ingest.txt" | cut -d' ' -f1 | median)

rport=$(free_port)
redis-server --port "$rport" --save '' --appendonly no --daemonize no --logfile "$tmp/redis.log" &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
"$load" resp --events 2000000 --key hot >"$tmp/zincrby.resp"
for _ in 1 2 3 4 5; do
  redis-cli -p "$rport" flushall >/dev/null
  s=$(date +%s%N)
  redis-cli -p "$rport" --pipe <"$tmp/zincrby.resp" >/dev/null
  e=$(date +%s%N)
  awk -v ns=$((e - s)) 'BEGIN {printf "%.3f\n", 2000000 / (ns / 1e9) / 1e6}'
done >"$tmp/redis.txt"
redis_rate=$(median <"$tmp/redis.txt")
echo "redis ZINCRBY via redis-cli --pipe, M ops/s: $(tr '\n' ' ' <"$tmp/redis.txt")"
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
awk -v e="$ebb_rate" -v r="$redis_rate" 'BEGIN {printf "median: ebb %.2f M events/s, redis %.3f M ops/s: %.1fx\n", e, r, e / r}'

echo "== GET /top-k?k=100 at 5000 requests/s"
"$load" query --port "$port" --target '/top-k?namespace=hot&k=100' --rate 5000 --seconds 3 --connections 2 | sed 's/^/idle:            /'
for conns in 2 4; do
  "$load" ingest --port "$port" --namespace hot --events 16000000 --rate 2000000 --connections "$conns" >"$tmp/bg.out" 2>"$tmp/bg.err" &
  bg=$!
  for _ in $(seq 200); do grep -q started "$tmp/bg.err" 2>/dev/null && break; sleep 0.05; done
  sleep 0.5
  "$load" query --port "$port" --target '/top-k?namespace=hot&k=100' --rate 5000 --seconds 5 --connections "$conns" | sed "s/^/under 2M ev\/s ($conns+$conns conns): /"
  wait "$bg"
  sed 's/^/  background /' "$tmp/bg.out"
done
cat >"$tmp/pace.lua" <<'LUA'
-- 7 connections, 1 ms pause after each response: about 5000 requests/s (wrk reports what it reached)
function delay() return 1 end
LUA
"$load" ingest --port "$port" --namespace hot --events 16000000 --rate 2000000 --connections 2 >"$tmp/bg.out" 2>"$tmp/bg.err" &
bg=$!
for _ in $(seq 200); do grep -q started "$tmp/bg.err" 2>/dev/null && break; sleep 0.05; done
sleep 0.5
wrk -t 1 -c 7 -d 5s --latency -s "$tmp/pace.lua" "http://127.0.0.1:$port/top-k?namespace=hot&k=100" | grep -E 'Latency|50%|90%|99%|Requests/sec' | sed 's/^/wrk under 2M ev\/s: /'
wait "$bg"

echo "== resident memory as distinct keys grow (unique keys, 1000-event batches)"
curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"card","half_lives":["5m"],"windows":["all"]}' >/dev/null
rss() { curl -s "localhost:$port/metrics" | awk '/^ebb_process_resident_memory_bytes/ {printf "%.1f MiB", $2 / 1048576}'; }
echo "before: RSS $(rss)"
offset=0
for n in 1000000 9000000 15000000 25000000; do
  "$load" ingest --port "$port" --namespace card --events "$n" --offset "$offset" --unique --connections 2 2>/dev/null >/dev/null
  offset=$((offset + n))
  echo "after $((offset / 1000000))M distinct keys: RSS $(rss)"
done
kill -TERM "${pids[0]}"
wait "${pids[0]}"
