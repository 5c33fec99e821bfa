#!/usr/bin/env bash
# connbench's churn mode against churn_server (tools/connbench/README.md,
# "Churn"): real holds are open connections; ghost holds leave a connection
# process under the listener after both sockets closed. Checks what the
# benchmark's figures rest on, not its speed: every cycle echoed, every byte
# right, and the listener counting the ghosts it holds (server_conns = H + the
# asking connection) both before and after the cycles; then a drain ends them all.
#   churn_ghost_test.sh CHURN_SERVER CONNBENCH [GHOSTS]
set -euo pipefail
server_bin=$1 connbench=$2 n=${3:-2000}
ulimit -n "$(ulimit -Hn)"
out=$(mktemp)
"$server_bin" --port 0 --bind 127.0.0.1 --workers 2 >"$out" 2>"$out.err" &
server=$!
cleanup() { kill -KILL "$server" 2>/dev/null || true; rm -f "$out" "$out.err"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q '^listening on' "$out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
[[ -n "$port" ]] || { echo "FAIL: the server did not start"; exit 1; }
fail=0
run() {  # kind hold conns_lo conns_hi: two RESULT lines, checked
  local result
  result=$(timeout 120 "$connbench" --port "$port" --server-pid "$server" --hold-kind "$1" --hold "$2" \
    --cycles 200 --cycle-concurrency 8 --sources 2 2>/dev/null | grep '^RESULT' || true)
  echo "$result"
  [[ $(grep -c . <<<"$result") -eq 2 ]] || { echo "FAIL: $1 $2: want 2 RESULT lines"; fail=1; return; }
  while read -r line; do
    key() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
    for want in "ok=200" "failed=0" "mismatches=0" "held=$2"; do
      [[ "$(key "${want%%=*}")" == "${want#*=}" ]] || { echo "FAIL: $1 $2: ${want%%=*}=$(key "${want%%=*}"), want ${want#*=}"; fail=1; }
    done
    local c
    c=$(key server_conns)
    (( c >= $3 && c <= $4 )) || { echo "FAIL: $1 $2: server_conns=$c, want $3..$4"; fail=1; }
  done <<<"$result"
}
# A fresh listener: exactly the ghosts and the connection asking.
run ghost "$n" $((n + 1)) $((n + 1))
# The ghosts stay under the listener after their client is gone. The first
# run's last cycles may still be ending (each closes when the server reads
# its EOF): at most one per cycle thread, plus the asker.
run real 100 $((n + 101)) $((n + 110))
kill -TERM "$server"
rc=0
wait "$server" || rc=$?
[[ $rc -eq 0 ]] || { echo "FAIL: the server exited with $rc after SIGTERM"; fail=1; }
drained=$(sed -n 's/.*draining \([0-9]*\) connection.*/\1/p' "$out.err")
(( ${drained:-0} >= n && ${drained:-0} <= n + 110 )) || { echo "FAIL: the drain found ${drained:-no} connections, want the $n ghosts (+ up to 110 ending)"; cat "$out.err"; fail=1; }
exit $fail
