#!/bin/sh
# echo_perf.sh: per-round-trip syscall and scheduling counts of one echo
# server under connbench's echo load (issue 21; docs/echo-path.md).
#
#   tools/connbench/echo_perf.sh CLIENT RECORD SERVER_ARGV...
#     CLIENT  et | lt        connbench --client
#     RECORD  0 | FILE       1: also `perf record -g` (cpu-clock) into FILE
#
# The server runs on core 0, connbench (10,000 connections at 5,000/s, 64
# bytes, 3 s warm-up, 12 s measured) on core 1. `perf stat` attaches to the
# server for 8 s inside the measured window; counts are divided by the
# server's sends in that time (one per round trip). Prints connbench's
# RESULT line, then `PERRT name=value ...` (per round trip).
# Hardware counters (instructions, cycles) are not available in this VM; the
# CPU figure is connbench's cpu_us_per_rt (/proc/PID/stat).
set -eu
client=$1 record=$2
shift 2
build=${BUILD:-build}
cb=$build/tools/connbench/connbench
tmp=$(mktemp -d)
taskset -c 0 "$@" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
spid=$!
trap 'kill $spid 2>/dev/null; wait $spid 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
until grep -q listening "$tmp/server.out" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "no listening line" >&2; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$tmp/server.out" | head -1)
taskset -c 1 "$cb" --port "$port" --server-pid $spid --connections 10000 --rate 5000 \
  --payload 64 --warmup 3 --duration 12 --client "$client" >"$tmp/cb.out" 2>"$tmp/cb.err" &
cpid=$!
# Ramp 2 s + warm-up 3 s, then 8 s of the 12 s window.
sleep 6.5
ev=context-switches,cpu-migrations
for s in recvfrom sendto epoll_wait epoll_pwait epoll_ctl futex read write sched_yield; do
  ev="$ev,syscalls:sys_enter_$s"
done
perf stat -x, -o "$tmp/stat" -p $spid -e "$ev" \
  -e syscalls:sys_exit_recvfrom --filter 'ret == -11' -- sleep 8 &
ppid=$!
if [ "$record" != 0 ]; then
  perf record -q -g -e cpu-clock -F 2999 -p $spid -o "$record" -- sleep 8 >/dev/null 2>&1 || true
fi
wait $ppid
wait $cpid
res=$(grep '^RESULT' "$tmp/cb.out")
echo "$res"
# Per round trip = per send: both servers answer a 64-byte message with one
# send (connbench's rate cannot be used: tracing slows the server down
# during the 8 s, so fewer round trips happen then than on average).
awk -F, '
  /^#/ || NF < 3 { next }
  { name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^syscalls:sys_exit_recvfrom/, "recv_eagain", name)
    n[++k] = name; v[k] = $1 + 0; if (name == "sendto") rt = $1 + 0 }
  END { out = sprintf("PERRT sends=%d", rt)
        for (i = 1; i <= k; ++i) if (v[i] > 0) out = out sprintf(" %s=%.4f", n[i], v[i] / rt)
        print out }' "$tmp/stat"
