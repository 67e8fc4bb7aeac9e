#!/usr/bin/env bash
# ebb top against `sort | uniq -c | sort -rn | head` on the same 2M-line TSV
# (Zipf 1.1 over 1M keys), in the same run, interleaved, median of 9 each.
# The shell pipeline gets `cut -f1` (it cannot pick a column otherwise) and
# LC_ALL=C (its fastest setting); ebb reads the TSV as it is.
#   bench/compare_top.sh [BUILD_DIR] [LINES]
set -euo pipefail
build=${1:-build}
lines=${2:-2000000}
runs=9
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bench/ebb_gen" "$lines" 1000000 1.1 >"$tmp/events.tsv"
echo "input: $lines lines, $(du -h "$tmp/events.tsv" | cut -f1)"

ns() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_ebb() { "$build/ebb" top --format tsv --key 1 -k 10 --no-progress "$tmp/events.tsv"; }
run_ebb_decayed() { "$build/ebb" top --format tsv --key 1 --time 2 --half-life 5m -k 10 --no-progress "$tmp/events.tsv"; }
# head closes the pipe early: sort then dies of SIGPIPE, which is normal here.
run_shell() { (set +o pipefail; cut -f1 "$tmp/events.tsv" | LC_ALL=C sort | uniq -c | LC_ALL=C sort -rn | head -10); }

: >"$tmp/ebb.t"; : >"$tmp/ebb_decayed.t"; : >"$tmp/shell.t"
for _ in $(seq $runs); do
  s=$(ns); run_ebb >"$tmp/ebb.out"; e=$(ns); echo $((e - s)) >>"$tmp/ebb.t"
  s=$(ns); run_ebb_decayed >/dev/null; e=$(ns); echo $((e - s)) >>"$tmp/ebb_decayed.t"
  s=$(ns); run_shell >"$tmp/shell.out"; e=$(ns); echo $((e - s)) >>"$tmp/shell.t"
done

# Same answer: the shell's top 10 keys, in order, are ebb's top 10.
shell_keys=$(awk '{print $2}' "$tmp/shell.out" | tr '\n' ' ')
ebb_keys=$(awk '/^ +[0-9]+  /{print $2}' "$tmp/ebb.out" | head -10 | tr '\n' ' ')
if [[ "$shell_keys" != "$ebb_keys" ]]; then
  echo "MISMATCH: shell: $shell_keys"
  echo "          ebb:   $ebb_keys"
  exit 1
fi

t_ebb=$(median <"$tmp/ebb.t"); t_dec=$(median <"$tmp/ebb_decayed.t"); t_sh=$(median <"$tmp/shell.t")
awk -v e="$t_ebb" -v d="$t_dec" -v s="$t_sh" 'BEGIN {
  printf "median of '"$runs"': ebb top %.3f s, ebb top --half-life 5m %.3f s, sort|uniq -c|sort -rn|head %.3f s\n", e/1e9, d/1e9, s/1e9
  printf "speedup: %.1fx (all-time), %.1fx (with a decayed view too); top-10 lists agree\n", s/e, s/d
}'
