#!/usr/bin/env bash
# ebb serve on this machine, load generators on the same machine:
#  1. ingest over HTTP, 1000-event batches, Zipf 1.1 over 1M keys (median of 5)
#     against Redis ZINCRBY of the same events through redis-cli --pipe
#     (Debian's redis-server, started here; median of 5);
#  2. GET /top-k (k=100) latency at 5000 requests/s while 2M events/s are
#     ingested: bench/http_load (open loop, latency from the scheduled send
#     time) and wrk (Debian's, paced with a Lua delay) as a cross-check;
#  3. resident memory while distinct keys grow from 1M to 50M;
#  4. durability: ingest with --fsync batch against --fsync off on the same
#     stream at 8 and 16 connections (median of 5 each; target: batch at
#     least 2 M events/s and at least half of off), and recovery time of a
#     1 GiB log (SIGKILL, restart, time until /readyz answers 200).
#  5. seed 002's load: 1M events/s of ingest (2 connections) and 10k
#     top-100 queries/s (open loop, 4 connections) together for
#     SEED_SECONDS (default 60): query latency percentiles, failures, the
#     answer cache's hits and misses, and resident memory before and after
#     ($SEED_SERVER_ARGS: more `ebb serve` flags for the run, e.g.
#     "--checkpoint-interval 1h --history-interval 0" to see what the
#     disk adds to the tail).
#  6. windows over HTTP (issue 9): ingest into a namespace with and without
#     windows 1m/1h/1d (median of 5 each); a namespace with windows 1m/1h/1d
#     backfilled with a day of events (3M, timestamps spread over the last
#     24 h), then GET /top-k?window=1h and window=1d (k=100) at 200
#     requests/s each while 1M events/s are ingested: latency percentiles.
#   bench/serve_bench.sh [BUILD_DIR] [SECTIONS]   (SECTIONS: e.g. "4"; default all)
set -euo pipefail
build=${1:-build}
sections=${2:-123456}
load="$build/bench/http_load"
source "$(dirname "$0")/common/serve.sh"

if [[ $sections == *4* ]]; then
  echo "== durability: --fsync batch vs off, 3M events in 1000-event batches, Zipf 1.1 over 1M keys (median of 5)"
  for mode in off batch; do
    start_server "$tmp/fsync-$mode" --fsync "$mode"
    curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"hot","half_lives":["5m"],"k":100}' >/dev/null
    "$load" ingest --port "$port" --namespace hot --events 1000000 --connections 8 >/dev/null 2>&1  # warm up
    for conns in 8 16; do
      for _ in 1 2 3 4 5; do "$load" ingest --port "$port" --namespace hot --events 3000000 --connections "$conns" 2>/dev/null; done >"$tmp/$mode-$conns.txt"
      rate=$(grep -o '[0-9.]* M events/s' "$tmp/$mode-$conns.txt" | cut -d' ' -f1 | median)
      echo "$rate" >"$tmp/$mode-$conns.median"
      echo "--fsync $mode, $conns connections: $(grep -o '[0-9.]* M events/s' "$tmp/$mode-$conns.txt" | cut -d' ' -f1 | tr '\n' ' ')-> median $rate M events/s"
    done
    kill -TERM "$server"
    wait "$server" || true
    rm -rf "$tmp/fsync-$mode"
  done
  for conns in 8 16; do
    awk -v b="$(cat "$tmp/batch-$conns.median")" -v o="$(cat "$tmp/off-$conns.median")" -v c="$conns" \
      'BEGIN {printf "%d connections: batch %.2f M events/s = %.0f%% of off (%.2f)\n", c, b, 100 * b / o, o}'
  done

  echo "== recovery of a 1 GiB log (no checkpoint: every record replayed)"
  start_server "$tmp/recovery" --fsync off --checkpoint-interval 100000h
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"hot","half_lives":["5m"],"windows":["all"],"k":100}' >/dev/null
  "$load" ingest --port "$port" --namespace hot --events 32500000 --connections 8 2>/dev/null >/dev/null
  kill -KILL "$server"
  wait "$server" 2>/dev/null || true
  echo "log: $(du -sb "$tmp/recovery/wal" | cut -f1) bytes in $(ls "$tmp/recovery/wal" | wc -l) segments"
  for _ in 1 2 3; do
    s=$(date +%s%N)
    start_server "$tmp/recovery" --checkpoint-interval 100000h
    e=$(date +%s%N)
    echo "ready after $(( (e - s) / 1000000 )) ms; $(grep -o 'recovered .*' "$server_log"); $(curl -s "localhost:$port/namespaces/hot" | grep -o '"events":[0-9]*')"
    kill -KILL "$server"
    wait "$server" 2>/dev/null || true
  done
  rm -rf "$tmp/recovery"
