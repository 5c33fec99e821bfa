#!/usr/bin/env python3
"""Every herd-observer command against the fake node: the table shows the
node's values, --json is the result object on one line, and the request the
node received is the one the command line asked for.

    commands_test.py HERD_OBSERVER
"""
import re
import sys

from support import FakeNode, expect, expect_ok, one_json_line, run_checks, run_cli


def rows(text):
    """Table rows split on runs of 2+ spaces (cells never contain two)."""
    return [re.split(r"\s{2,}", l.strip()) for l in text.splitlines() if l.strip()]


def row_of(text, first_cell):
    for r in rows(text):
        if r[0] == first_cell:
            return r
    raise AssertionError("no row starting with %r in:\n%s" % (first_cell, text))


def overview_table_and_json(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "overview")
        expect_ok(r, "overview")
        out = r.stdout
        expect(re.search(r"^node\s+os pid 4242, up [0-9.]+ s, herd 0\.1\.0, 2 workers$", out, re.M), "node line", out)
        expect(re.search(r"^actors\s+9$", out, re.M), "actors line", out)
        expect(re.search(r"^memory\s+rss 39 MiB, mimalloc 8\.6 MiB committed / 64 MiB at peak$", out, re.M),
               "memory line", out)
        expect(re.search(r"^stacks\s+9 in use, 64 carved$", out, re.M), "stacks line", out)
        expect(re.search(r"^rates\s+120k messages/s, 240k switches/s, 0 spawns/s$", out, re.M), "rates line", out)
        expect(row_of(out, "WORKER")[1:] == ["UTIL", "RUN QUEUE", "STEALS", "PARKS", "SWITCHES", "TIMERS",
                                             "SENDS BATCHED", "FLUSHES"],
               "worker header", out)
        expect(row_of(out, "0") == ["0", "93%", "4", "10", "77", "1000000", "3", "1280", "41"], "worker 0 row", out)
        # Worker 1's entry has no send counters, as from a node older than
        # them: a dash, not an error.
        expect(row_of(out, "1") == ["1", "12%", "0", "2", "901", "250000", "0", "-", "-"], "worker 1 row", out)
        expect(row_of(out, "<7.0>") == ["<7.0>", "25 ms", "1.2 s"], "long-running row", out)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "overview", "--json"), "overview --json")
        expect(j["actors"] == 9 and j["node"]["os_pid"] == 4242, "overview --json values", j)
        expect([w["utilization"] for w in j["workers"]] == [0.93, 0.12], "utilizations", j)
        expect(list(j.keys())[:2] == ["node", "actors"], "--json keeps the node's field order", j)
        expect(node.requests()[0]["req"] == "overview" and node.requests()[0]["v"] == 1, "request", node.requests())


def processes_sorted_limited_filtered(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "processes")
        expect_ok(r, "processes")
        expect(r.stdout.splitlines()[0] == "9 processes, 9 matched, 9 shown", "summary line", r.stdout)
        table = r.stdout.split("\n\n", 1)[1]
        expect(rows(table)[0] == ["PID", "NAME OR INITIAL CALL", "KIND", "STATUS", "MAILBOX", "REDUCTIONS", "MEMORY", "AGE"], "header", table)
        expect([x[0] for x in rows(table)[1:]] ==
               ["<7.0>", "<3.0>", "<4.0>", "<9.0>", "<6.0>", "<1.0>", "<5.0>", "<2.0>", "<8.1>"],
               "default order: reductions, descending", table)
        expect(row_of(table, "<6.0>") == ["<6.0>", "flooded_logger", "worker", "runnable", "25000", "40000", "2.3 MiB", "5m00s"],
               "flooded_logger row", table)
        expect(row_of(table, "<8.1>") == ["<8.1>", "herd::net connection", "connection", "hibernated", "0", "1500",
                                          "1.2 KiB", "5.0 s"],
               "an unnamed process shows its initial call and kind", table)
        expect(node.requests()[-1] == {"req": "processes", "v": 1, "id": 1}, "defaults are the node's",
               node.requests()[-1])

        j = one_json_line(run_cli(cli, "--socket", node.socket, "processes", "--sort", "mailbox", "--limit", "2",
                                  "--json"), "processes --sort mailbox --limit 2 --json")
        expect([p["pid"] for p in j["processes"]] == ["<6.0>", "<9.0>"], "mailbox order, limited to 2", j)
        expect(j["total"] == 9 and j["matched"] == 9, "total/matched", j)
        last = node.requests()[-1]
        expect(last["sort"] == "mailbox" and last["limit"] == 2, "request fields", last)

        r = run_cli(cli, "--socket", node.socket, "processes", "--name", "acceptor_", "--status", "waiting",
                    "--sort=age")
        expect_ok(r, "processes --name --status")
        expect([x[0] for x in rows(r.stdout.split("\n\n", 1)[1])[1:]] == ["<3.0>", "<4.0>"],
               "filtered to the two acceptors, oldest first", r.stdout)
        last = node.requests()[-1]
        expect(last["name"] == "acceptor_" and last["status"] == "waiting" and last["sort"] == "age", "filters", last)

        r = run_cli(cli, "--socket", node.socket, "processes", "--name", "nobody_has_this")
        expect_ok(r, "processes matching nothing")
        expect(r.stdout == "9 processes, 0 matched, 0 shown\n", "an empty match prints no table", r.stdout)


