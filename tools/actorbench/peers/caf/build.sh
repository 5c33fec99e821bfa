#!/bin/sh
# Builds the CAF peer against Debian's libcaf-dev (CAF 0.17.6).
# usage: build.sh [OUT_DIR]   (default: current directory)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-.}
mkdir -p "$out"
# CAF 0.17's headers predate C++20, so build them as C++17.
exec "${CXX:-g++}" -std=c++17 -O2 -DNDEBUG -Wall \
  "$here/actorbench_caf.cpp" -o "$out/actorbench_caf" -lcaf_core -pthread
