#!/bin/sh
# oneway_to_beam: issue 18's one-way row into a BEAM node, alone. One BEAM
# node runs distbench.sh's counter; a herd sender (distbench_client) and a
# BEAM sender take turns sending it N {tick, I} messages and then asking for
# the count, REPS times each, interleaved. Nothing else runs on the host's
# distribution: distbench.sh keeps two herd servers, a BEAM server and its
# clients up at once, so this is the row without its neighbours.
#   tools/distbench/oneway_to_beam.sh PATH/TO/distbench_client [N] [REPS]
# One RESULT line per run, then RATIO (median herd -> BEAM over median
# BEAM -> BEAM; >= 1: herd is no slower). Every process it starts is
# stopped by its PID.
set -eu
CLIENT=${1:?usage: oneway_to_beam.sh PATH/TO/distbench_client [N] [REPS]}
N=${2:-300000}
REPS=${3:-5}
[ -x "$CLIENT" ] || { echo "oneway_to_beam: no distbench_client at $CLIENT" >&2; exit 2; }
. "$(dirname "$0")/lib.sh"
COOKIE=oneway_$$
RX=rx_$$
erl -sname "$RX" -setcookie "$COOKIE" -noshell -eval "$ERL_SERVER_LOOP"'
  register(counter, spawn(fun() -> Loop(0) end)),
  io:format("ready~n"), receive after infinity -> ok end.' >"$OUT/rx.log" 2>&1 &
pids="$pids $!"
wait_for "$OUT/rx.log" ready || { echo "oneway_to_beam: the BEAM node did not start" >&2; cat "$OUT/rx.log" >&2; exit 1; }
for r in $(seq 1 "$REPS"); do
  "$CLIENT" --sname htx_${r}_$$ --cookie "$COOKIE" --target "$RX@$HOST" --label beam \
    --msgs "$N" --calls 0 --rounds 1 | grep '^RESULT workload=throughput' | tee -a "$OUT/results"
  erl -sname btx_${r}_$$ -setcookie "$COOKIE" -noshell -eval "$ERL_ONEWAY"'
    Oneway("beam", list_to_atom("'"$RX@$HOST"'"), '"$N"'),
    halt().' | tee -a "$OUT/results"
done
awk '
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    if (f["counted"] != f["msgs"]) bad = 1
    if (f["from"] == "herd") h[++nh] = f["msgs_per_s"]; else b[++nb] = f["msgs_per_s"] }
  END {
    if (bad) { print "oneway_to_beam: a count did not match the messages sent" > "/dev/stderr"; exit 1 }
    if (!nh || !nb) exit 1
    mh = median(h, nh); mb = median(b, nb)
    printf "RATIO workload=throughput pair=herd->beam herd_median=%.0f beam_beam_median=%.0f ratio=%.2f reps=%d\n", mh, mb, mh / mb, nh
  }' "$OUT/results"
