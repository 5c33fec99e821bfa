#!/usr/bin/env bash
# Installs the build tree into a scratch prefix and checks what another project
# gets from it (tests/install/CMakeLists.txt, built with find_package(herd)):
# the exported targets carry -fstack-clash-protection; herd_user runs; its own
# module host loads a module that calls into every layer, and exports every
# herd symbol that module needs; its own server offers the observer socket and
# metrics, and the installed bin/herd-observer reads them.
set -euo pipefail
build=$1 src=$2 scratch=$3 sanitize=${4:-}
rm -rf "$scratch" && mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/herd/observer/observer.hpp lib/libherd_observer.a bin/herd-observer; do
  [[ -e "$prefix/$f" ]] || { echo "not installed: $f"; exit 1; }
done
flags=()
[[ -n "$sanitize" ]] && flags=(-DCMAKE_CXX_FLAGS="-fsanitize=$sanitize" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$sanitize"
                              -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=$sanitize")
cmake -S "$src" -B "$scratch/user" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" "${flags[@]}" >/dev/null
cmake --build "$scratch/user" -v | tee "$scratch/build.log" >/dev/null
grep -q -- "-fstack-clash-protection" "$scratch/build.log"
"$scratch/user/herd_user"
"$scratch/user/web_user"
# herd::dist is installed where it was built (erl_interface present).
if [[ -e "$build/dist/libherd_dist.a" ]]; then
  for f in include/herd/dist/node.hpp lib/libherd_dist.a; do
    [[ -e "$prefix/$f" ]] || { echo "not installed: $f"; exit 1; }
  done
  [[ -x "$scratch/user/dist_user" ]] || { echo "dist_user was not built: no herd::dist in the package"; exit 1; }
  # Relocatable: ei is the consumer's herd::ei, found at its configure time, not a path of this machine.
  if grep -q "libei" "$prefix"/lib*/cmake/herd/herdTargets*.cmake; then
    echo "the package names libei by path:"; grep -n "libei" "$prefix"/lib*/cmake/herd/herdTargets*.cmake; exit 1
  fi
  grep -q "herd::ei" "$prefix"/lib*/cmake/herd/herdTargets*.cmake || { echo "herd::dist does not link herd::ei"; exit 1; }
  "$scratch/user/dist_user"
fi
echo "find_package(herd): ok"

"$scratch/user/user_module_host" "$scratch/user/every_public_function.so"
python3 "$src/../modules/public_symbols.py" check \
  --host "$scratch/user/user_module_host" --module "$scratch/user/every_public_function.so"

# The team's server: started with its stdin on a pipe (closing it stops the
# server), "ready ..." read from its stdout.
mkdir -m 700 "$scratch/run"
sock=$scratch/run/team.sock
coproc server { exec "$scratch/user/team_server" "$sock"; }
server_pid=$server_PID
stop_server() {
  exec {server[1]}>&-
  wait "$server_pid"
}
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
if ! read -r -t 60 -u "${server[0]}" word echo_port metrics_port || [[ "$word" != ready ]]; then
  echo "team_server did not start"
  exit 1
fi
cli=$prefix/bin/herd-observer
overview=$("$cli" --socket "$sock" overview)
grep -q "os pid $server_pid," <<<"$overview" || { echo "herd-observer overview: $overview"; exit 1; }
listeners=$("$cli" --socket "$sock" --json listeners)
grep -q "\"name\":\"echo\",\"address\":\"127.0.0.1:$echo_port\"" <<<"$listeners" || { echo "herd-observer listeners: $listeners"; exit 1; }
exec {metrics}<>"/dev/tcp/127.0.0.1/$metrics_port"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&"$metrics"
grep -q '^herd_listener_connections{listener="echo"}' <&"$metrics" || { echo "no echo listener in /metrics"; exit 1; }
exec {metrics}>&-
stop_server
trap - EXIT
echo "herd::observer and bin/herd-observer: ok"
