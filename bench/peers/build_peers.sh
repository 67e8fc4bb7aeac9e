#!/usr/bin/env bash
# Builds the peers of bench/peer_bench.sh in a scratch directory that
# already holds their sources. It downloads nothing: fetching the sources is
# yours to do (below), outside the repository, and nothing here is ever
# committed or fetched by ebb's build or CI.
#
#   bench/peers/build_peers.sh SCRATCH_DIR
#
# SCRATCH_DIR layout (what this script expects):
#   SCRATCH_DIR/RedisBloom          RedisBloom, branch 2.4 (e.g. tag v2.4.23),
#                                   with its submodules deps/readies and
#                                   deps/t-digest-c filled in at the commits
#                                   the superproject pins (`git ls-tree HEAD deps/`)
#   SCRATCH_DIR/datasketches-cpp    Apache DataSketches C++ (e.g. tag 5.2.0);
#                                   header-only, nothing to build
#
# Getting them, e.g. with git (any way to the same trees will do):
#   git clone -b v2.4.23 --recursive https://github.com/RedisBloom/RedisBloom SCRATCH_DIR/RedisBloom
#   git clone -b 5.2.0 https://github.com/apache/datasketches-cpp SCRATCH_DIR/datasketches-cpp
#
# Needs Debian's build-essential, cmake, python3 (RedisBloom's readies
# makefiles) and, to run the comparison, redis-server and redis-tools
# (Debian 12: Redis 7.0, which loads RedisBloom 2.4). `make build` is
# RedisBloom's own release build (-O3, -flto at link), with t-digest-c built
# through CMake as one of its steps. Prints the paths to give peer_bench.sh.
set -euo pipefail
scratch=${1:?usage: bench/peers/build_peers.sh SCRATCH_DIR}
scratch=$(cd "$scratch" && pwd)
status=0

rb="$scratch/RedisBloom"
if [[ -f "$rb/Makefile" ]]; then
  for sub in deps/readies/mk/main deps/t-digest-c/CMakeLists.txt; do
    if [[ ! -e "$rb/$sub" ]]; then
      echo "build_peers: $rb/$sub is missing: fill in RedisBloom's submodules first" >&2
      exit 1
    fi
  done
  echo "== RedisBloom: make build in $rb"
  (cd "$rb" && nice make build)
  so=$(find "$rb/bin" -name redisbloom.so -path '*release*' -print -quit)
  if [[ -z "$so" ]]; then
    echo "build_peers: no redisbloom.so under $rb/bin after make build" >&2
    exit 1
  fi
  # It must load into this machine's redis-server and answer the commands
  # the benchmark sends.
  if command -v redis-server >/dev/null; then
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    redis-server --port "$port" --save '' --appendonly no --loadmodule "$so" --logfile /dev/null &
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    if redis-cli -p "$port" TOPK.RESERVE t 3 8 7 0.9 | grep -q OK &&
      redis-cli -p "$port" TOPK.ADD t a b a >/dev/null &&
      [[ $(redis-cli -p "$port" TOPK.LIST t WITHCOUNT | head -2 | tr '\n' ' ') == "a 2 " ]] &&
      redis-cli -p "$port" CMS.INITBYDIM c 1024 4 | grep -q OK &&
      [[ $(redis-cli -p "$port" CMS.INCRBY c a 1 b 2 | tr '\n' ' ') == "1 2 " ]]; then
      echo "RedisBloom loads into Redis $(redis-server --version | cut -d' ' -f3 | cut -d= -f2) and answers TOPK.* and CMS.*"
    else
      echo "build_peers: $so does not load or answer TOPK/CMS commands" >&2
      status=1
    fi
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  else
    echo "build_peers: redis-server is not installed (apt-get install redis-server redis-tools): not checked" >&2
  fi
  echo "--redisbloom $so"
else
  echo "build_peers: no RedisBloom sources in $rb: skipped" >&2
fi

ds="$scratch/datasketches-cpp"
if [[ -f "$ds/fi/include/frequent_items_sketch.hpp" && -d "$ds/common/include" ]]; then
  echo "== DataSketches: header-only, the harness is compiled by bench/peer_bench.sh"
  echo "--datasketches $ds"
else
  echo "build_peers: no DataSketches sources in $ds: skipped" >&2
fi
exit $status
