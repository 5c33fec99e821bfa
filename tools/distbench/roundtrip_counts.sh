#!/bin/sh
# roundtrip_counts.sh DIST_ECHO LABEL [CALLS] [WORKERS]: a BEAM client makes CALLS gen_server calls and CALLS
# plain round trips to a herd dist_echo while perf stat counts dist_echo's context switches,
# wake-ups, futex and epoll_wait calls; prints per-round-trip counts and the client's us per call.
# Needs perf with tracepoints (perf_event_paranoid <= 2 for your own processes)
# and erl. The figures of docs/handoff.md (issue 19).
set -eu
DIST_ECHO=$1; LABEL=$2; M=${3:-5000}; W=${4:-2}
. "$(dirname "$0")/lib.sh"
C=dp_$$; H=dpherd_$$
"$DIST_ECHO" --sname "$H" --cookie "$C" --workers "$W" >"$OUT/herd.log" 2>&1 &
hp=$!; pids="$pids $hp"
wait_for "$OUT/herd.log" "node $H@" || { echo "roundtrip_counts: dist_echo did not start" >&2; cat "$OUT/herd.log" >&2; exit 1; }
# warm the connection first, then count
erl -sname "dpw_$$" -setcookie "$C" -noshell -eval '
  H = list_to_atom("'"$H@$HOST"'"),
  [ping = gen_server:call({echo, H}, ping, infinity) || _ <- lists:seq(1, 200)], halt().'
perf stat -x, -e task-clock,context-switches,sched:sched_wakeup,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read \
  -o "$OUT/perf" -p "$hp" &
pp=$!; pids="$pids $pp"
sleep 0.5
R=$(erl -sname "dpc_$$" -setcookie "$C" -noshell -eval '
  H = list_to_atom("'"$H@$HOST"'"), M = '"$M"',
  T0 = erlang:monotonic_time(nanosecond),
  [ping = gen_server:call({echo, H}, ping, infinity) || _ <- lists:seq(1, M)],
  T1 = erlang:monotonic_time(nanosecond),
  [begin {echo, H} ! {self(), p}, receive p -> ok end end || _ <- lists:seq(1, M)],
  T2 = erlang:monotonic_time(nanosecond),
  io:format("call_us=~.1f plain_us=~.1f", [(T1 - T0) / M / 1000, (T2 - T1) / M / 1000]), halt().')
kill -INT $pp; wait $pp 2>/dev/null || true
g() { awk -F, -v k="$1" '$3==k{print $1}' "$OUT/perf"; }
N=$((2 * M))
echo "$LABEL workers=$W rts=$N $R cs_per_rt=$(echo "scale=2; $(g context-switches)/$N" | bc) wakeups_per_rt=$(echo "scale=2; $(g sched:sched_wakeup)/$N" | bc) futex_per_rt=$(echo "scale=2; $(g syscalls:sys_enter_futex)/$N" | bc) epoll_per_rt=$(echo "scale=2; $(g syscalls:sys_enter_epoll_wait)/$N" | bc) cpu_us_per_rt=$(echo "scale=2; $(g task-clock)*1000/$N" | bc) load=$(cut -d' ' -f1 /proc/loadavg)"