def process_detail(cli):
    with FakeNode() as node:
        for arg in ("9.0", "<9.0>"):
            r = run_cli(cli, "--socket", node.socket, "process", arg)
            expect_ok(r, "process " + arg)
            kv = {m.group(1): m.group(2) for m in re.finditer(r"^(\w[\w ]*?)\s{2,}(.*)$", r.stdout, re.M)}
            expect(kv["pid"] == "<9.0>" and kv["name"] == "big_cache" and kv["status"] == "waiting", "identity", kv)
            expect(kv["mailbox"] == "3 messages, 192 B", "mailbox", kv)
            expect(kv["memory"] == "8.1 MiB (stack: 4.0 KiB touched of 64 KiB)", "memory", kv)
            expect(kv["module"] == "hot_swap_handler v1", "module", kv)
            expect(kv["links"] == "<1.0>" and kv["monitors"] == "-" and kv["monitored by"] == "<6.0>", "relations", kv)
            expect(kv["supervisor"] == "<1.0>" and kv["trap_exit"] == "false" and kv["last ran"] == "12 ms ago",
                   "supervisor/trap_exit/last ran", kv)
            expect(node.requests()[-1]["pid"] == "<9.0>", "the pid is sent as <i.g>", node.requests()[-1])
        j = one_json_line(run_cli(cli, "--socket", node.socket, "process", "6.0", "--json"), "process --json")
        expect(j["pid"] == "<6.0>" and j["monitors"] == ["<9.0>"] and j["module"] is None, "process --json", j)
        r = run_cli(cli, "--socket", node.socket, "process", "99.0")
        expect(r.returncode == 1 and r.stderr == "herd-observer: the node answered noproc: no live process <99.0>\n",
               "an unknown pid: the node's error, exit 1", r.returncode, r.stderr)


