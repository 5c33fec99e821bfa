#!/usr/bin/env bash
# The main job until the net issue lands: builds herd's actorbench and runs
# it side by side with its Erlang/OTP, Go and CAF peers (2 schedulers each,
# 3 repetitions interleaved), printing the raw RESULT lines, medians and
# herd's ratio to each peer. Extra arguments go to compare.py, e.g.
#   tools/bench.sh --quick --reps 1            # a smoke run at small sizes
#   tools/bench.sh --workloads pingpong,ring
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --peers
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target actorbench
# herd's stacks need no extra mappings where the kernel has MADV_GUARD_INSTALL
# (Linux >= 6.13); older kernels need two per stack for 1M processes.
need=2200000
have=$(cat /proc/sys/vm/max_map_count)
if (( have < need )) && [[ $(id -u) -eq 0 ]]; then
  echo "bench: raising vm.max_map_count from $have to $need (for mprotect guards and the peers)"
  sysctl -w vm.max_map_count=$need >/dev/null
fi
exec python3 tools/actorbench/compare.py --reps 3 --herd build/tools/actorbench/actorbench \
  --out build/actorbench-report.txt "$@"
