#!/usr/bin/env bash
# Builds the observer's request fuzzer with clang++ (libFuzzer + ASan + UBSan;
# every herd source gets -fsanitize=fuzzer-no-link for coverage) in its own
# build directory and runs it for a bounded time.
# Usage: tools/fuzz_observer.sh [SECONDS=60] [BUILD_DIR=build-fuzz] [JOBS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
dir=${2:-build-fuzz}
jobs=${3:-$(nproc)}
cmake -S . -B "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" \
  -DHERD_SANITIZE=address,undefined -DHERD_BUILD_TOOLS=OFF -DHERD_FUZZ=ON >/dev/null
cmake --build "$dir" -j "$jobs" --target observer_request_fuzz
corpus="$dir/observer_fuzz_corpus"
mkdir -p "$corpus"
# Seeds: one request of each kind, and some framing edge cases.
i=0
for s in '{"v":1,"req":"overview"}' '{"v":1,"id":7,"req":"processes","sort":"mailbox","limit":20,"name":"x","status":"waiting"}' \
         '{"v":1,"req":"process","pid":"<5.0>"}' '{"v":1,"req":"tree"}' '{"v":1,"req":"listeners"}' \
         '{"v":1,"req":"modules"}' '{"v":1,"req":"kill","pid":"<1.2>","reason":"shutdown"}' \
         '{"v":1,"req":"load","path":"x.so"}' '{"v":1,"req":"set_max_connections","listener":"e","max":"infinity"}' \
         '{"v":1,"id":"t","req":"trace","pid":"<3.0>","limit":10,"timeout_ms":5}' 'not json' '{"v":2}'; do
  printf '%s\n' "$s" > "$corpus/seed$((i++))"
done
# -rss_limit_mb: the framing holds at most 64 KiB a client; a leak shows.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$dir/tests/fuzz/observer_request_fuzz" -max_total_time="$secs" -max_len=200000 -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus"
