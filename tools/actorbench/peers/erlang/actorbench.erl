%% Erlang/OTP peer of herd's actorbench: plain processes, `!` and `receive`;
%% `call` and `restart` use OTP's gen_server and supervisor (this module is
%% the callback module of both: init/1 tells them apart by its argument).
%%
%% Run (args after -extra; scheduler count comes from +S, --workers may only
%% lower it via schedulers_online):
%%   erl -noshell +S 2:2 +P 2000000 -pa DIR -s actorbench main \
%%       -extra WORKLOAD ARGS... [--hibernate] [--workers N]
-module(actorbench).
-export([main/0]).
%% spawned via MFA so no closure is captured per process
-export([skynet/3, idle/2, idle_wake/1, pong/0, ping/3, ring_node/1,
         ring_first/0, fanin_recv/2, fanin_send/2, fj_child/0, rel_idle/0,
         deferred_caller/3]).
%% gen_server and supervisor callbacks, and the restart workload's child
-export([init/1, handle_call/3, handle_cast/2, restart_child_start/1,
         restart_child/1]).
%% the relations workloads (see workloads_relations.cpp)

main() ->
    try run_any(init:get_plain_arguments()) of
        ok -> halt(0)
    catch
        throw:{usage, Msg} ->
            io:format(standard_error, "actorbench: ~s~n"
                      "usage: skynet N | spawn_idle N [--hibernate] | "
                      "pingpong RTS | pingpong_many PAIRS RTS | "
                      "ring N LAPS | fanin SENDERS MSGS | call CALLS | "
                      "restart RESTARTS | forkjoin_monitor N | links N | "
                      "monitors N | deferred_calls N  [--workers N] | "
                      "table MIX [--procs P] [--keys K] [--ops N] [--type T] [--ets-opts O]~n",
                      [Msg]),
            halt(2)
    end.

%% ---- argument handling ------------------------------------------------------

%% `table` has named options of its own (actorbench_table.erl).
run_any(["table" | Args]) -> actorbench_table:main(Args);
run_any(["pg_fanout" | Args]) -> actorbench_table:pg_fanout(Args);
run_any(["pg_join" | Args]) -> actorbench_table:pg_join(Args);
run_any(Args) -> run(parse(Args)).

