#!/bin/sh
# distbench: herd and Erlang nodes as clients and servers of the same echo
# and counter, on this host, in one run:
#   - one-way throughput: N small messages to {counter, Node}, then `count`
#   - call round trip: gen_server:call({echo, Node}, ping), CALLS times
# Servers: examples/dist_echo (herd) and an Erlang node running the same
# echo and counter. Clients: a BEAM node (gen_server:call) and a herd node
# (tools/distbench/distbench_client, herd::dist::call), each against both.
# One RESULT line per figure, then one per ratio against BEAM -> BEAM
# (means over the rounds).
#   tools/distbench/distbench.sh build/examples/dist_echo [N] [CALLS] [ROUNDS]
# The herd rows run twice per round, interleaved: with the default
# dist_options::busy_wait (50 us) and with $DISTBENCH_BUSY_WAIT_US (default
# 0, no spin; `none`: the default rows only) on both the herd server
# (to=herd_bwUS, a second dist_echo) and the herd client (from=herd_bwUS; its
# RESULT lines carry busy_wait_us=).
# distbench_client is looked for beside dist_echo's build tree
# (build/tools/distbench/distbench_client) or in $DISTBENCH_CLIENT.
set -eu
DIST_ECHO=${1:?usage: distbench.sh PATH/TO/dist_echo [N] [CALLS]}
N=${2:-1000000}
CALLS=${3:-20000}
ROUNDS=${4:-2}
CLIENT=${DISTBENCH_CLIENT:-$(dirname "$DIST_ECHO")/../tools/distbench/distbench_client}
[ -x "$CLIENT" ] || { echo "distbench: no distbench_client at $CLIENT (build target distbench_client)" >&2; exit 2; }
HOST=$(hostname | cut -d. -f1)
COOKIE=distbench_$$
OUT=$(mktemp -d /tmp/distbench.XXXXXX)
HERD=herdbench_$$
BEAM=beambench_$$
pids=""
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT
BW=${DISTBENCH_BUSY_WAIT_US:-0}
case $BW in none) ;; *[!0-9]*|'') echo "distbench: DISTBENCH_BUSY_WAIT_US must be a number of microseconds or none" >&2; exit 2;; esac
HERDS=herdbwbench_$$

"$DIST_ECHO" --sname "$HERD" --cookie "$COOKIE" --workers 2 >"$OUT/herd.log" 2>&1 &
pids="$pids $!"
if [ "$BW" != none ]; then
  "$DIST_ECHO" --sname "$HERDS" --cookie "$COOKIE" --workers 2 --busy-wait-us "$BW" >"$OUT/herds.log" 2>&1 &
  pids="$pids $!"
fi
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
  grep -q "node $HERD@" "$OUT/herd.log" 2>/dev/null && grep -q ready "$OUT/beam.log" 2>/dev/null &&
    { [ "$BW" = none ] || grep -q "node $HERDS@" "$OUT/herds.log" 2>/dev/null; } && break
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
  lists:foreach(fun(_) ->
      Bench("herd", list_to_atom("'"$HERD@$HOST"'")),
      '"$([ "$BW" != none ] && echo "Bench(\"herd_bw$BW\", list_to_atom(\"$HERDS@$HOST\"))," || true)"'
      Bench("beam", list_to_atom("'"$BEAM@$HOST"'"))
    end, lists:seq(1, '"$ROUNDS"')),
  halt().' | tee "$OUT/results"

# One herd client per round and setting, the settings interleaved.
for r in $(seq 1 "$ROUNDS"); do
  for bw in default $([ "$BW" != none ] && echo "$BW" || true); do
    for to in herd beam; do
      node=$HERD@$HOST label=$to flag=""
      [ "$bw" != default ] && flag="--busy-wait-us $bw"
      [ "$to" = herd ] && [ "$bw" != default ] && node=$HERDS@$HOST label=herd_bw$bw
      [ "$to" = beam ] && node=$BEAM@$HOST
      # shellcheck disable=SC2086 # $flag is empty or two words
      "$CLIENT" --sname hclient_${to}_${bw}_${r}_$$ --cookie "$COOKIE" --target "$node" --label "$label" \
        --msgs "$N" --calls "$CALLS" --rounds 1 $flag | tee -a "$OUT/results"
    done
  done
done

# Ratios of the means against BEAM -> BEAM (< 1: faster than BEAM -> BEAM).
awk '
  /^RESULT workload=call / { split($0, f, " "); k = ""; v = 0
    for (i in f) { split(f[i], kv, "="); if (kv[1] == "from") fr = kv[2]; if (kv[1] == "to") to = kv[2]; if (kv[1] == "us_per_call") v = kv[2] }
    sum["call " fr "->" to] += v; n["call " fr "->" to]++ }
  /^RESULT workload=throughput / { split($0, f, " "); v = 0
    for (i in f) { split(f[i], kv, "="); if (kv[1] == "from") fr = kv[2]; if (kv[1] == "to") to = kv[2]; if (kv[1] == "msgs_per_s") v = kv[2] }
    sum["throughput " fr "->" to] += v; n["throughput " fr "->" to]++ }
  END {
    for (w = 0; w < 2; w++) {
      wl = w ? "throughput" : "call"; base = wl " beam->beam"
      if (!(base in n)) continue
      b = sum[base] / n[base]
      for (k in sum) if (index(k, wl " ") == 1) {
        split(k, p, " "); m = sum[k] / n[k]
        printf "RESULT workload=%s_ratio pair=%s mean=%.1f beam_beam_mean=%.1f ratio=%.2f\n", wl, p[2], m, b, m / b
      }
    }
  }' "$OUT/results"
