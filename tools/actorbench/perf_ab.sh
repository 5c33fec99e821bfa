#!/bin/sh
# perf_ab.sh BEFORE AFTER [REPS] [ORDER]: two actorbench binaries alternated per
# workload (ORDER "before after" or "after before"), each run under perf stat
# (software counters and tracepoints: this VM has no hardware counters).
# One line per run: the RESULT line, then context switches and futex calls per
# 1,000 messages and CPU time (task-clock, all threads) per message. The
# figures of docs/handoff.md (issue 19).
set -eu
BEFORE=$1; AFTER=$2; REPS=${3:-3}; ORDER=${4:-before after}
TMP=$(mktemp /tmp/perf_ab.XXXXXX)
trap 'rm -f "$TMP"' EXIT
for w in "pingpong 2000000:4000000" "pingpong_many 1000 2000:4000000" "fanin 1000 1000:1000000" "call 1000000:2000000"; do
  args=${w%%:*}; msgs=${w##*:}
  for r in $(seq 1 "$REPS"); do
    for v in $ORDER; do
      if [ "$v" = before ]; then bin=$BEFORE; else bin=$AFTER; fi
      out=$(nice -n 19 perf stat -x, -e task-clock,context-switches,syscalls:sys_enter_futex -o "$TMP" -- \
            "$bin" $args --workers 2 | grep "RESULT.*workload=${args%% *} ")
      g() { awk -F, -v k="$1" '$3==k{print $1}' "$TMP"; }
      echo "$v $out cs_per_kmsg=$(echo "scale=3; $(g context-switches)*1000/$msgs" | bc)" \
           "futex_per_kmsg=$(echo "scale=3; $(g syscalls:sys_enter_futex)*1000/$msgs" | bc)" \
           "cpu_ns_per_msg=$(echo "scale=1; $(g task-clock)*1000000/$msgs" | bc) load=$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