fi
if [[ $sections == *5* ]]; then
  seconds=${SEED_SECONDS:-60}
  echo "== seed 002: 1M events/s + 10k GET /top-k?k=100 a second for $seconds s (open loop)"
  start_server "$tmp/seed" --fsync off ${SEED_SERVER_ARGS:-}
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"hot","half_lives":["5m"],"k":100}' >/dev/null
  "$load" ingest --port "$port" --namespace hot --events 1000000 --connections 2 >/dev/null 2>&1  # warm up
  rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
  rss_before=$(rss_kib)
  # 1M events' bodies, cycled for the whole run (not 60M built up front).
  "$load" ingest --port "$port" --namespace hot --events 1000000 --seconds "$seconds" --rate 1000000 --connections 2 >"$tmp/seed-ingest.out" 2>"$tmp/seed-ingest.err" &
  bg=$!
  for _ in $(seq 600); do grep -q started "$tmp/seed-ingest.err" 2>/dev/null && break; sleep 0.1; done
  grep -q started "$tmp/seed-ingest.err" || { echo "the ingest generator did not start: $(cat "$tmp/seed-ingest.err")" >&2; exit 1; }
  "$load" query --port "$port" --target '/top-k?namespace=hot&k=100' --rate 10000 --seconds "$seconds" --connections 4
  wait "$bg" || true
  cat "$tmp/seed-ingest.out"
  rss_after=$(rss_kib)
  metrics=$(curl -s "localhost:$port/metrics")
  awk -v b="$rss_before" -v a="$rss_after" 'BEGIN {printf "RSS: %.1f MiB before, %.1f MiB after\n", b / 1024, a / 1024}'
  echo "answer cache: $(echo "$metrics" | awk '/^ebb_answer_cache_hits_total/ {h=$2} /^ebb_answer_cache_misses_total/ {m=$2} END {print h " hits, " m " misses"}')"
  kill -TERM "$server"
  wait "$server" || true
  rm -rf "$tmp/seed"
fi
if [[ $sections == *6* ]]; then
  seconds=${WINDOW_SECONDS:-20}
  echo "== windows: GET /top-k?window=1h|1d&k=100, 200 requests/s each, under 1M events/s of ingest for $seconds s (open loop)"
  start_server "$tmp/windows" --fsync off
  # Ingest cost over HTTP: the same 2M events into a decayed-only namespace
  # and into one with windows 1m/1h/1d too, interleaved, median of 5.
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"plain","half_lives":["5m"],"k":100}' >/dev/null
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"windowed","half_lives":["5m"],"windows":["1m","1h","1d"],"k":100}' >/dev/null
  for _ in 1 2 3 4 5; do
    for ns in plain windowed; do
      "$load" ingest --port "$port" --namespace "$ns" --events 2000000 --connections 4 2>/dev/null | grep -o '[0-9.]* M events/s' | cut -d' ' -f1 >>"$tmp/win-$ns.txt"
    done
  done
  awk -v p="$(median <"$tmp/win-plain.txt")" -v w="$(median <"$tmp/win-windowed.txt")" \
    'BEGIN {printf "HTTP ingest (4 connections, median of 5): 5m only %.2f M events/s, 5m + windows 1m/1h/1d %.2f: cost %.2fx\n", p, w, p / w}'
  curl -sf -X DELETE "localhost:$port/namespaces/plain" >/dev/null
  curl -sf -X DELETE "localhost:$port/namespaces/windowed" >/dev/null
  curl -sf -X POST "localhost:$port/namespaces" -d '{"name":"win","half_lives":["5m"],"windows":["1m","1h","1d"],"k":100}' >/dev/null
  "$load" ingest --port "$port" --namespace win --events 3000000 --backfill 86400 --connections 2 | sed 's/^/backfill, a day: /'
  "$load" ingest --port "$port" --namespace win --events 1000000 --seconds "$seconds" --rate 1000000 --connections 2 >"$tmp/win-ingest.out" 2>"$tmp/win-ingest.err" &
  bg=$!
  for _ in $(seq 600); do grep -q started "$tmp/win-ingest.err" 2>/dev/null && break; sleep 0.1; done
  "$load" query --port "$port" --target '/top-k?namespace=win&window=1h&k=100' --rate 200 --seconds "$seconds" --connections 1 | sed 's/^/window 1h: /' &
  q1=$!
  "$load" query --port "$port" --target '/top-k?namespace=win&window=1d&k=100' --rate 200 --seconds "$seconds" --connections 1 | sed 's/^/window 1d: /'
  wait "$q1" || true
  wait "$bg" || true
  sed 's/^/  background /' "$tmp/win-ingest.out"
  kill -TERM "$server"
  wait "$server" || true
  rm -rf "$tmp/windows"
fi
[[ $sections == *[123]* ]] || exit 0

start_server "$tmp/data" --log-level warn
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
kill -TERM "$server"
wait "$server"