parse(Args) -> parse(Args, [], #{hibernate => false}).

parse(["--hibernate" | T], Pos, O) -> parse(T, Pos, O#{hibernate => true});
parse(["--workers", N | T], Pos, O) -> parse(T, Pos, O#{workers => pos_int(N)});
parse(["--workers"], _, _) -> throw({usage, "--workers needs a value"});
parse(["-" ++ _ = F | _], _, _) -> throw({usage, "unknown flag " ++ F});
parse([A | T], Pos, O) -> parse(T, [A | Pos], O);
parse([], Pos, O) -> set_workers(O), {lists:reverse(Pos), O}.

pos_int(S) ->
    case string:to_integer(S) of
        {N, ""} when N > 0 -> N;
        _ -> throw({usage, "not a positive integer: " ++ S})
    end.

set_workers(#{workers := N}) ->
    case N =< erlang:system_info(schedulers) of
        true -> erlang:system_flag(schedulers_online, N);
        false -> throw({usage, "--workers exceeds +S schedulers"})
    end;
set_workers(_) -> ok.

run({["skynet", N], _}) -> skynet(pos_int(N));
run({["spawn_idle", N], #{hibernate := H}}) -> spawn_idle(pos_int(N), H);
run({["pingpong", N], _}) -> pingpong(pos_int(N));
run({["pingpong_many", P, R], _}) -> pingpong_many(pos_int(P), pos_int(R));
run({["ring", N, L], _}) -> ring(pos_int(N), pos_int(L));
run({["fanin", S, M], _}) -> fanin(pos_int(S), pos_int(M));
run({["call", N], _}) -> call(pos_int(N));
run({["restart", N], _}) -> restart(pos_int(N));
run({["forkjoin_monitor", N], _}) -> forkjoin_monitor(pos_int(N));
run({["links", N], _}) -> links(pos_int(N));
run({["monitors", N], _}) -> monitors(pos_int(N));
run({["deferred_calls", N], _}) -> deferred_calls(pos_int(N));
run({Pos, _}) -> throw({usage, "bad workload/arguments: " ++ lists:join(" ", Pos)}).

result(Workload, KVs) ->
    Fields = [io_lib:format(" ~s=~s", [K, fmt(V)]) || {K, V} <- KVs],
    io:format("RESULT impl=erlang workload=~s~s workers=~b~n",
              [Workload, Fields, erlang:system_info(schedulers_online)]).

fmt(V) when is_integer(V) -> integer_to_list(V);
fmt(V) when is_float(V) -> float_to_list(V, [{decimals, 1}]);
fmt(V) when is_atom(V) -> atom_to_list(V).

now_ns() -> erlang:monotonic_time(nanosecond).
ms(T0, T1) -> (T1 - T0) / 1.0e6.
per_s(Count, T0, T1) -> round(Count * 1.0e9 / (T1 - T0)).

%% ---- skynet -----------------------------------------------------------------

skynet(N) ->
    is_pow10(N) orelse throw({usage, "skynet N must be a power of 10"}),
    T0 = now_ns(),
    spawn(?MODULE, skynet, [self(), 0, N]),
    Sum = receive {sum, S} -> S end,
    T1 = now_ns(),
    Sum =:= N * (N - 1) div 2 orelse error({bad_sum, Sum}),
    result(skynet, [{sum, Sum}, {wall_ms, ms(T0, T1)}]).

is_pow10(1) -> true;
is_pow10(N) -> N rem 10 =:= 0 andalso is_pow10(N div 10).

skynet(Parent, Num, 1) -> Parent ! {sum, Num};
skynet(Parent, Num, Size) ->
    Sub = Size div 10,
    [spawn(?MODULE, skynet, [self(), Num + I * Sub, Sub]) || I <- lists:seq(0, 9)],
    Parent ! {sum, collect(10, 0)}.

collect(0, Acc) -> Acc;
collect(K, Acc) -> receive {sum, S} -> collect(K - 1, Acc + S) end.

%% ---- spawn_idle -------------------------------------------------------------
%% "All started" = the coordinator has received one `started` from every child,
%% sent as its last act before blocking. "All exited" = one `exited` from every
%% child, sent as its last act before returning.

spawn_idle(N, Hibernate) ->
    Rss0 = rss_bytes(),
    T0 = now_ns(),
    Pids = spawn_n(N, [self(), Hibernate], []),
    await(started, N),
    T1 = now_ns(),
    Rss1 = rss_bytes(),
    T2 = now_ns(),
    [P ! stop || P <- Pids],
    await(exited, N),
    T3 = now_ns(),
    result(spawn_idle, [{hibernate, case Hibernate of true -> yes; false -> no end},
                        {spawn_all_started_ms, ms(T0, T1)},
                        {bytes_per_actor, (Rss1 - Rss0) div N},
                        {stop_all_exited_ms, ms(T2, T3)}]).

spawn_n(0, _, Acc) -> Acc;
spawn_n(K, Args, Acc) -> spawn_n(K - 1, Args, [spawn(?MODULE, idle, Args) | Acc]).

await(_, 0) -> ok;
await(Tag, K) -> receive Tag -> await(Tag, K - 1) end.

idle(Coord, false) ->
    Coord ! started,
    idle_wake(Coord);
idle(Coord, true) ->
    Coord ! started,
    erlang:hibernate(?MODULE, idle_wake, [Coord]).

idle_wake(Coord) -> receive stop -> Coord ! exited end.

%% RSS of the whole OS process (the VM), not just the Erlang heaps.
rss_bytes() ->
    {ok, B} = file:read_file("/proc/" ++ os:getpid() ++ "/status"),
    [_, Rest] = binary:split(B, <<"VmRSS:">>),
    [Kb | _] = string:lexemes(binary_to_list(Rest), " \t\n"),
    list_to_integer(Kb) * 1024.

%% Minor page faults of the whole OS process so far (/proc/self/stat field 10).
minflt() ->
    {ok, B} = file:read_file("/proc/" ++ os:getpid() ++ "/stat"),
    [_, Rest] = binary:split(B, <<") ">>),
    list_to_integer(lists:nth(8, string:lexemes(binary_to_list(Rest), " "))).

%% ---- pingpong / pingpong_many -------------------------------------------------

pingpong(Rts) ->
    T0 = now_ns(),
    start_pair(Rts),
    await(done, 1),
    T1 = now_ns(),
    result(pingpong, [{ns_per_rt, (T1 - T0) / Rts}]).

pingpong_many(Pairs, Rts) ->
    T0 = now_ns(),
    [start_pair(Rts) || _ <- lists:seq(1, Pairs)],
    await(done, Pairs),
    T1 = now_ns(),
    result(pingpong_many, [{wall_ms, ms(T0, T1)},
                           {msgs_per_s, per_s(Pairs * Rts * 2, T0, T1)}]).

start_pair(Rts) ->
    Pong = spawn(?MODULE, pong, []),
    spawn(?MODULE, ping, [self(), Pong, Rts]).

ping(Coord, Pong, 0) -> Pong ! stop, Coord ! done;
ping(Coord, Pong, K) ->
    Pong ! {self(), K},
    receive K -> ping(Coord, Pong, K - 1) end.

pong() ->
    receive
        {From, K} -> From ! K, pong();
        stop -> ok
    end.

%% ---- ring -------------------------------------------------------------------
%% Node i forwards to node i-1; the first node learns the last one's pid.

ring(N, Laps) ->
    T0 = now_ns(),
    First = spawn(?MODULE, ring_first, []),
    Last = spawn_ring(N - 1, First),
    First ! {next, Last},
    T1 = now_ns(),
    Hops = N * Laps,
    First ! {token, self(), Hops},
    await(token_done, 1),
    T2 = now_ns(),
    First ! stop,
    result(ring, [{spawn_ms, ms(T0, T1)}, {hops_per_s, per_s(Hops, T1, T2)}]).

spawn_ring(0, Prev) -> Prev;
spawn_ring(K, Prev) -> spawn_ring(K - 1, spawn(?MODULE, ring_node, [Prev])).

ring_first() -> receive {next, Next} -> ring_node(Next) end.

ring_node(Next) ->
    receive
        {token, Coord, 0} -> Coord ! token_done, ring_node(Next);
        {token, Coord, K} -> Next ! {token, Coord, K - 1}, ring_node(Next);
        stop -> Next ! stop  % travels once round; a dead Next drops it
    end.

%% ---- fanin ------------------------------------------------------------------

fanin(Senders, Msgs) ->
    T0 = now_ns(),
    Recv = spawn(?MODULE, fanin_recv, [self(), Senders * Msgs]),
    [spawn(?MODULE, fanin_send, [Recv, Msgs]) || _ <- lists:seq(1, Senders)],
    await(fanin_done, 1),
    T1 = now_ns(),
    result(fanin, [{wall_ms, ms(T0, T1)},
                   {msgs_per_s, per_s(Senders * Msgs, T0, T1)},
                   {cross_core_pct, na}]).

fanin_recv(Coord, 0) -> Coord ! fanin_done;
fanin_recv(Coord, K) -> receive {msg, _} -> fanin_recv(Coord, K - 1) end.

fanin_send(_, 0) -> ok;
fanin_send(Recv, K) -> Recv ! {msg, K}, fanin_send(Recv, K - 1).

%% ---- call -------------------------------------------------------------------
%% Round trips of gen_server:call (default 5 s timeout, as herd's) to a
%% gen_server that replies with the request.

call(N) ->
    {ok, S} = gen_server:start(?MODULE, echo, []),
    T0 = now_ns(),
    Sum = call_loop(S, 0, N, 0),
    T1 = now_ns(),
    ok = gen_server:stop(S),
    Sum =:= N * (N - 1) div 2 orelse error({bad_sum, Sum}),
    result(call, [{calls, N}, {ns_per_call, (T1 - T0) / N}]).

call_loop(_, N, N, Acc) -> Acc;
call_loop(S, I, N, Acc) -> call_loop(S, I + 1, N, Acc + gen_server:call(S, I)).

init(echo) -> {ok, nostate};
init({deferred, N, Coord}) -> {ok, {deferred, N, Coord, []}};  % Left, Coord, Froms
init({restart_sup, Coord}) ->
    %% one_for_one, intensity 100,010 restarts within 1 s: never reached here
    {ok, {#{strategy => one_for_one, intensity => 100010, period => 1},
          [#{id => child, start => {?MODULE, restart_child_start, [Coord]},
             restart => permanent, shutdown => brutal_kill, type => worker}]}}.

handle_call({dreq, _}, From, {deferred, 1, Coord, Waiting}) ->
    Coord ! collected,
    [gen_server:reply(W, ok) || W <- [From | Waiting]],
    {noreply, {deferred, 0, Coord, []}};
handle_call({dreq, _}, From, {deferred, Left, Coord, Waiting}) ->
    {noreply, {deferred, Left - 1, Coord, [From | Waiting]}};
handle_call(Req, _From, St) -> {reply, Req, St}.
handle_cast(_Msg, St) -> {noreply, St}.

%% ---- restart ----------------------------------------------------------------
%% A real OTP supervisor restarts its one permanent child, which tells the
%% benchmark it started and crashes when told to. Per restart: the time from
%% the crash order to the new child's `started`. Logging is off (no crash or
%% supervisor reports), so BEAM is measured at its best.

restart(N) ->
    logger:set_primary_config(level, none),
    {ok, Sup} = supervisor:start_link(?MODULE, {restart_sup, self()}),
    First = receive {started, P} -> P end,
    Lat = restart_loop(N, First, []),
    unlink(Sup),
    exit(Sup, shutdown),
    Sorted = list_to_tuple(lists:sort(Lat)),
    result(restart, [{restarts, N},
                     {p50_us, pct(Sorted, 0.50)},
                     {p99_us, pct(Sorted, 0.99)}]).

restart_loop(0, _, Acc) -> Acc;
restart_loop(K, Child, Acc) ->
    T0 = now_ns(),
    Child ! crash,
    receive {started, New} ->
        T1 = now_ns(),
        restart_loop(K - 1, New, [(T1 - T0) / 1000.0 | Acc])
    end.

%% Nearest rank: the ceil(P * N)-th smallest (1-based), as herd's.
pct(Sorted, P) ->
    N = tuple_size(Sorted),
    element(max(1, min(N, ceil(P * N))), Sorted).

restart_child_start(Coord) -> {ok, spawn_link(?MODULE, restart_child, [Coord])}.

restart_child(Coord) ->
    Coord ! {started, self()},
    receive crash -> exit(crash) end.

%% ---- forkjoin_monitor / links / monitors / deferred_calls -------------------
%% The same shapes as herd's workloads_relations.cpp.

forkjoin_monitor(N) ->
    T0 = now_ns(),
    fj_spawn(N),
    N = fj_collect(N, 0),
    T1 = now_ns(),
    result(forkjoin_monitor, [{n, N}, {wall_ms, ms(T0, T1)}]).

fj_spawn(0) -> ok;
fj_spawn(K) -> spawn_monitor(?MODULE, fj_child, []), fj_spawn(K - 1).

fj_child() -> ok.

fj_collect(0, Normal) -> Normal;
fj_collect(K, Normal) ->
    receive {'DOWN', _, process, _, R} -> fj_collect(K - 1, Normal + is_normal(R)) end.

is_normal(normal) -> 1;
is_normal(_) -> 0.

rel_idle() -> receive stop -> ok end.

links(N) ->
    process_flag(trap_exit, true),
    T0 = now_ns(),
    Kids = list_to_tuple([spawn_link(?MODULE, rel_idle, []) || _ <- lists:seq(1, N)]),
    T1 = now_ns(),
    relink(Kids, 2, N),
    T2 = now_ns(),
    [element(I, Kids) ! stop || I <- lists:seq(1, N)],
    N = collect_exits(N, 0),
    T3 = now_ns(),
    process_flag(trap_exit, false),
    result(links, [{n, N}, {link_ms, ms(T0, T1)}, {relink_ms, ms(T1, T2)},
                   {exits_ms, ms(T2, T3)}, {wall_ms, ms(T0, T3)}]).

%% every second one (herd's odd 0-based indexes = even 1-based ones)
relink(_, I, N) when I > N -> ok;
relink(Kids, I, N) ->
    P = element(I, Kids),
    unlink(P),
    link(P),
    relink(Kids, I + 2, N).

collect_exits(0, Normal) -> Normal;
collect_exits(K, Normal) ->
    receive {'EXIT', _, R} -> collect_exits(K - 1, Normal + is_normal(R)) end.

monitors(N) ->
    Ts = now_ns(),
    Kids = [spawn(?MODULE, rel_idle, []) || _ <- lists:seq(1, N)],
    T0 = now_ns(),
    Refs0 = [monitor(process, P) || P <- Kids],
    T1 = now_ns(),
    _Refs = remonitor(Kids, Refs0, 0, []),
    T2 = now_ns(),
    unrelated(10000),
    T3 = now_ns(),
    [P ! stop || P <- Kids],
    N = fj_collect(N, 0),
    T4 = now_ns(),
    result(monitors, [{n, N}, {spawn_ms, ms(Ts, T0)}, {monitor_ms, ms(T0, T1)},
                      {remonitor_ms, ms(T1, T2)}, {unrelated_10k_ms, ms(T2, T3)},
                      {downs_ms, ms(T3, T4)}, {wall_ms, ms(T0, T4)}]).

%% every second one (odd 0-based indexes, as herd's)
remonitor([], [], _, Acc) -> lists:reverse(Acc);
remonitor([P | Ps], [R | Rs], I, Acc) when I rem 2 =:= 1 ->
    demonitor(R),
    remonitor(Ps, Rs, I + 1, [monitor(process, P) | Acc]);
remonitor([_ | Ps], [R | Rs], I, Acc) -> remonitor(Ps, Rs, I + 1, [R | Acc]).

unrelated(0) -> ok;
unrelated(K) ->
    {_, Ref} = spawn_monitor(?MODULE, fj_child, []),
    receive {'DOWN', Ref, process, _, _} -> unrelated(K - 1) end.

%% The server keeps every From until it has N, then answers all (gen_server's
%% noreply + gen_server:reply).
deferred_calls(N) ->
    {ok, S} = gen_server:start(?MODULE, {deferred, N, self()}, []),
    Rss0 = rss_bytes(),
    Flt0 = minflt(),
    T0 = now_ns(),
    [spawn(?MODULE, deferred_caller, [S, self(), I]) || I <- lists:seq(1, N)],
    receive collected -> ok end,
    Flt1 = minflt(),
    Rss1 = rss_bytes(),
    T1 = now_ns(),
    await(done, N),
    T2 = now_ns(),
    ok = gen_server:stop(S),
    result(deferred_calls, [{n, N}, {replies_ms, ms(T1, T2)}, {wall_ms, ms(T0, T2)},
                            {minflt_per_caller, (Flt1 - Flt0) / N},
                            {bytes_per_caller, (Rss1 - Rss0) div N}]).

deferred_caller(S, Coord, I) ->
    ok = gen_server:call(S, {dreq, I}, infinity),
    Coord ! done.
