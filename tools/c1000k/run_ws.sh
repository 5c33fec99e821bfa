#!/bin/bash
# The C1000K WebSocket figures: `c1000k --ws SESSIONS` RUNS times, then the
# median of every numeric field of each RESULT line.
#
#   tools/c1000k/run_ws.sh [BUILD_DIR=build] [SESSIONS=1000000] [RUNS=2]
#
# Memory bound (about 2.5 GB at 1,000,000 sessions, peak ~4 GB; c1000k
# refuses a size MemAvailable cannot hold), so it runs under nice -n 19.
# With mprotect stack guards (Linux < 6.13, no MADV_GUARD_INSTALL) every
# actor's stack is two mappings: vm.max_map_count must reach 2 x max_actors
# + 1000. As root this raises it; otherwise it says what to run.
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
runs=${3:-2}
bin="$build/tools/c1000k/c1000k"
[ -x "$bin" ] || { echo "run_ws.sh: no $bin (cmake --build $build --target c1000k)" >&2; exit 2; }
actors=$(( n + 8192 > 1048576 ? n + 8192 : 1048576 ))  # c1000k --ws's max_actors
need=$(( 2 * actors + 1000 ))
have=$(cat /proc/sys/vm/max_map_count)
if [ "$have" -lt "$need" ]; then
  if [ "$(id -u)" = 0 ]; then
    sysctl -w vm.max_map_count="$need"
  else
    echo "run_ws.sh: vm.max_map_count is $have, $n sessions may need $need (mprotect guards): as root run" >&2
    echo "  sysctl -w vm.max_map_count=$need   (and persist it in /etc/sysctl.d/)" >&2
    echo "  On Linux >= 6.13 herd guards stacks with MADV_GUARD_INSTALL and needs no more mappings." >&2
  fi
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "$runs"); do
  echo "run $i/$runs: $bin --ws $n (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  nice -n 19 "$bin" --ws "$n" | tee -a "$out"
done
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 2 or f[0] != "RESULT":
        continue
    for kv in f[2:]:
        k, _, v = kv.partition("=")
        try:
            rows.setdefault(f[1], {}).setdefault(k, []).append(float(v))
        except ValueError:
            pass
for name, fields in rows.items():
    print("MEDIAN " + name + " runs=%d " % len(next(iter(fields.values()))) +
          " ".join("%s=%g" % (k, statistics.median(v)) for k, v in fields.items()))
PY
