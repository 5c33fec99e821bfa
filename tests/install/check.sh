#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, builds the user project in
# tests/install against it with find_package(herd), checks that the exported
# targets carry -fstack-clash-protection, and runs the program.
set -euo pipefail
build=$1 src=$2 scratch=$3 sanitize=${4:-}
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
flags=()
[[ -n "$sanitize" ]] && flags=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitize" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize")
cmake -S "$src" -B "$scratch/user" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" "${flags[@]}" >/dev/null
cmake --build "$scratch/user" -v | tee "$scratch/build.log" >/dev/null
grep -q -- "-fstack-clash-protection" "$scratch/build.log"
"$scratch/user/herd_user"
echo "find_package(herd): ok"
