#!/usr/bin/env bash
# POST /counts of 200 items (a ranking pass) against ebb serve, issue 10's
# target for exact counting: < 200 us of server time a request.
#
# One server (--fsync off), two namespaces with half-lives 1h/24h/7d fed the
# same 2M events over 100k keys (Zipf 1.1): "exact" ("counting": "exact") and
# "sketch" (the default counting). Then, interleaved, 5 rounds of closed
# loops on one connection (3000 requests each): POST /counts of 200 ids
# (a random draw of the 100k, the same body every request) to each, and GET
# /healthz as the baseline. Server time = the server process's CPU (utime +
# stime from /proc/PID/stat) over the loop / requests; latency is the
# client's round trip. Medians of the 5 rounds.
#   bench/exact_serve_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
load="$build/bench/http_load"
source "$(dirname "$0")/common/serve.sh"
hz=$(getconf CLK_TCK)

start_server "$tmp/data" --fsync off
for ns in exact sketch; do
  counting=$([[ $ns == exact ]] && echo '"counting":"exact",' || true)
  curl -sf -X POST "localhost:$port/namespaces" -d "{\"name\":\"$ns\",$counting\"half_lives\":[\"1h\",\"24h\",\"7d\"]}" >/dev/null
  "$load" ingest --port "$port" --namespace "$ns" --events 2000000 --distinct 100000 --skew 1.1 --connections 2 >/dev/null
done
# 200 ids among the stream's 20k most frequent (http_load's key names,
# bench/common/zipf_stream.hpp key_name()).
python3 - "$tmp" <<'PY'
import json, random, sys
def key_name(rank):
    x = ((rank * 0x9E3779B97F4A7C15) % 2**64) >> 40
    return "tag_%d_" % rank + chr(ord("a") + x % 26) * (x % 13)
random.seed(7)
ids = [key_name(random.randrange(20000)) for _ in range(200)]
for ns in ("exact", "sketch"):
    open(f"{sys.argv[1]}/{ns}.json", "w").write(json.dumps({"namespace": ns, "half_life": "24h", "item_ids": ids}))
PY
curl -sf -X POST "localhost:$port/counts" -d @"$tmp/exact.json" | head -c 300
echo " ..."

n=3000
for round in 1 2 3 4 5; do
  for what in exact sketch healthz; do
    before=$(ticks)
    if [[ $what == healthz ]]; then
      line=$("$load" query --port "$port" --target /healthz --closed --requests $n --connections 1 --warmup 100)
    else
      line=$("$load" query --port "$port" --target /counts --closed --requests $n --connections 1 --warmup 100 --body-file "$tmp/$what.json")
    fi
    after=$(ticks)
    echo "$line" | grep -q ', 0 failed' || { echo "failures: $line" >&2; exit 1; }
    echo "$(( (after - before) ))" >>"$tmp/$what.ticks"
    echo "$line" | sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' >>"$tmp/$what.p50"
  done
done
for what in exact sketch healthz; do
  us=$(median <"$tmp/$what.ticks" | awk -v hz="$hz" -v n=$n '{printf "%.1f", $1 / hz / (n + 100) * 1e6}')
  p50=$(median <"$tmp/$what.p50")
  label=$([[ $what == healthz ]] && echo "GET /healthz (baseline)" || echo "POST /counts, 200 ids, $what")
  echo "$label: server CPU $us us a request, round trip p50 $p50 ms (medians of 5 rounds of $n)"
done
