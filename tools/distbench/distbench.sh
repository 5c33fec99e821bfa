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
. "$(dirname "$0")/lib.sh"
COOKIE=distbench_$$
HERD=herdbench_$$
BEAM=beambench_$$
BW=${DISTBENCH_BUSY_WAIT_US:-0}
case $BW in none) ;; *[!0-9]*|'') echo "distbench: DISTBENCH_BUSY_WAIT_US must be a number of microseconds or none" >&2; exit 2;; esac
HERDS=herdbwbench_$$

"$DIST_ECHO" --sname "$HERD" --cookie "$COOKIE" --workers 2 >"$OUT/herd.log" 2>&1 &
pids="$pids $!"
if [ "$BW" != none ]; then
  "$DIST_ECHO" --sname "$HERDS" --cookie "$COOKIE" --workers 2 --busy-wait-us "$BW" >"$OUT/herds.log" 2>&1 &
  pids="$pids $!"
fi
erl -sname "$BEAM" -setcookie "$COOKIE" -noshell -eval "$ERL_SERVER_LOOP"'
  register(counter, spawn(fun() -> Loop(0) end)),
  register(echo, spawn(fun() -> Loop(0) end)),
  io:format("ready~n"), receive after infinity -> ok end.' >"$OUT/beam.log" 2>&1 &
pids="$pids $!"
wait_for "$OUT/herd.log" "node $HERD@" && wait_for "$OUT/beam.log" ready &&
  { [ "$BW" = none ] || wait_for "$OUT/herds.log" "node $HERDS@"; } ||
  { echo "distbench: a server did not start" >&2; cat "$OUT"/*.log >&2; exit 1; }

erl -sname client_$$ -setcookie "$COOKIE" -noshell -eval "$ERL_ONEWAY"'
  N = '"$N"', Calls = '"$CALLS"',
  Bench = fun(Peer, Node) ->
    Oneway(Peer, Node, N),
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
