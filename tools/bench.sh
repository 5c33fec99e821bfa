#!/usr/bin/env bash
# The main job: builds herd's echo server and the load generator, starts the
# server (1 worker, pinned to CPU 0 when there are two or more) and runs
# connbench against it (pinned to CPU 1) for about 20 s: 10,000 connections
# opened at 5,000/s, 64-byte closed-loop round trips, every byte checked.
# Prints connbench's live line and its RESULT (round trips/s, latency
# percentiles, server RSS and CPU per round trip, listen-queue overflows).
#
#   tools/bench.sh                 the above
#   tools/bench.sh --compare ...   side by side with BEAM, Go and plain epoll
#                                  (tools/connbench/compare.py; extra args go to it)
#   tools/bench.sh --actors ...    the actor benchmark against Erlang, Go and CAF
#                                  (tools/actorbench/compare.py; extra args go to it)
#   tools/bench.sh --swap ...      echo through a module handler across a hot swap
#                                  (examples/hot_swap/swap_bench.py)
#   tools/bench.sh --observer ...  echo with `herd-observer top` attached vs not
#                                  (tools/observer/observer_bench.py)
#   tools/bench.sh --accept ...    a connect burst on a node whose workers are all
#                                  busy (tools/acceptbench; extra args go to it)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
[[ -n "$mode" ]] && shift
tools/setup.sh --peers
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target echo_server connbench actorbench hot_swap_server herd-observer acceptbench

# Each side of 10,000 connections needs as many descriptors; the hard limit
# here is 20,000 per process (see README, "Limits").
ulimit -n "$(ulimit -Hn)"
need=2200000
have=$(cat /proc/sys/vm/max_map_count)
if (( have < need )) && [[ $(id -u) -eq 0 ]]; then
  echo "bench: raising vm.max_map_count from $have to $need (guard pages of a million stacks, and the peers)"
  sysctl -w vm.max_map_count=$need >/dev/null
fi

case "$mode" in
  --compare)
    exec python3 tools/connbench/compare.py --herd build/examples/echo_server --out build/connbench-report.txt "$@" ;;
  --actors)
    exec python3 tools/actorbench/compare.py --reps 3 --herd build/tools/actorbench/actorbench \
      --out build/actorbench-report.txt "$@" ;;
  --swap)
    exec python3 examples/hot_swap/swap_bench.py --build-dir build "$@" ;;
  --observer)
    exec python3 tools/observer/observer_bench.py --build-dir build "$@" ;;
  --accept)
    exec build/tools/acceptbench/acceptbench "$@" ;;
  "") ;;
  *) echo "bench: unknown mode '$mode' (none, --compare, --actors, --swap, --observer or --accept)" >&2; exit 2 ;;
esac

server_cpu=() load_cpu=()
if (( $(nproc) >= 2 )); then server_cpu=(taskset -c 0); load_cpu=(taskset -c 1); fi
out=$(mktemp)
"${server_cpu[@]}" build/examples/echo_server --port 0 --bind 127.0.0.1 --workers 1 >"$out" &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q '^listening on' "$out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
[[ -n "$port" ]] || { echo "bench: the echo server did not start" >&2; exit 1; }
echo "bench: echo_server pid $server on port $port"
"${load_cpu[@]}" build/tools/connbench/connbench --host 127.0.0.1 --port "$port" --connections 10000 \
  --payload 64 --rate 5000 --warmup 3 --duration 15 --server-pid "$server"
kill -TERM "$server"
rc=0
wait "$server" || rc=$?
echo "bench: echo_server drained and exited with $rc"
trap - EXIT
rm -f "$out"
