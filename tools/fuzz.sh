#!/usr/bin/env bash
# Builds herd's libFuzzer targets with clang++ (libFuzzer + ASan + UBSan;
# every herd source gets -fsanitize=fuzzer-no-link for coverage) in their own
# build directory and runs each for a bounded time: the observer's request
# path, the chat server's line protocol, the example servers' options, the
# HTTP request parser, the WebSocket frame parser, the external term format
# decoder and the distribution frame handler.
# The same build is the lock rules' check (runtime/include/herd/runtime/
# thread_safety.hpp): clang's thread-safety analysis, its warnings errors, on
# every layer and the observer CLI. It compiles every layer with clang
# anyway, so a separate analysis build would compile them all a second time
# (docs/ci.md).
# Targets run side by side, up to JOBS at a time (each is one process on one
# core), so the runs take about SECONDS x ceil(7 / JOBS). SECONDS_EACH 0:
# build (and so check the lock rules) only.
# Usage: tools/fuzz.sh [SECONDS_EACH=60] [BUILD_DIR=build-fuzz] [JOBS=nproc]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
dir=${2:-build-fuzz}
jobs=${3:-$(nproc)}
# -gline-tables-only: a finding's stack trace needs line tables, not full
# debug info, which makes the clang build slower.
tsa="-Wthread-safety -Wthread-safety-beta -Werror=thread-safety -Werror=thread-safety-beta"
cmake -S . -B "$dir" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $tsa" \
  -DHERD_SANITIZE=address,undefined -DHERD_BUILD_TOOLS=OFF -DHERD_FUZZ=ON >/dev/null
# The layers are named for the analysis: every one is checked even if no
# fuzz target comes to link it. http and ws hold no lock (a connection's
# state is its process's); they are checked so that one added there is too.
cmake --build "$dir" -j "$jobs" --target herd_runtime herd_actors herd_supervisors herd_net herd_tables \
  herd_observer herd-observer herd_http herd_ws herd_dist \
  observer_request_fuzz chat_line_fuzz server_options_fuzz http_parser_fuzz ws_frame_fuzz etf_decode_fuzz dist_frame_fuzz
