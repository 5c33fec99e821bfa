#!/bin/bash
# echo_epoll --footprint and tools/connbench/footprint_ab.py: bad options are
# refused with a usage line (exit 2); a short run pairs on/off windows, and
# connbench checks every echoed byte while the footprint flips.
#   footprint_ab_test.sh ECHO_EPOLL CONNBENCH FOOTPRINT_AB_PY
set -u
EPOLL=$1 CB=$2 SCRIPT=$3
fail() { echo "FAIL: $*"; exit 1; }
for bad in 12 1024,x 1024, 99999,0 -1,5 64,0,3 64,0,12 5000,0,4 1,2,3,4; do
  out=$("$EPOLL" --footprint "$bad" 2>&1) && fail "--footprint $bad was accepted"
  rc=$?
  [ "$rc" -eq 2 ] || fail "--footprint $bad: exit $rc"
  grep -q "usage: echo_epoll" <<<"$out" || fail "--footprint $bad: no usage line: $out"
done
python3 "$SCRIPT" --footprint nope --echo-epoll "$EPOLL" --connbench "$CB" > /dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "footprint_ab --footprint nope: exit $rc"
out=$(python3 "$SCRIPT" --echo-epoll "$EPOLL" --connbench "$CB" --connections 200 --duration 8 --window 1 \
      --warmup 1 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "short run: exit $rc"
grep -q "^RESULT tool=footprint_ab .* pairs=[1-9]" <<<"$out" || fail "no RESULT line with a pair"
grep -q "connbench: RESULT .* connected=200 failed=0 disconnects=0 mismatches=0 " <<<"$out" ||
  fail "connbench: not every connection up, or bytes mismatched"
echo PASS
