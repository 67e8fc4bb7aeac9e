# Shared by the ebb serve benchmark scripts (sourced after `build` and
# `load` are set): a scratch directory and the processes to kill on exit,
# medians, free ports, and starting a server.
tmp=$(mktemp -d)
pids=()
# Only processes this script started and that are still its children (a
# finished one's pid may since belong to someone else); then waits for
# them (a server may be writing a checkpoint into $tmp).
cleanup() {
  for p in "${pids[@]}"; do
    [[ $(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2) == "$$" ]] && kill "$p" 2>/dev/null
  done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }
# utime + stime of $server, in clock ticks (getconf CLK_TCK a second).
ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }

# Starts `ebb serve` with the given flags on a data directory, waits until
# it is ready; sets $port, $server and $server_log (its stderr).
servers_started=0
start_server() {
  local data=$1
  shift
  servers_started=$((servers_started + 1))
  local out="$tmp/serve-$servers_started"
  server_log="$out.err"
  "$build/ebb" serve --port 0 --data-dir "$data" "$@" >"$out.out" 2>"$server_log" &
  server=$!
  pids+=("$server")
  port=""
  for _ in $(seq 400); do
    port=$(grep -o '[0-9]*$' "$out.out" 2>/dev/null || true)
    if [ -n "$port" ] && curl -sf "localhost:$port/readyz" >/dev/null 2>&1; then
      # With --resp-port: the second line names the Redis protocol's port.
      resp_port=$(grep -o 'RESP on [0-9.]*:[0-9]*' "$out.out" | grep -o '[0-9]*$' || true)
      return 0
    fi
    sleep 0.05
  done
  echo "ebb serve did not become ready: $(cat "$out.err")" >&2
  exit 1
}
