#!/usr/bin/env bash
# Installs what herd needs from Debian's packages. Idempotent: apt-get runs
# only when something is missing. Usage: tools/setup.sh [--peers]
#   --peers  also the benchmark peers (Erlang/OTP, Go, CAF) and python3, and
#            pushbench's: gorilla/websocket for Go, Node.js + npm, wrk
set -euo pipefail
pkgs=(build-essential cmake ninja-build libboost-context-dev libconcurrentqueue-dev
      libmimalloc-dev catch2 procps python3 gdb nlohmann-json3-dev clang tmux libabsl-dev)
# clang's sanitizer and libFuzzer runtimes (the fuzz stage): only a Recommends
# of clang's, which --no-install-recommends below leaves out.
pkgs+=(libclang-rt-dev)
# lld: the sanitizer builds link with it (tools/test.sh), twice as fast as ld.bfd.
pkgs+=(lld)
# WebSocket conformance clients (tests/unit/websocket): Python's websockets,
# Go's gorilla. Node's ws client is installed by the test with npm into the
# build tree (node and npm are not installed here: Debian's npm conflicts
# with the NodeSource node this machine has; without them the test skips).
pkgs+=(python3-websockets golang-go golang-github-gorilla-websocket-dev)
# Erlang distribution (dist/): erl_interface's ei from erlang-dev, zlib for
# compressed terms, and real BEAM nodes (erlang-nox) and epmd for its tests.
pkgs+=(erlang-dev erlang-nox zlib1g-dev)
if [[ "${1:-}" == "--peers" ]]; then
  pkgs+=(erlang-nox golang-go libcaf-dev python3 golang-github-gorilla-websocket-dev nodejs npm wrk)
fi
missing=()
for p in "${pkgs[@]}"; do
  # NodeSource's nodejs package carries npm itself and conflicts with
  # Debian's npm: a working `npm` command is enough.
  [[ "$p" == npm ]] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
