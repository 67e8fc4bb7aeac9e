#!/usr/bin/env bash
# Issue 11's baseline table: bench/compact_accuracy at 128 KiB a view on the
# synthetic streams (drifting Zipf 1.1, flat Zipf 0.8) and on two real ones
# made offline: the words of the King James Bible (Debian's bible-kjv, when
# installed) and the file paths of this repository's git log.
#   bench/compact_accuracy.sh [BUILD_DIR] [BUDGET_BYTES]
set -euo pipefail
build=${1:-build}
budget=${2:-131072}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=()
if command -v bible >/dev/null; then
  bible "gen1:1-rev22:21" | tr -cs "A-Za-z'" '\n' | tr 'A-Z' 'a-z' | grep . >"$tmp/kjv-words"
  files+=("$tmp/kjv-words")
else
  echo "(bible-kjv not installed: no KJV stream)"
fi
if git -C "$(dirname "$0")" rev-parse >/dev/null 2>&1; then
  git -C "$(dirname "$0")" log --name-only --format= | grep . >"$tmp/git-log-paths"
  files+=("$tmp/git-log-paths")
fi
"$build/bench/compact_accuracy" --budget "$budget" "${files[@]}"
