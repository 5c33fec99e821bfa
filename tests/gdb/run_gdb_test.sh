#!/usr/bin/env bash
# The gdb extension against a node with known actors (gdb_test_node.cpp):
#   1. live: gdb -batch -p attaches to the running node; herd actors, herd bt,
#      herd workers; the thread's own backtrace is unchanged after herd bt, and
#      the node is still alive after gdb detaches.
#   2. kernel core: the same node is killed with SIGABRT (ulimit -c unlimited);
#      its core is checked the same way. Skipped, with a note, when
#      /proc/sys/kernel/core_pattern pipes to a program or is not a plain file name.
#   3. gcore: a second node (mprotect guard pages, which gcore can read) is
#      dumped with gdb's generate-core-file, killed, and its core checked.
# Exit 77 (ctest SKIP_RETURN_CODE) when gdb or its Python is missing or ptrace
# is not permitted. Every process started here is stopped by its pid.
# In a sanitizer build (SANITIZE not "none") only the live part runs: ASan
# turns core dumps off and its shadow memory (terabytes of address space)
# would make any core, kernel's or gcore's, take minutes.
#
#   run_gdb_test.sh GDB_TEST_NODE HERD_PY WORKDIR [SANITIZE]
set -u
exe=$1
herd_py=$2
work=$3
sanitize=${4:-none}
[ -n "$sanitize" ] || sanitize=none
skip=77
to=60  # seconds for any one gdb run

command -v gdb >/dev/null 2>&1 || { echo "SKIP: gdb is not installed (apt-get install gdb)"; exit $skip; }
if ! timeout $to gdb -batch -nx -ex 'python print("herd-py-ok")' 2>/dev/null | grep -q herd-py-ok; then
  echo "SKIP: this gdb has no Python support"
  exit $skip
fi
if [ -r /proc/sys/kernel/yama/ptrace_scope ]; then
  scope=$(cat /proc/sys/kernel/yama/ptrace_scope)
  if [ "$scope" = 3 ] || { [ "$scope" != 0 ] && [ "$(id -u)" != 0 ]; }; then
    echo "SKIP: ptrace attach not permitted (kernel.yama.ptrace_scope=$scope, uid $(id -u))"
    exit $skip
  fi
fi

rm -rf "$work"
mkdir -p "$work"
failures=0
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# start_node LABEL [ARGS...]: starts the node in $work (cwd, for a kernel
# core), with an unlimited core size; sets node_pid and fills pid_of[NAME].
declare -A pid_of
start_node() {
  local label=$1
  shift
  local out="$work/$label.node.out"
  (cd "$work" && ulimit -c unlimited 2>/dev/null; exec "$exe" "$@") >"$out" 2>&1 &
  node_pid=$!
  pids+=("$node_pid")
  local i
  for i in $(seq 200); do
    grep -q '^READY$' "$out" && break
    kill -0 "$node_pid" 2>/dev/null || { echo "node exited early:"; cat "$out"; exit 1; }
    sleep 0.1
  done
  grep -q '^READY$' "$out" || { echo "node not ready after 20 s:"; cat "$out"; exit 1; }
  pid_of=()
  local name pid
  while read -r _ name pid; do pid_of[$name]=$pid; done < <(grep '^actor ' "$out")
}

