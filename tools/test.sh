#!/usr/bin/env bash
# Builds herd and runs every test: first the clang build of the fuzz targets,
# which checks the lock rules, then the release suite, then the ASan+UBSan
# suite (the load tests too, smaller: tools are off there, tests/load builds
# connbench itself; see tests/load/CMakeLists.txt), then the runtime, actor,
# supervisor, net, observer, module, table and distribution tests and the
# quicker stress tests under TSan at small scale, then the fuzz targets run.
# Prints each stage's time. Usage: tools/test.sh [--quick]   (--quick: the lock
# rules' clang build and the release suite only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# The release tests run one more than there are cores: they spend part of
# their time waiting (for child processes, sockets, timeouts), and one more
# job took that stage from 383 to 336 s here. The sanitizer stages keep one a
# core: their tests are CPU-bound (no gain measured at one more) and slower
# under load, so a busier machine only stretches their timing (docs/ci.md).
test_jobs=$(( jobs + 1 ))
stage_start=0
stage() { stage_start=$(date +%s); echo; echo "=== $1"; }
stage_done() { echo "=== $1: $(( $(date +%s) - stage_start )) s"; }

stage "setup"
tools/setup.sh
stage_done "setup"

build() {  # dir, extra cmake args... [-- targets...]
  local dir=$1; shift
  local args=() targets=()
  while (( $# )) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (( $# )) && { shift; targets=(--target "$@"); }
  cmake -S . -B "$dir" -G Ninja -DHERD_BUILD_TESTS=ON "${args[@]}" >/dev/null
  cmake --build "$dir" -j "$jobs" "${targets[@]}"
}

# Lock rules (runtime/include/herd/runtime/thread_safety.hpp): clang's
# thread-safety analysis with its warnings as errors, on every layer and the
# observer CLI. It runs in the clang build of the fuzz targets (tools/fuzz.sh),
# which compiles every layer anyway: a build of its own for the analysis alone
# cost a cold run 1-1.5 minutes of CPU on each core (docs/ci.md). First, so that a broken lock rule
# fails the run before the long builds; the fuzz runs come last.
stage "clang build: thread-safety analysis and the fuzz targets"
tools/fuzz.sh 0 build-fuzz "$jobs"
stage_done "clang build: thread-safety analysis and the fuzz targets"

# Six test sources to a translation unit (HERD_TEST_UNITY, tests/CMakeLists.txt):
# most of a test source's compile time is what every one repeats, and a unit of
# six takes about 30% less (docs/ci.md). The layers and examples are compiled
# as a user's build compiles them.
unity=(-DHERD_TEST_UNITY=6)

stage "release build"
build build -DCMAKE_BUILD_TYPE=Release "${unity[@]}"
stage_done "release build"

stage "release tests"
ctest --test-dir build -j "$test_jobs" --output-on-failure --no-tests=error
stage_done "release tests"

[[ "${1:-}" == "--quick" ]] && exit 0

# The sanitizer builds link with lld (tools/setup.sh installs it): it links a
# test executable in half the time of ld.bfd, ~80 links per build. The release
# build keeps the default linker, the one a user's build gets.
lld=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
     -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)

stage "asan+ubsan build"
# -O1: sanitizer builds compile much faster and still inline enough. -g1 (line
# tables, enough for the sanitizers' stack traces) compiles a third faster than
# -g; the gdb test's node asks for -g itself. The tests' own sources at -O0
# (HERD_TEST_CXX_FLAGS, tests/CMakeLists.txt): they are most of the compile
# work and a -O0 source compiles in ~60% of the time; the layers stay at -O1.
build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DHERD_TEST_CXX_FLAGS=-O0 -DHERD_SANITIZE=address,undefined -DHERD_BUILD_TOOLS=OFF "${lld[@]}" "${unity[@]}"
stage_done "asan+ubsan build"

stage "asan+ubsan tests (small scale)"
HERD_TEST_SCALE=small ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j "$jobs" --output-on-failure --no-tests=error
stage_done "asan+ubsan tests (small scale)"

stage "tsan build"
# Only the executables the TSan stage runs (and what they depend on): the
# layers whose state more than one worker touches (the scheduler, mailboxes,
# links and monitors, the supervisors, the loader, net's readiness and buffer
# pool, the memory transport, tables, the observer's server, distribution's
# node state). Not HTTP, WebSocket or the term codec: their state is one
# process's (docs/ci.md), and the ASan+UBSan stage runs their tests.
tsan_tests=(runtime_tests actor_tests supervisor_tests net_tests net_load_tests observer_tests module_tests memory_transport_tests
            table_tests dist_tests pg_dist_tests observer_nodes_tests dist_links_tests dist_limits_tests)
# Of the stress tests, those that finish in seconds under TSan (the
# million-process spawns, the storms and the teardown take minutes each; the
# idle-CPU figure is a speed claim TSan's overhead breaks).
tsan_stress="skynet|stack pools|sleep and receive timeouts|wake-up storm: senders race"
build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DHERD_TEST_CXX_FLAGS=-O0 -DHERD_SANITIZE=thread -DHERD_BUILD_TOOLS=OFF "${lld[@]}" "${unity[@]}" -- "${tsan_tests[@]}" stress_tests
stage_done "tsan build"

tsan_stage="tsan tests (runtime, actors, supervisors, net, observer, modules, tables, dist, stress; small scale)"
stage "$tsan_stage"
HERD_TEST_SCALE=small TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir build-tsan -j "$jobs" --output-on-failure --no-tests=error \
  -R "^($(IFS="|"; echo "${tsan_tests[*]}")):|^stress_tests:($tsan_stress)"
stage_done "$tsan_stage"

fuzz_stage="fuzz runs: observer requests, chat lines, server options, HTTP requests, WebSocket frames, external term format, dist frames (clang libFuzzer + ASan/UBSan, 30 s each, two at a time)"
stage "$fuzz_stage"
tools/fuzz.sh 30 build-fuzz "$jobs"
stage_done "$fuzz_stage"
