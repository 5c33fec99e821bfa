#!/usr/bin/env python3
"""herd-observer's exit codes and error lines: 1 for a missing, refusing,
misbehaving, or silent node (one line naming the problem), 2 for a wrong
command line (with the usage, and without contacting the node).

    exit_codes_test.py HERD_OBSERVER
"""
import os
import socket
import sys
import tempfile
import time

from support import FakeNode, expect, run_checks, run_cli


def expect_exit(r, code, stderr_start, what):
    expect(r.returncode == code, "%s: exit %d, expected %d" % (what, r.returncode, code), "stderr: " + r.stderr)
    expect(r.stderr.startswith(stderr_start), "%s: stderr should start with %r" % (what, stderr_start), r.stderr)
    expect(r.stdout == "", what + ": nothing on stdout", r.stdout)


def missing_or_refusing_socket(cli):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.sock")
        r = run_cli(cli, "--socket", path, "overview")
        expect_exit(r, 1, "herd-observer: no node at %s (No such file or directory)\n" % path, "missing socket")
        expect(len(r.stderr.splitlines()) == 1, "one line", r.stderr)
        # A socket file nobody listens on: what a crashed node leaves behind.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()
        r = run_cli(cli, "--socket", path, "processes", "--json")
        expect_exit(r, 1, "herd-observer: no node at %s (Connection refused)\n" % path, "stale socket")


def misbehaving_nodes(cli):
    cases = [("malformed", "malformed reply from the node at {}: not JSON: this is not json {{"),
             ("not_object", "malformed reply from the node at {}: not a JSON object: [1,2,3]"),
             ("error", "the node answered failed: the snapshot provider crashed"),
             ("close_mid", "the node at {} closed the connection in the middle of a reply"),
             ("wrong_shape", "malformed reply from the node at {}: ")]
    for mode, message in cases:
        with FakeNode(mode) as node:
            for args in (["overview"], ["processes", "--limit", "3"], ["process", "5.0"], ["listeners"],
                         ["trace", "5.0"]):
                r = run_cli(cli, "--socket", node.socket, *args)
                what = "%s mode, %s" % (mode, " ".join(args))
                expect_exit(r, 1, "herd-observer: " + message.format(node.socket), what)
                expect(len(r.stderr.splitlines()) == 1, what + ": one line", r.stderr)


def a_silent_node_times_out(cli):
    with FakeNode("silent") as node:
        for args in (["overview"], ["trace", "5.0", "--timeout-ms", "1000"]):
            start = time.monotonic()
            r = run_cli(cli, "--socket", node.socket, *args, timeout=30)
            took = time.monotonic() - start
            what = "silent node, " + " ".join(args)
            expect_exit(r, 1, "herd-observer: no reply from the node at %s within 5 s\n" % node.socket, what)
            # Not before the 5 s it waits for; how much later depends on the machine's load.
            expect(took >= 4.5, what + ": gave up after %.1f s, expected at least 5 s" % took)
        expect(len(node.requests()) == 2, "the requests did arrive", node.requests())


def wrong_arguments(cli):
    with FakeNode() as node:
        s = node.socket
        cases = [
            ([], "--socket PATH is required"),
            (["overview"], "--socket PATH is required"),
            (["--socket", s], "no command given"),
            (["--socket", s, "frobnicate"], "unknown command 'frobnicate'"),
            (["--socket", s, "processes", "--limit", "0"], "--limit: '0' is not a number in 1..100000"),
            (["--socket", s, "processes", "--limit", "many"], "--limit: 'many' is not a number in 1..100000"),
            (["--socket", s, "processes", "--limit", "100001"], "--limit: '100001' is not a number"),
            (["--socket", s, "processes", "--limit"], "--limit needs a value"),
            (["--socket", s, "processes", "--sort", "size"], "--sort: 'size' is not one of"),
            (["--socket", s, "processes", "--status", "sleeping"], "--status: 'sleeping' is not one of"),
            (["--socket", s, "processes", "--colour"], "unknown option '--colour'"),
            (["--socket", s, "processes", "extra"], "processes takes no positional arguments"),
            (["--socket", s, "process"], "process takes one PID"),
            (["--socket", s, "process", "five"], "'five' is not a pid"),
            (["--socket", s, "process", "<5>"], "'<5>' is not a pid"),
            (["--socket", s, "kill", "5.0", "kill", "now"], "kill takes a PID and an optional REASON"),
            (["--socket", s, "load"], "load takes one PATH"),
            (["--socket", s, "load", "m.so", "--purge", "hard"], "--purge: 'hard' is not soft or kill"),
            (["--socket", s, "tree", "--purge", "kill"], "tree does not take --purge"),
            (["--socket", s, "set_max_connections", "echo_server"], "set_max_connections takes a LISTENER"),
            (["--socket", s, "set_max_connections", "echo_server", "-3"], "set_max_connections: '-3' is not a"),
            (["--socket", s, "trace", "5.0", "--limit", "10001"], "--limit: '10001' is not a number in 1..10000"),
            (["--socket", s, "tree", "--limit", "3"], "tree does not take --limit"),
            (["--socket", s, "overview", "--sort", "memory"], "overview does not take --sort"),
            (["--socket", s, "--socket", s, "tree"], "--socket given twice"),
        ]
        for args, message in cases:
            r = run_cli(cli, *args)
            what = "herd-observer " + " ".join(args)
            expect_exit(r, 2, "herd-observer: " + message, what)
            expect("\nusage: herd-observer --socket PATH COMMAND" in r.stderr, what + ": a usage line", r.stderr)
        expect(node.requests() == [], "no bad command line reached the node", node.requests())
        r = run_cli(cli, "--help")
        expect(r.returncode == 0 and r.stdout.startswith("usage: herd-observer"), "--help: usage on stdout, exit 0",
               r.stdout)


def top_needs_a_terminal(cli):
    with FakeNode() as node:
        r = run_cli(cli, "--socket", node.socket, "top")
        expect_exit(r, 2, "herd-observer: top needs a terminal on stdin and stdout\n", "top without a tty")


if __name__ == "__main__":
    run_checks([missing_or_refusing_socket, misbehaving_nodes, a_silent_node_times_out, wrong_arguments,
                top_needs_a_terminal], sys.argv[1])
