#!/usr/bin/env python3
"""herd-observer against a real node: examples/echo_server --observer PATH,
with TCP connections opened by this test, so the figures are known.

    live_node_test.py HERD_OBSERVER ECHO_SERVER

Exit 77 (skipped) when this echo_server does not take --observer yet.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile

from support import SKIP, Skipped, expect, expect_ok, one_json_line, run_checks, run_cli, wait_for

PID_RE = re.compile(r"^<\d+\.\d+>$")


class EchoNode:
    def __init__(self, echo, d):
        self.dir = d
        self.socket = os.path.join(d, "node.sock")
        self.p = subprocess.Popen([echo, "--port", "0", "--bind", "127.0.0.1", "--workers", "2",
                                   "--observer", self.socket], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening on "):
            err = self.stop_and_read_stderr()
            if self.p.returncode == 2 and "--observer" in err:
                print("SKIP: this echo_server does not take --observer yet: " + err.strip().splitlines()[0])
                sys.exit(SKIP)
            raise AssertionError("echo_server did not start: %r, stderr: %s" % (line, err))
        self.port = int(line.strip().rsplit(":", 1)[1])
        expect(wait_for(lambda: os.path.exists(self.socket), 5), "the observer socket appears at " + self.socket)

    def stop_and_read_stderr(self):
        if self.p.poll() is None:
            self.p.kill()
        _, err = self.p.communicate(timeout=10)
        return err

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"ping")
    got = b""
    while len(got) < 4:
        chunk = s.recv(4 - len(got))
        expect(chunk, "the echo connection answers")
        got += chunk
    expect(got == b"ping", "echoed", got)
    return s


def echo_listener(cli, node):
    r = run_cli(cli, "--socket", node.socket, "listeners", "--json")
    ls = [l for l in one_json_line(r, "listeners --json")["listeners"] if l["name"] == "echo_server"]
    expect(len(ls) == 1, "one listener named echo_server", r.stdout)
    return ls[0]


def figures_of_a_live_echo_server(cli, echo):
    with tempfile.TemporaryDirectory(prefix="herd-observer-live-") as d:
        os.chmod(d, 0o700)
        node = EchoNode(echo, d)
        conns = []
        try:
            conns = [connect(node.port) for _ in range(5)]
            expect(wait_for(lambda: echo_listener(cli, node)["connections"] == 5, 5),
                   "listeners counts the 5 open connections", echo_listener(cli, node))
            l = echo_listener(cli, node)
            expect(l["address"].endswith(":%d" % node.port), "the listener's address has its port", l)
            expect(l["max_connections"] == "infinity" and l["acceptors"] == 10 and l["accepts"] >= 5,
                   "the example's defaults (infinity, 10 acceptors) and at least 5 accepts", l)
            r = run_cli(cli, "--socket", node.socket, "listeners")
            expect_ok(r, "listeners")
            row = [x for x in r.stdout.splitlines() if x.startswith("echo_server ")]
            expect(len(row) == 1 and re.split(r"\s{2,}", row[0])[2] == "5", "the table's CONNS column is 5",
                   r.stdout)

            # tree: one line per connection under conns_sup, with the client's own address as its peer.
            mine = {"127.0.0.1:%d" % c.getsockname()[1] for c in conns}

            def tree_peers():
                r = run_cli(cli, "--socket", node.socket, "tree")
                expect_ok(r, "tree")
                return set(re.findall(r"connection (127\.0\.0\.1:\d+) established", r.stdout)), r.stdout
            expect(wait_for(lambda: tree_peers()[0] == mine, 5), "tree lists the 5 connections by peer",
                   mine, tree_peers()[1])
            expect("conns_sup " in tree_peers()[1] and ", 5 connections" in tree_peers()[1],
                   "conns_sup's line counts them", tree_peers()[1])

            ov = one_json_line(run_cli(cli, "--socket", node.socket, "overview", "--json"), "overview --json")
            expect(ov["node"]["os_pid"] == node.p.pid, "os_pid is the server's", ov["node"], node.p.pid)
            expect(ov["node"]["workers"] == 2 and len(ov["workers"]) == 2, "the 2 workers asked for", ov)
            expect(isinstance(ov["actors"], int) and ov["actors"] >= 5 + 10,
                   "at least 5 connections + 10 acceptors alive", ov["actors"])
            expect(all(0 <= w["utilization"] <= 1 for w in ov["workers"]), "utilization in 0..1", ov["workers"])
            expect(ov["memory"]["rss_bytes"] > 1 << 20, "an RSS above 1 MiB", ov["memory"])
            r = run_cli(cli, "--socket", node.socket, "overview")
            expect_ok(r, "overview")
            expect(re.search(r"^node\s+os pid %d, " % node.p.pid, r.stdout, re.M), "overview table: os pid",
                   r.stdout)
            expect(re.search(r"^actors\s+\d+$", r.stdout, re.M), "overview table: actors", r.stdout)

            ps = one_json_line(run_cli(cli, "--socket", node.socket, "processes", "--sort", "mailbox", "--limit",
                                       "5", "--json"), "processes --sort mailbox --limit 5 --json")
            procs = ps["processes"]
            expect(len(procs) == 5 and ps["total"] >= 15, "5 of at least 15 processes", ps)
            expect(all(PID_RE.match(p["pid"]) for p in procs), "pids print as <i.g>", procs)
            expect([p["mailbox"] for p in procs] == sorted((p["mailbox"] for p in procs), reverse=True),
                   "sorted by mailbox, descending", procs)
            one = one_json_line(run_cli(cli, "--socket", node.socket, "process", procs[0]["pid"], "--json"),
                                "process --json")
            expect(one["pid"] == procs[0]["pid"] and one["stack"]["size"] > 0, "process detail", one)

            for s in conns[:2]:
                s.close()
            expect(wait_for(lambda: echo_listener(cli, node)["connections"] == 3, 5),
                   "closing 2 connections leaves 3", echo_listener(cli, node))
        finally:
            for s in conns:
                s.close()
            node.stop()
        r = run_cli(cli, "--socket", node.socket, "overview")
        expect(r.returncode == 1 and r.stderr.startswith("herd-observer: no node at " + node.socket),
               "after the node exits: exit 1, no node", r.returncode, r.stderr)


def top_on_a_live_node(cli, echo):
    """top against the real node: its known processes on screen, q leaves the terminal clean."""
    import shutil
    if shutil.which("tmux") is None:
        raise Skipped("tmux is not installed")
    from top_test import Pane
    with tempfile.TemporaryDirectory(prefix="herd-observer-live-top-") as d:
        os.chmod(d, 0o700)
        node = EchoNode(echo, d)
        conns, pane = [], None
        try:
            conns = [connect(node.port) for _ in range(3)]
            pane = Pane(cli, node, "live")
            pane.wait_text("os pid %d" % node.p.pid, what="top's header names the node's OS pid")
            pane.wait_text("echo_server", what="the listener's supervisor (registered as echo_server) is listed")
            pane.keys("q")
            pane.expect_restored("EXITED 0")
        finally:
            if pane:
                pane.kill()
            for s in conns:
                s.close()
            node.stop()


if __name__ == "__main__":
    run_checks([figures_of_a_live_echo_server, top_on_a_live_node], sys.argv[1], sys.argv[2])