stop_node() {
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

herd_commands=(
  -ex "source $herd_py"
  -ex "echo ===ACTORS===\\n" -ex "herd actors"
  -ex "echo ===WORKERS===\\n" -ex "herd workers"
  -ex "echo ===BT-BEFORE===\\n" -ex "bt"
  -ex "echo ===BT-alpha===\\n" -ex "herd bt gdb_test.alpha"
  -ex "echo ===BT-beta===\\n" -ex "herd bt gdb_test.beta"
  -ex "echo ===BT-gamma===\\n" -ex "herd bt gdb_test.gamma"
  -ex "echo ===BT-root===\\n" -ex "herd bt <0.0>"
  -ex "echo ===BT-busy===\\n" -ex "herd bt gdb_test.busy"
  -ex "echo ===BT-sleeper===\\n" -ex "herd bt gdb_test.sleeper"
  -ex "echo ===BT-full===\\n" -ex "herd bt gdb_test.alpha full"
  -ex "echo ===BT-AFTER===\\n" -ex "bt"
  -ex "echo ===END===\\n"
)

# section FILE NAME: the lines between ===NAME=== and the next marker.
section() {
  awk -v s="===$2===" '$0 == s {on = 1; next} /^===[A-Za-z-]+===$/ {on = 0} on' "$1"
}

check_output() {
  local label=$1 f=$2
  grep -q '^===END===$' "$f" || { fail "$label: gdb did not run every command (see $f)"; return; }
  if grep -q 'Python Exception\|^herd: ' "$f"; then fail "$label: a herd command failed:"; grep 'Python Exception\|^herd: ' "$f"; fi
  local actors bt
  actors=$(section "$f" ACTORS)
  local n
  for n in alpha beta gamma; do
    echo "$actors" | grep -Eq "^${pid_of[gdb_test.$n]}[[:space:]]+gdb_test\.$n[[:space:]]+waiting[[:space:]]" ||
      fail "$label: gdb_test.$n ${pid_of[gdb_test.$n]} not listed as waiting"
  done
  echo "$actors" | grep -Eq "^${pid_of[gdb_test.alpha]}[[:space:]]+gdb_test\.alpha[[:space:]]+waiting[[:space:]]+3[[:space:]]" ||
    fail "$label: gdb_test.alpha's mailbox length is not 3"
  echo "$actors" | grep -Eq "^${pid_of[gdb_test.sleeper]}[[:space:]]+gdb_test\.sleeper[[:space:]]+hibernated[[:space:]]" ||
    fail "$label: gdb_test.sleeper not listed as hibernated"
  echo "$actors" | grep -Eq "^${pid_of[gdb_test.busy]}[[:space:]]+gdb_test\.busy[[:space:]]+running on worker [01][[:space:]]" ||
    fail "$label: gdb_test.busy not listed as running on a worker"
  echo "$actors" | grep -Eq "^${pid_of[root]}[[:space:]]+-[[:space:]]+waiting[[:space:]]" ||
    fail "$label: the root ${pid_of[root]} not listed as waiting"
  echo "$actors" | grep -q '^6 actor(s)$' || fail "$label: not 6 actors"
  section "$f" WORKERS | grep -Eq "^[01][[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+${pid_of[gdb_test.busy]} gdb_test\.busy" ||
    fail "$label: herd workers does not show gdb_test.busy running"
  for n in alpha beta gamma; do
    bt=$(section "$f" "BT-$n")
    echo "$bt" | grep -Eq "(^#[0-9]+ +| in )gdb_test_waiting_in_$n \(" ||
      fail "$label: herd bt gdb_test.$n lacks gdb_test_waiting_in_$n"
    echo "$bt" | grep -q "gdb_test_outer_frame" || fail "$label: herd bt gdb_test.$n lacks gdb_test_outer_frame"
    echo "$bt" | grep -Eq '^#0 +0x[0-9a-f]+ in herd::rt::suspend' || fail "$label: herd bt gdb_test.$n does not start in herd::rt::suspend"
    echo "$bt" | grep -q 'fiber_entry' || fail "$label: herd bt gdb_test.$n does not reach fiber_entry"
    echo "$bt" | grep -q '__futex\|pthread_cond\|epoll\|syscall\|abort\|raise' &&
      fail "$label: herd bt gdb_test.$n shows the thread's own frames"
  done
  section "$f" BT-root | grep -q gdb_test_root_waiting || fail "$label: herd bt <0.0> lacks gdb_test_root_waiting"
  section "$f" BT-busy | grep -Eq 'running on worker [01]: .*gdb thread [0-9]+' ||
    fail "$label: herd bt gdb_test.busy does not name the worker's thread"
  section "$f" BT-sleeper | grep -q 'hibernated' || fail "$label: herd bt gdb_test.sleeper does not say hibernated"
  section "$f" BT-full | grep -q gdb_test_waiting_in_alpha || fail "$label: herd bt ... full lacks gdb_test_waiting_in_alpha"
  [ "$(section "$f" BT-BEFORE)" = "$(section "$f" BT-AFTER)" ] && [ -n "$(section "$f" BT-BEFORE)" ] ||
    fail "$label: the thread's own bt differs after herd bt"
}

# ---- 1. live ---------------------------------------------------------------
start_node live
live_pid=$node_pid
timeout $to gdb -batch -nx -p "$live_pid" "${herd_commands[@]}" >"$work/live.gdb.out" 2>&1
if grep -q 'ptrace: Operation not permitted\|Could not attach to process' "$work/live.gdb.out"; then
  echo "SKIP: gdb may not attach to the node (ptrace not permitted):"
  grep 'ptrace\|attach' "$work/live.gdb.out" | head -3
  stop_node "$live_pid"
  exit $skip
fi
check_output live "$work/live.gdb.out"
kill -0 "$live_pid" 2>/dev/null || fail "live: the node died after gdb detached"
echo "live: checked ($work/live.gdb.out)"

if [ "$sanitize" != none ]; then
  stop_node "$live_pid"
  echo "kernel core and gcore: not checked in a sanitizer build ($sanitize)"
  [ "$failures" -eq 0 ] || { echo "$failures check(s) failed; gdb outputs are in $work"; exit 1; }
  echo "PASS"
  exit 0
fi

# ---- 2. kernel core of the same node -----------------------------------------
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo '|unknown')
if [[ "$pattern" == \|* || "$pattern" == */* ]] || [ "$(cd "$work" && ulimit -c unlimited 2>/dev/null && ulimit -c)" != unlimited ]; then
  echo "kernel core: not checked (core_pattern '$pattern' is not a plain file name, or ulimit -c cannot be raised)"
  stop_node "$live_pid"
else
  rm -f "$work"/core*
  kill -ABRT "$live_pid"
  wait "$live_pid" 2>/dev/null
  core=$(ls -t "$work"/core* 2>/dev/null | head -1)
  if [ -z "$core" ]; then
    fail "kernel core: no core file in $work after SIGABRT (core_pattern '$pattern')"
  else
    timeout $to gdb -batch -nx "$exe" "$core" "${herd_commands[@]}" >"$work/kcore.gdb.out" 2>&1
    check_output "kernel core" "$work/kcore.gdb.out"
    echo "kernel core: checked ($work/kcore.gdb.out)"
    rm -f "$core"
  fi
fi

# ---- 3. gcore of a second node -------------------------------------------------
start_node gcore --mprotect-guards
gc_pid=$node_pid
timeout $to gdb -batch -nx -p "$gc_pid" -ex "generate-core-file $work/gcore.core" >"$work/gcore.make.out" 2>&1
stop_node "$gc_pid"
if ! grep -q '^Saved corefile' "$work/gcore.make.out" || [ ! -s "$work/gcore.core" ]; then
  fail "gcore: no core written:"
  cat "$work/gcore.make.out"
else
  timeout $to gdb -batch -nx "$exe" "$work/gcore.core" "${herd_commands[@]}" >"$work/gcore.gdb.out" 2>&1
  check_output gcore "$work/gcore.gdb.out"
  echo "gcore: checked ($work/gcore.gdb.out)"
  rm -f "$work/gcore.core"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed; gdb outputs are in $work"
  exit 1
fi
echo "PASS"
