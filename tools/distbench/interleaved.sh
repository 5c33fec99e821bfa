#!/bin/sh
# interleaved: one BEAM client alternates blocks of calls to a herd node
# (examples/dist_echo) and to an Erlang node running the same echo, so that
# the machine's load falls on both alike; prints the medians over the blocks:
#   call   gen_server:call({echo, Node}, ping)            (MONITOR_P, send, reply, DEMONITOR_P)
#   plain  {echo, Node} ! {self(), p}, receive p -> ok end  (one frame each way)
#   tools/distbench/interleaved.sh build/examples/dist_echo [BLOCKS] [CALLS] [WORKERS]
# WORKERS is dist_echo's --workers (default 2). One RESULT line.
set -eu
DIST_ECHO=${1:?usage: interleaved.sh PATH/TO/dist_echo [BLOCKS] [CALLS] [WORKERS]}
K=${2:-8}
M=${3:-2000}
W=${4:-2}
. "$(dirname "$0")/lib.sh"
C=interleaved_$$
H=iherd_$$
B=ibeam_$$
"$DIST_ECHO" --sname "$H" --cookie "$C" --workers "$W" >"$OUT/herd.log" 2>&1 &
pids="$pids $!"
erl -sname "$B" -setcookie "$C" -noshell -eval "$ERL_SERVER_LOOP"'
  register(echo, spawn(fun() -> Loop(0) end)),
  io:format("ready~n"), receive after infinity -> ok end.' >"$OUT/beam.log" 2>&1 &
pids="$pids $!"
wait_for "$OUT/herd.log" "node $H@" && wait_for "$OUT/beam.log" ready ||
  { echo "interleaved: a server did not start" >&2; cat "$OUT"/*.log >&2; exit 1; }
erl -sname "iclient_$$" -setcookie "$C" -noshell -eval '
  H = list_to_atom("'"$H@$HOST"'"), B = list_to_atom("'"$B@$HOST"'"), K = '"$K"', M = '"$M"',
  Call = fun(N) -> ping = gen_server:call({echo, N}, ping, infinity) end,
  Plain = fun(N) -> {echo, N} ! {self(), p}, receive p -> ok end end,
  Time = fun(F, N) ->
           T0 = erlang:monotonic_time(nanosecond),
           lists:foreach(fun(_) -> F(N) end, lists:seq(1, M)),
           (erlang:monotonic_time(nanosecond) - T0) / M / 1000
         end,
  _ = [Time(Call, N) || N <- [H, B]],
  Rs = [{Time(Call, H), Time(Call, B), Time(Plain, H), Time(Plain, B)} || _ <- lists:seq(1, K)],
  Med = fun(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)) end,
  [CH, CB, PH, PB] = [Med([element(I, R) || R <- Rs]) || I <- [1, 2, 3, 4]],
  io:format("RESULT workload=interleaved herd_workers='"$W"' blocks=~p calls=~p call_herd_us=~.1f call_beam_us=~.1f "
            "plain_herd_us=~.1f plain_beam_us=~.1f call_ratio=~.2f plain_ratio=~.2f~n",
            [K, M, CH, CB, PH, PB, CH / CB, PH / PB]),
  halt().'