def tree_listeners_modules(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "tree")
        expect_ok(r, "tree")
        expect(r.stdout == "echo_server_sup <1.0>  supervisor one_for_one, at most 5 restarts in 10.0 s\n"
                           "|-- acceptors <2.0>  supervisor one_for_one, permanent\n"
                           "|   |-- acceptor_1 <3.0>  worker, permanent\n"
                           "|   `-- acceptor_2 <4.0>  worker, permanent\n"
                           "`-- conns <5.0>  supervisor simple_one_for_one, permanent\n"
                           "    |-- <8.1>  worker, temporary\n"
                           "    `-- ... 1500 more\n"
                           "web <20.0>  supervisor rest_for_one, at most 10 restarts in 10.0 s\n"
                           "`-- conns_sup <21.0>  worker, permanent, 3 connections\n"
                           "    |-- <30.0>  connection 127.0.0.1:40001 established, send queue 0 B, receive queue 5 B\n"
                           "    |-- <30.1>  connection 127.0.0.1:40002 close_wait, send queue 2.0 KiB, receive queue 0 B\n"
                           "    `-- ... 1 more connections\n", "the tree", r.stdout)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "tree", "--json"), "tree --json")
        expect(j["roots"][0]["children"][1]["more"] == 1500, "tree --json", j)
        cs = j["roots"][1]["children"][0]
        expect(cs["connections_total"] == 3 and cs["truncated"] and len(cs["connections"]) == 2, "tree --json", cs)

        r = run_cli(cli, "--socket", node.socket, "listeners")
        expect_ok(r, "listeners")
        expect(rows(r.stdout)[0] == ["NAME", "ADDRESS", "CONNS", "MAX", "ACCEPTORS", "ACCEPTS", "REFUSALS", "DROPS", "STATE",
                                     "SUPERVISOR"], "listeners header", r.stdout)
        expect(row_of(r.stdout, "echo_server") ==
               ["echo_server", "0.0.0.0:5555", "1", "infinity", "2", "1234", "3", "17", "accepting", "<1.0>"],
               "echo_server row", r.stdout)
        expect(row_of(r.stdout, "chat_server") ==
               ["chat_server", "127.0.0.1:6000", "0", "100", "1", "0", "0", "-", "suspended", "-"],
               "chat_server row", r.stdout)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "listeners", "--json"), "listeners --json")
        expect(j["listeners"][0]["accepts"] == 1234, "listeners --json", j)

        r = run_cli(cli, "--socket", node.socket, "modules")
        expect_ok(r, "modules")
        expect(row_of(r.stdout, "hot_swap_handler") ==
               ["hot_swap_handler", "v2", "10", "v1", "990", "/srv/modules/handler_v2.so"], "module row", r.stdout)
        expect(row_of(r.stdout, "stats_handler") == ["stats_handler", "v1", "1", "-", "-", "/srv/modules/stats_v1.so"],
               "module without an old version", r.stdout)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "modules", "--json"), "modules --json")
        expect(j["modules"][1]["old"] is None, "modules --json", j)

        r = run_cli(cli, "--socket", node.socket, "tables")
        expect_ok(r, "tables")
        expect(rows(r.stdout)[0][:8] == ["ID", "NAME", "TYPE", "PROTECTION", "OWNER", "HEIR", "SIZE", "MEMORY"],
               "tables header", r.stdout)
        expect(row_of(r.stdout, "3")[:8] == ["3", "sessions", "set", "public", "<7.0>", "-", "100000", "4.2 MiB"],
               "sessions row (memory in MiB)", r.stdout)
        expect("\x1b" not in r.stdout, "a type name's escape is not passed to the terminal", r.stdout)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "tables", "--json"), "tables --json")
        expect(j["tables"][1]["heir"] == "<9.0>", "tables --json", j)


def nodes_view(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "nodes")
        expect_ok(r, "nodes")
        lines = r.stdout.splitlines()
        expect(lines[0] == "this node: gw@vm", "nodes: this node first", r.stdout)
        expect(rows("\n".join(lines[1:]))[0] == ["NODE", "STATE", "IN", "OUT", "MSGS IN", "MSGS OUT", "QUEUED",
                                                 "LAST HEARD", "TICKS MISSED"], "nodes header", r.stdout)
        expect(row_of(r.stdout, "beam@vm") ==
               ["beam@vm", "up", "47 KiB", "3.0 MiB", "412", "20031", "2.0 KiB / 7 msgs", "812 ms ago", "0"],
               "beam@vm row", r.stdout)
        expect(row_of(r.stdout, "gw2@vm")[1] == "connecting" and "-" in row_of(r.stdout, "gw2@vm"),
               "a connection in its handshake", r.stdout)
        j = one_json_line(run_cli(cli, "--socket", node.socket, "nodes", "gw2@vm", "--json"), "nodes NODE --json")
        expect(len(j["nodes"]) == 1 and j["nodes"][0]["up"] is False, "nodes NODE --json", j)
        expect(node.requests()[-1]["node"] == "gw2@vm", "nodes NODE sends the node", node.requests()[-1])
        r = run_cli(cli, "--socket", node.socket, "nodes", "nobody@x")
        expect(r.returncode == 1 and "not_found" in r.stderr, "an unknown node: exit 1", r.stderr)


