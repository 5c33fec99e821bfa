#!/usr/bin/env bash
# A chat room's fan-out on a 2-worker chat_server, driven by connbench --mode
# chat, and how much CPU each worker thread used over the run (utime + stime
# of the threads named herd-w<N>, /proc/PID/task/<tid>/stat; of several with
# one name — a thread started from a worker inherits it — the lowest tid).
# Issue 13: before the wake-up fix one worker did all of it and the other
# stayed parked. Prints connbench's RESULT line and one WORKER line per worker.
#   chat_worker_cpu.sh CHAT_SERVER CONNBENCH [MEMBERS=200] [SECONDS=8] [connbench args...]
set -euo pipefail
server_bin=$1 connbench=$2 members=${3:-200} secs=${4:-8}
shift $(( $# < 4 ? $# : 4 ))
out=$(mktemp)
"$server_bin" --port 0 --bind 127.0.0.1 --workers 2 >"$out" 2>&1 &
server=$!
cleanup() { kill -KILL "$server" 2>/dev/null || true; rm -f "$out"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q '^listening on' "$out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
[[ -n "$port" ]] || { echo "chat_worker_cpu: the server did not start" >&2; exit 1; }
worker_ticks() {
  for t in $(ls -d /proc/"$server"/task/* | sort -t/ -k5 -n); do
    name=$(cat "$t/comm")
    [[ $name == herd-w* ]] || continue
    # Fields 14 and 15 (utime, stime) are 12 and 13 after the ") " that ends the name.
    read -r -a f <<<"$(sed 's/.*) //' "$t/stat")"
    echo "$name $(( f[11] + f[12] ))"
  done | sort -s -u -k1,1
}
before=$(worker_ticks)
timeout $(( secs + 60 )) "$connbench" --host 127.0.0.1 --port "$port" --mode chat --room-members "$members" \
  --connections "$members" --warmup 1 --duration "$secs" --server-pid "$server" "$@" 2>/dev/null | grep '^RESULT'
after=$(worker_ticks)
join <(echo "$before") <(echo "$after") |
  awk -v hz="$(getconf CLK_TCK)" -v s=$(( secs + 1 )) \
    '{ printf "WORKER %s cpu_s=%.2f pct_of_run=%.0f\n", $1, ($3 - $2) / hz, 100 * ($3 - $2) / hz / s }'
kill -TERM "$server"
wait "$server" || true
