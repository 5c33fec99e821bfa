#!/bin/sh
# distbench: a BEAM client node against examples/dist_echo (herd) and against
# an Erlang node running the same echo and counter, on this host:
#   - one-way throughput: N small messages to {counter, Node}, then `count`
#   - call round trip: gen_server:call({echo, Node}, ping), CALLS times
# One RESULT line per figure. With DIST_CLIENT (tools/distbench/dist_client,
# a herd node) also herd -> herd and herd -> BEAM one-way throughput, each
# beside a BEAM -> BEAM run of the same N, and their ratio.
#   tools/distbench/distbench.sh build/examples/dist_echo [N] [CALLS] [DIST_CLIENT]
set -eu
DIST_ECHO=${1:?usage: distbench.sh PATH/TO/dist_echo [N] [CALLS]}
N=${2:-1000000}
CALLS=${3:-20000}
DIST_CLIENT=${4:-}
HOST=$(hostname | cut -d. -f1)
COOKIE=distbench_$$
OUT=$(mktemp -d /tmp/distbench.XXXXXX)
HERD=herdbench_$$
BEAM=beambench_$$
pids=""
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

"$DIST_ECHO" --sname "$HERD" --cookie "$COOKIE" --workers 2 >"$OUT/herd.log" 2>&1 &
pids="$pids $!"
erl -sname "$BEAM" -setcookie "$COOKIE" -noshell -eval '
  Loop = fun L(C) ->
           receive
             {'"'"'$gen_call'"'"', From, count} -> gen:reply(From, C), L(C);
             {'"'"'$gen_call'"'"', From, reset} -> gen:reply(From, ok), L(0);
             {'"'"'$gen_call'"'"', From, T} -> gen:reply(From, T), L(C);
             {From, T} when is_pid(From) -> From ! T, L(C);
             _ -> L(C + 1)
           end
         end,
  register(counter, spawn(fun() -> Loop(0) end)),
  register(echo, spawn(fun() -> Loop(0) end)),
  io:format("ready~n"), receive after infinity -> ok end.' >"$OUT/beam.log" 2>&1 &
pids="$pids $!"
for i in $(seq 1 600); do
  grep -q "node $HERD@" "$OUT/herd.log" 2>/dev/null && grep -q ready "$OUT/beam.log" 2>/dev/null && break
  sleep 0.1
done

erl -sname client_$$ -setcookie "$COOKIE" -noshell -eval '
  N = '"$N"', Calls = '"$CALLS"',
  Bench = fun(Peer, Node) ->
    ok = gen_server:call({counter, Node}, reset, infinity),
    T0 = erlang:monotonic_time(microsecond),
    lists:foreach(fun(I) -> {counter, Node} ! {tick, I} end, lists:seq(1, N)),
    Count = gen_server:call({counter, Node}, count, infinity),
    T1 = erlang:monotonic_time(microsecond),
    io:format("RESULT workload=throughput from=beam to=~s msgs=~p counted=~p ms=~.1f msgs_per_s=~p~n",
              [Peer, N, Count, (T1 - T0) / 1000, round(N * 1000000 / (T1 - T0))]),
    T2 = erlang:monotonic_time(microsecond),
    lists:foreach(fun(_) -> ping = gen_server:call({echo, Node}, ping, infinity) end, lists:seq(1, Calls)),
    T3 = erlang:monotonic_time(microsecond),
    io:format("RESULT workload=call from=beam to=~s calls=~p us_per_call=~.1f~n",
              [Peer, Calls, (T3 - T2) / Calls])
  end,
  Bench("herd", list_to_atom("'"$HERD@$HOST"'")),
  Bench("beam", list_to_atom("'"$BEAM@$HOST"'")),
  Bench("herd", list_to_atom("'"$HERD@$HOST"'")),
  Bench("beam", list_to_atom("'"$BEAM@$HOST"'")),
  halt().'

# --- herd as the client (herd -> herd, herd -> BEAM), against BEAM -> BEAM ---
beam_oneway() {  # one-way throughput of a BEAM client to $1's counter; prints msgs/s
  erl -sname "client2_$$" -setcookie "$COOKIE" -noshell -eval '
    N = '"$N"', Node = list_to_atom("'"$1"'"),
    ok = gen_server:call({counter, Node}, reset, infinity),
    T0 = erlang:monotonic_time(microsecond),
    lists:foreach(fun(I) -> {counter, Node} ! {tick, I} end, lists:seq(1, N)),
    N = gen_server:call({counter, Node}, count, infinity),
    T1 = erlang:monotonic_time(microsecond),
    io:format("~p~n", [round(N * 1000000 / (T1 - T0))]), halt().'
}
herd_oneway() {  # $1 node, $2 label: the herd client's RESULT line
  "$DIST_CLIENT" --sname "hclient_$$" --cookie "$COOKIE" --target "$1" --label "$2" --n "$N"
}
rate() { sed -n 's/.*msgs_per_s=\([0-9]*\).*/\1/p'; }
if [ -n "$DIST_CLIENT" ]; then
  for round in 1 2; do
    hh=$(herd_oneway "$HERD@$HOST" herd)
    echo "$hh"
    hb=$(herd_oneway "$BEAM@$HOST" beam)
    echo "$hb"
    bb=$(beam_oneway "$BEAM@$HOST")
    echo "RESULT workload=throughput from=beam to=beam msgs=$N msgs_per_s=$bb round=$round"
    echo "$hh" | rate | awk -v hb="$(echo "$hb" | rate)" -v bb="$bb" -v r="$round" \
      '{ printf "RESULT workload=throughput_ratio round=%s herd_herd_over_beam_beam=%.2f herd_beam_over_beam_beam=%.2f\n", r, $1 / bb, hb / bb }'
  done
fi
