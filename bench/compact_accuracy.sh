#!/usr/bin/env bash
# Issue 11's table: bench/compact_accuracy at 128 KiB a view on the
# synthetic streams (drifting Zipf 1.1, flat Zipf 0.8) and on two real ones
# made offline: the words of the King James Bible (Debian's bible-kjv, when
# installed) and the file paths of this repository's git log. With the
# peers (built by bench/peers/build_peers.sh, outside the repository), the
# same streams' all-time top 100 from RedisBloom's TOPK (HeavyKeeper,
# 2000 x 7, decay 0.925: ~114 KiB, RedisBloom's documented example) and
# DataSketches' frequent_items_sketch (lg 12: a 4096-slot map, ~168 KiB),
# scored by the same exact counts.
#   bench/compact_accuracy.sh [BUILD_DIR] [BUDGET_BYTES] [--redisbloom PATH/redisbloom.so] [--datasketches PATH/datasketches-cpp]
# (the peers also from $EBB_PEER_REDISBLOOM / $EBB_PEER_DATASKETCHES)
set -euo pipefail
build=build
budget=131072
redisbloom=${EBB_PEER_REDISBLOOM:-}
datasketches=${EBB_PEER_DATASKETCHES:-}
positional=0
while (($#)); do
  case $1 in
    --redisbloom) redisbloom=$2; shift 2 ;;
    --datasketches) datasketches=$2; shift 2 ;;
    *) if ((positional == 0)); then build=$1; else budget=$1; fi; positional=$((positional + 1)); shift ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
rserver=
cleanup() {
  [[ -n $rserver ]] && kill "$rserver" 2>/dev/null && wait "$rserver" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
files=()
if command -v bible >/dev/null; then
  bible "gen1:1-rev22:21" | tr -cs "A-Za-z'" '\n' | tr 'A-Z' 'a-z' | grep . >"$tmp/kjv-words"
  files+=("$tmp/kjv-words")
else
  echo "(bible-kjv not installed: no KJV stream)"
fi
if git -C "$here" rev-parse >/dev/null 2>&1; then
  git -C "$here" log --name-only --format= | grep . >"$tmp/git-log-paths"
  files+=("$tmp/git-log-paths")
fi
"$build/bench/compact_accuracy" --budget "$budget" "${files[@]}"

[[ -z $redisbloom && -z $datasketches ]] && exit 0
mkdir -p "$tmp/streams"
"$build/bench/compact_accuracy" --dump "$tmp/streams" "${files[@]}"
echo "peers, all-time top 100 of the same streams (scored against the exact counts):"
if [[ -n $redisbloom ]]; then
  if ! command -v redis-server >/dev/null; then
    echo "  RedisBloom: redis-server not installed (apt-get install redis-server redis-tools): skipped"
    redisbloom=
  else
    rport=$((20000 + RANDOM % 20000))
    redis-server --port "$rport" --save '' --appendonly no --logfile "$tmp/redis.log" --loadmodule "$redisbloom" &
    rserver=$!
    for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  fi
fi
if [[ -n $datasketches ]]; then
  g++ -O2 -std=c++20 -I"$datasketches/fi/include" -I"$datasketches/common/include" "$here/peers/frequent_items_harness.cpp" -o "$tmp/fi"
fi
for f in "$tmp"/streams/*; do
  name=$(basename "$f")
  echo " $name"
  if [[ -n $redisbloom ]]; then
    redis-cli -p "$rport" DEL t >/dev/null
    redis-cli -p "$rport" TOPK.RESERVE t 100 2000 7 0.925 >/dev/null
    # TOPK.ADD with 100 items a command, in RESP (keys may hold spaces); byte lengths: LC_ALL=C.
    LC_ALL=C awk 'BEGIN { ORS = "" }
      function emit() { print "*" (n + 2) "\r\n$8\r\nTOPK.ADD\r\n$1\r\nt\r\n"; for (i = 0; i < n; i++) print "$" length(a[i]) "\r\n" a[i] "\r\n"; n = 0 }
      { a[n++] = $0; if (n == 100) emit() } END { if (n) emit() }' "$f" | redis-cli -p "$rport" --pipe >/dev/null
    redis-cli -p "$rport" --raw TOPK.LIST t WITHCOUNT | paste - - >"$tmp/rb.tsv"
    "$build/bench/compact_accuracy" --score "RedisBloom TOPK 2000 x 7 (HeavyKeeper)" "$f" "$tmp/rb.tsv"
  fi
  if [[ -n $datasketches ]]; then
    "$tmp/fi" "$f" -k 100 --lg 12 2>/dev/null | cut -f2- >"$tmp/ds.tsv"
    "$build/bench/compact_accuracy" --score "DataSketches frequent items lg 12" "$f" "$tmp/ds.tsv"
  fi
done