def kill_load_set_max(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "kill", "8.1")
        expect_ok(r, "kill")
        expect(r.stdout == "killed <8.1> (reason: kill): it exited (killed) after 3 ms\n", "kill output", r.stdout)
        expect(node.requests()[-1] == {"req": "kill", "pid": "<8.1>", "v": 1, "id": 1}, "kill request: no reason "
               "field, the node's default", node.requests()[-1])
        j = one_json_line(run_cli(cli, "--socket", node.socket, "kill", "<6.0>", "shutdown", "--json"), "kill --json")
        expect(j["pid"] == "<6.0>" and j["reason"] == "shutdown" and j["outcome"] == "exited", "kill --json", j)
        expect(node.requests()[-1]["reason"] == "shutdown", "kill reason sent", node.requests()[-1])
        r = run_cli(cli, "--socket", node.socket, "processes", "--json")
        expect({"<8.1>", "<6.0>"}.isdisjoint(p["pid"] for p in one_json_line(r, "processes")["processes"]),
               "killed processes are gone", r.stdout)
        r = run_cli(cli, "--socket", node.socket, "kill", "6.0")
        expect(r.returncode == 1 and "noproc" in r.stderr, "killing a dead pid: exit 1, noproc", r.stderr)

        r = run_cli(cli, "--socket", node.socket, "load", "/srv/modules/handler_v3.so")
        expect_ok(r, "load")
        expect(r.stdout == "loaded hot_swap_handler v3\n", "load output", r.stdout)
        expect(node.requests()[-1]["path"] == "/srv/modules/handler_v3.so", "load path", node.requests()[-1])
        expect("purge" not in node.requests()[-1], "load: no purge field, the node's default", node.requests()[-1])
        r = run_cli(cli, "--socket", node.socket, "load", "/srv/modules/handler_v3.so", "--purge", "kill")
        expect_ok(r, "load --purge kill")
        expect(node.requests()[-1]["purge"] == "kill", "load --purge kill sends purge", node.requests()[-1])
        r = run_cli(cli, "--socket", node.socket, "load", "/srv/modules/missing.so")
        expect(r.returncode == 1 and r.stderr.startswith("herd-observer: the node answered failed: /srv/modules/"
                                                         "missing.so: cannot open shared object file"),
               "a failed load: the loader's message, exit 1", r.returncode, r.stderr)

        r = run_cli(cli, "--socket", node.socket, "set_max_connections", "chat_server", "50")
        expect_ok(r, "set_max_connections")
        expect(r.stdout == "chat_server: max_connections 50\n", "set_max_connections output", r.stdout)
        expect(node.requests()[-1]["max"] == 50, "max sent as a number", node.requests()[-1])
        j = one_json_line(run_cli(cli, "--socket", node.socket, "set_max_connections", "chat_server", "infinity",
                                  "--json"), "set_max_connections --json")
        expect(j == {"listener": "chat_server", "max_connections": "infinity"}, "infinity", j)
        r = run_cli(cli, "--socket", node.socket, "set_max_connections", "nope", "5")
        expect(r.returncode == 1 and "not_found" in r.stderr, "an unknown listener: exit 1, not_found", r.stderr)


def trace_streams_until_done(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "trace", "6.0", "--limit", "2")
        expect_ok(r, "trace")
        expect(r.stdout == "tracing <6.0> (at most 2 events)\n"
                           "     5021 ms  message echo::ping  64 B\n"
                           "     5022 ms  signal  exit  from <3.0>  reason shutdown\n"
                           "done: 2 events (limit)\n", "trace output", r.stdout)
        last = node.requests()[-1]
        expect(last["req"] == "trace" and last["pid"] == "<6.0>" and last["limit"] == 2, "trace request", last)
        r = run_cli(cli, "--socket", node.socket, "trace", "3.0", "--json", "--timeout-ms", "2000")
        expect_ok(r, "trace --json")
        lines = [__import__("json").loads(l) for l in r.stdout.splitlines()]
        expect(lines[0] == {"tracing": "<3.0>", "limit": 100}, "first line: the result", lines)
        expect([l["event"]["type"] for l in lines[1:4]] == ["echo::ping", "exit", "echo::pong"], "events", lines)
        expect(lines[4] == {"done": {"events": 3, "why": "exited"}} and len(lines) == 5, "done line last", lines)
        expect(node.requests()[-1]["timeout_ms"] == 2000, "timeout_ms sent", node.requests()[-1])
        r = run_cli(cli, "--socket", node.socket, "trace", "42.0")
        expect(r.returncode == 1 and "noproc" in r.stderr, "tracing a dead pid: exit 1", r.stderr)


if __name__ == "__main__":
    run_checks([overview_table_and_json, processes_sorted_limited_filtered, process_detail, tree_listeners_modules,
                kill_load_set_max, trace_streams_until_done, nodes_view], sys.argv[1])
