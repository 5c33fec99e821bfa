# Sourced by the distbench scripts (POSIX sh): the host's short name, a
# temporary directory ($OUT), the PIDs of the processes the script starts
# ($pids: each is stopped with SIGKILL, by its PID, when the script exits),
# and the Erlang code of the BEAM side, so that every script measures the
# same server and the same sender.
HOST=$(hostname | cut -d. -f1)
OUT=$(mktemp -d "/tmp/${0##*/}.XXXXXX")
pids=""
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT

# wait_for FILE TEXT: true once TEXT is in FILE, false after 60 s.
wait_for() {
  for _ in $(seq 1 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# An -eval prefix binding Loop: the server examples/dist_echo is measured
# against (gen_server calls of count and reset, any other call echoed, a
# plain {From, T} answered with T, anything else counted). Register it as
# echo and/or counter: register(counter, spawn(fun() -> Loop(0) end)).
ERL_SERVER_LOOP='
  Loop = fun L(C) ->
           receive
             {'"'"'$gen_call'"'"', From, count} -> gen:reply(From, C), L(C);
             {'"'"'$gen_call'"'"', From, reset} -> gen:reply(From, ok), L(0);
             {'"'"'$gen_call'"'"', From, T} -> gen:reply(From, T), L(C);
             {From, T} when is_pid(From) -> From ! T, L(C);
             _ -> L(C + 1)
           end
         end,'

# An -eval prefix binding Oneway(Peer, Node, N): reset {counter, Node}, send
# it N {tick, I}, call count, and print the RESULT line (from=beam to=Peer)
# that distbench_client prints for the same run from herd.
ERL_ONEWAY='
  Oneway = fun(Peer, Node, N) ->
    ok = gen_server:call({counter, Node}, reset, infinity),
    T0 = erlang:monotonic_time(microsecond),
    lists:foreach(fun(I) -> {counter, Node} ! {tick, I} end, lists:seq(1, N)),
    Count = gen_server:call({counter, Node}, count, infinity),
    T1 = erlang:monotonic_time(microsecond),
    io:format("RESULT workload=throughput from=beam to=~s msgs=~p counted=~p ms=~.1f msgs_per_s=~p~n",
              [Peer, N, Count, (T1 - T0) / 1000, round(N * 1000000 / (T1 - T0))])
  end,'
