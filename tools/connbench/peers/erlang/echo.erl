%% echo: the Erlang/OTP peer for connbench.
%%
%%   erlc -o DIR echo.erl
%%   erl -noshell +S N -pa DIR -s echo main -extra --port P    (P = 0: any free port)
%%
%% A gen_tcp listener on 127.0.0.1 (binary, nodelay, backlog 1024) with 10
%% acceptor processes; each accepted socket gets its own process that echoes
%% in {active, once} mode, the usual flow-controlled OTP pattern.
%% main/0 returns at once: -s runs it inside init, and init must stay free to
%% handle SIGTERM (init:stop/0, exit status 0).
-module(echo).
-export([main/0]).

-define(ACCEPTORS, 10).

main() ->
    Port = parse(init:get_plain_arguments(), 0),
    Parent = self(),
    spawn(fun() -> listener(Parent, Port) end),
    receive
        {listening, _} -> ok;
        {failed, Reason} ->
            io:format(standard_error, "listen failed: ~p~n", [Reason]),
            halt(1)
    end.

parse(["--port", P | Rest], _) -> parse(Rest, list_to_integer(P));
parse([], Port) -> Port;
parse(Other, _) ->
    io:format(standard_error, "usage: echo --port P (got ~p)~n", [Other]),
    halt(2).

%% Owns the listening socket (it closes when its owner dies), so it never exits.
listener(Parent, Port) ->
    Opts = [binary, {packet, raw}, {active, false}, {reuseaddr, true},
            {nodelay, true}, {backlog, 1024}, {ip, {127, 0, 0, 1}}],
    case gen_tcp:listen(Port, Opts) of
        {ok, L} ->
            {ok, Real} = inet:port(L),
            [spawn_link(fun() -> acceptor(L) end) || _ <- lists:seq(1, ?ACCEPTORS)],
            io:format("listening on 127.0.0.1:~b~n", [Real]),
            Parent ! {listening, Real},
            receive never -> ok end;
        {error, Reason} ->
            Parent ! {failed, Reason}
    end.

acceptor(L) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            Pid = spawn(fun() -> receive {go, Sock} -> loop(Sock) end end),
            case gen_tcp:controlling_process(S, Pid) of
                ok -> Pid ! {go, S};
                _ -> gen_tcp:close(S), exit(Pid, kill)
            end;
        {error, emfile} -> timer:sleep(10);
        {error, _} -> ok
    end,
    acceptor(L).

loop(S) ->
    case inet:setopts(S, [{active, once}]) of
        ok -> wait(S);
        {error, _} -> gen_tcp:close(S)
    end.

wait(S) ->
    receive
        {tcp, S, Data} ->
            case gen_tcp:send(S, Data) of
                ok -> loop(S);
                {error, _} -> gen_tcp:close(S)
            end;
        {tcp_closed, S} -> ok;
        {tcp_error, S, _} -> gen_tcp:close(S)
    end.
