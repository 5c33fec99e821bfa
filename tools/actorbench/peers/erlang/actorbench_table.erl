%% The Erlang peer of `actorbench table` (tools/actorbench/workload_table.cpp):
%% an ets table pre-filled with K objects {Key, A, B} (three integers), P
%% processes sharing N operations on random keys. Options per mix are the ones
%% that measured best on OTP 25 (--ets-opts overrides: none | rc | wc | auto |
%% rc_auto | rc_wc); bytes_per_entry is ets:info(T, memory) in bytes / K.
-module(actorbench_table).
-export([main/1, worker/7, pg_fanout/1, pg_join/1]).

main(Args) ->
    O = parse(Args, #{procs => 1000, keys => 100000, ops => 10000000, type => set}),
    #{mix := Mix, type := Type, procs := P, keys := K, ops := N} = O,
    Opts = ets_opts(maps:get(ets_opts, O, default(Mix))),
    T = ets:new(actorbench_table, [Type, public | Opts]),
    ets:insert(T, [{I, I, I} || I <- lists:seq(0, K - 1)]),
    Bytes = ets:info(T, memory) * erlang:system_info(wordsize),
    Per = N div P,
    Self = self(),
    T0 = erlang:monotonic_time(),
    [spawn(?MODULE, worker, [Self, T, Mix, K, Per, rand:seed_s(exsss, I), 0]) || I <- lists:seq(1, P)],
    Sum = lists:sum([receive {done, S} -> S end || _ <- lists:seq(1, P)]),
    Us = erlang:convert_time_unit(erlang:monotonic_time() - T0, native, microsecond),
    Ms = Us / 1000,
    io:format("RESULT impl=erlang workload=table mix=~s type=~s procs=~b keys=~b ops=~b wall_ms=~.1f "
              "ops_per_s=~b bytes_per_entry=~.1f workers=~b ets_opts=~s checksum=~b~n",
              [Mix, Type, P, K, Per * P, Ms, round(Per * P / Us * 1000000), Bytes / K,
               erlang:system_info(schedulers_online), opts_name(maps:get(ets_opts, O, default(Mix))), Sum]),
    ok.

default(read90) -> rc_auto;
default(_) -> auto.

ets_opts(none) -> [];
ets_opts(rc) -> [{read_concurrency, true}];
ets_opts(wc) -> [{write_concurrency, true}];
ets_opts(auto) -> [{write_concurrency, auto}];
ets_opts(rc_auto) -> [{read_concurrency, true}, {write_concurrency, auto}];
ets_opts(rc_wc) -> [{read_concurrency, true}, {write_concurrency, true}].
opts_name(A) -> atom_to_list(A).

parse([M | T], O) when not is_map_key(mix, O) ->
    case lists:member(M, ["read90", "write50", "counter", "counter_spread"]) of
        true -> parse(T, O#{mix => list_to_atom(M)});
        false -> throw({usage, "unknown mix " ++ M})
    end;
parse(["--procs", V | T], O) -> parse(T, O#{procs => pos(V)});
parse(["--keys", V | T], O) -> parse(T, O#{keys => pos(V)});
parse(["--ops", V | T], O) -> parse(T, O#{ops => pos(V)});
parse(["--type", "set" | T], O) -> parse(T, O#{type => set});
parse(["--type", "ordered_set" | T], O) -> parse(T, O#{type => ordered_set});
parse(["--workers", V | T], O) ->
    N = pos(V),
    N =< erlang:system_info(schedulers) orelse throw({usage, "--workers exceeds +S schedulers"}),
    erlang:system_flag(schedulers_online, N),
    parse(T, O);
parse(["--ets-opts", V | T], O) ->
    A = list_to_atom(V),
    lists:member(A, [none, rc, wc, auto, rc_auto, rc_wc]) orelse throw({usage, "bad --ets-opts " ++ V}),
    parse(T, O#{ets_opts => A});
parse([], O) when is_map_key(mix, O) -> O;
parse(A, _) -> throw({usage, "bad table arguments: " ++ lists:join(" ", A)}).

pos(S) ->
    case string:to_integer(S) of
        {N, ""} when N > 0 -> N;
        _ -> throw({usage, "not a positive integer: " ++ S})
    end.

worker(Parent, _T, _Mix, _K, 0, _S, Sum) -> Parent ! {done, Sum};
worker(Parent, T, Mix, K, N, S0, Sum) ->
    {R, S} = rand:uniform_s(K * 100, S0),
    Key = (R - 1) rem K,
    Pc = (R - 1) div K,
    Add = case Mix of
              read90 when Pc < 90 -> first(ets:lookup(T, Key));
              write50 when Pc < 50 -> first(ets:lookup(T, Key));
              counter -> ets:update_counter(T, 0, {2, 1}, {0, 0, 0});
              counter_spread -> ets:update_counter(T, Key, {2, 1}, {Key, 0, 0});
              _ -> ets:insert(T, {Key, N, N}), 0
          end,
    worker(Parent, T, Mix, K, N - 1, S, Sum + Add).

first([{_, A, _}]) -> A;
first([]) -> 0.

%% ---- pg_fanout --members M --messages N: the peer of workload_pg.cpp --------
pg_fanout(Args) ->
    O = pg_parse(Args, #{members => 10000, messages => 100}),
    #{members := M, messages := N} = O,
    {ok, _} = pg:start_link(bench_scope),
    Self = self(),
    Pids = [spawn(fun() -> pg_member(Self, N, 0, 0) end) || _ <- lists:seq(1, M)],
    ok = pg:join(bench_scope, bench, Pids),
    T0 = erlang:monotonic_time(),
    pg_send(N, 0),
    Sum = lists:sum([receive {counted, S} -> S end || _ <- lists:seq(1, M)]),
    Us = erlang:convert_time_unit(erlang:monotonic_time() - T0, native, microsecond),
    io:format("RESULT impl=erlang workload=pg_fanout members=~b messages=~b wall_ms=~.1f delivered_per_s=~b "
              "workers=~b checksum=~b~n",
              [M, N, Us / 1000, round(M * N / Us * 1000000), erlang:system_info(schedulers_online), Sum]),
    ok.

%% ---- pg_join --members M: the peer of workload_pg.cpp's pg_join ------------------
%% M processes, spawned and waiting, are told to join; each joins one group
%% itself (pg:join is a call to the scope process, as herd's is a call under
%% the scope's lock). Timed from the first word to join to the last joined.
pg_join(Args) ->
    O = pg_parse(Args, #{members => 100000}),
    #{members := M} = O,
    maps:is_key(messages, O) andalso throw({usage, "pg_join takes no --messages"}),
    {ok, _} = pg:start_link(bench_join_scope),
    Self = self(),
    Pids = [spawn(fun() -> pg_joiner(Self) end) || _ <- lists:seq(1, M)],
    T0 = erlang:monotonic_time(),
    [P ! join_now || P <- Pids],
    [receive joined -> ok end || _ <- Pids],
    Us = erlang:convert_time_unit(erlang:monotonic_time() - T0, native, microsecond),
    M = length(pg:get_members(bench_join_scope, room)),
    io:format("RESULT impl=erlang workload=pg_join members=~b wall_ms=~.1f joins_per_s=~b workers=~b~n",
              [M, Us / 1000, round(M / Us * 1000000), erlang:system_info(schedulers_online)]),
    [P ! leave_now || P <- Pids],
    ok.

pg_joiner(Report) ->
    receive join_now -> ok end,
    ok = pg:join(bench_join_scope, room, self()),
    Report ! joined,
    receive leave_now -> ok end.

pg_send(N, N) -> ok;
pg_send(N, I) ->
    [P ! {tick, I} || P <- pg:get_members(bench_scope, bench)],
    pg_send(N, I + 1).

pg_member(Report, N, N, Sum) -> Report ! {counted, Sum};
pg_member(Report, N, I, Sum) -> receive {tick, T} -> pg_member(Report, N, I + 1, Sum + T) end.

pg_parse(["--members", V | T], O) -> pg_parse(T, O#{members => pos(V)});
pg_parse(["--messages", V | T], O) -> pg_parse(T, O#{messages => pos(V)});
pg_parse(["--workers", V | T], O) ->
    N = pos(V),
    N =< erlang:system_info(schedulers) orelse throw({usage, "--workers exceeds +S schedulers"}),
    erlang:system_flag(schedulers_online, N),
    pg_parse(T, O);
pg_parse([], O) -> O;
pg_parse(A, _) -> throw({usage, "bad pg_fanout arguments: " ++ lists:join(" ", A)}).