(( secs > 0 )) || exit 0
# -rss_limit_mb: every target's state is bounded (a line, a command line); a leak shows.
run() {  # target corpus: starts it in the background, its output to a log
  echo "fuzz: $1 for ${secs}s"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$dir/tests/fuzz/$1" -max_total_time="$secs" -max_len=200000 -rss_limit_mb=2048 -print_final_stats=1 "$2" \
    >"$dir/$1.log" 2>&1 &
  pids+=($!)
  names+=("$1")
  if (( ${#pids[@]} >= jobs )); then collect; fi
}
failed=0
collect() {  # waits for the running targets; prints each one's stats (its whole log if it failed)
  for k in "${!pids[@]}"; do
    if wait "${pids[$k]}"; then
      echo "fuzz: ${names[$k]}: no finding"
      grep -E '^(stat::|Done )' "$dir/${names[$k]}.log" || true
    else
      echo "fuzz: ${names[$k]}: FAILED"
      cat "$dir/${names[$k]}.log"
      failed=1
    fi
  done
  pids=()
  names=()
}
pids=()
names=()
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
run observer_request_fuzz "$corpus"

corpus="$dir/chat_fuzz_corpus"
mkdir -p "$corpus"
i=0
for s in $'JOIN lobby\n' $'MSG lobby hello there\r\n' $'LEAVE lobby\n' $'MSG\n' $'JOIN a b\n' $'FOO\n\n' 'partial'; do
  printf '%s' "$s" > "$corpus/seed$((i++))"
done
run chat_line_fuzz "$corpus"

corpus="$dir/options_fuzz_corpus"
mkdir -p "$corpus"
i=0
for s in $'--port\x000' $'--port\x005555\x00--workers\x002\x00--max-connections\x00infinity' \
         $'--port\x000\x00--observer\x00/tmp/s\x00--metrics\x00127.0.0.1:9100' $'--bogus' \
         $'--port\x0070000' $'--idle-hibernate-ms\x00-1'; do
  printf '%s' "$s" > "$corpus/seed$((i++))"
done
run server_options_fuzz "$corpus"

corpus="$dir/http_fuzz_corpus"
mkdir -p "$corpus"
i=0
# Two cut bytes, then requests: pipelined, chunked with extensions and trailers, 100-continue, bad framing,
# a HEAD with a body longer than its answer's head (the answer leaves it out).
for s in $'\x05\x10GET /a/1?q=2 HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.0\r\n\r\n' \
         $'\x20\x03POST /a/1/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n' \
         $'\x01\x01POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody' \
         $'\x02\x02POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n' \
         $'\x09\x09GET / HTTP/2.0\r\n\r\n' \
         $'\x01\x01HEAD / HTTP/1.1\r\nContent-Length: 200\r\n\r\n'"$(printf 'b%.0s' {1..200})"; do
  printf '%s' "$s" > "$corpus/seed$((i++))"
done
run http_parser_fuzz "$corpus"

corpus="$dir/ws_fuzz_corpus"
mkdir -p "$corpus"
# Seeds: a split byte, then masked client frames (text, fragmented text with
# a ping between, close 1000).
printf '\x03\x81\x85\x01\x02\x03\x04\x69\x67\x6f\x68\x6e' > "$corpus/seed0"
printf '\x05\x01\x82\x00\x00\x00\x00\xce\x89\x80\x00\x00\x00\x00\x80\x82\x00\x00\x00\x00\xba!' > "$corpus/seed1"
printf '\x00\x88\x82\x00\x00\x00\x00\x03\xe8' > "$corpus/seed2"
run ws_frame_fuzz "$corpus"

corpus="$dir/etf_fuzz_corpus"
mkdir -p "$corpus"
# Seeds: {ok,[1,2|x]}, #{a => <<"hi">>}, a pid, a bignum, a float, a
# bitstring, a reference, a COMPRESSED list of 30 atoms.
printf '\x83\x68\x02\x77\x02ok\x6c\x00\x00\x00\x02\x61\x01\x61\x02\x77\x01x' > "$corpus/seed0"
printf '\x83\x74\x00\x00\x00\x01\x77\x01a\x6d\x00\x00\x00\x02hi' > "$corpus/seed1"
printf '\x83\x58\x77\x09beam@host\x00\x00\x00\x55\x00\x00\x00\x01\x00\x00\x00\x03' > "$corpus/seed2"
printf '\x83\x6e\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01' > "$corpus/seed3"
printf '\x83\x46\x3f\xf0\x00\x00\x00\x00\x00\x00' > "$corpus/seed4"
printf '\x83\x4d\x00\x00\x00\x01\x03\xe0' > "$corpus/seed5"
printf '\x83\x5a\x00\x03\x77\x01n\x00\x00\x00\x07\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03' > "$corpus/seed6"
printf '\x83\x50\x00\x00\x00\xba\x78\x9c\xcb\x61\x60\x60\x90\x2b\x67\x29\x4e\xcc\x4d\x1d\x5a\x64\x16\x00\x2e\x01\x40\xd3' > "$corpus/seed7"
run etf_decode_fuzz "$corpus"

corpus="$dir/dist_frame_fuzz_corpus"
mkdir -p "$corpus"
# Seeds (a frame's body): SEND_SENDER {22, Pid, Pid} + hi, REG_SEND
# {6, Pid, '', echo} + [], MONITOR_P {19, Pid, echo, Ref}.
printf 'p\x83\x68\x03\x61\x16\x58\x77\x09beam@host\x00\x00\x00\x55\x00\x00\x00\x01\x00\x00\x00\x03\x58\x77\x09fuzz@host\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x83\x77\x02hi' > "$corpus/seed0"
printf 'p\x83\x68\x04\x61\x06\x58\x77\x09beam@host\x00\x00\x00\x55\x00\x00\x00\x01\x00\x00\x00\x03\x77\x00\x77\x04echo\x83\x6a' > "$corpus/seed1"
printf 'p\x83\x68\x04\x61\x13\x58\x77\x09beam@host\x00\x00\x00\x55\x00\x00\x00\x01\x00\x00\x00\x03\x77\x04echo\x5a\x00\x03\x77\x09beam@host\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03' > "$corpus/seed2"
run dist_frame_fuzz "$corpus"
collect
exit $failed
