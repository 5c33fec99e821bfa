#!/usr/bin/env python3
"""herd-observer against sockets it must not trust or wait on for ever:
a path through another user's symlink, a socket served by another user, a
server that never accepts, and replies nested 50,000 deep. Each is exit 1
with one line saying so, never a hang or a crash.

    hostile_node_test.py HERD_OBSERVER
"""
import os
import subprocess
import sys
import tempfile

from support import HERE, FakeNode, Skipped, expect, run_checks, run_cli

NOBODY = 65534


class HostileServer:
    """hostile_server.py MODE on a socket in a fresh 0700 directory; stopped by its PID."""

    def __init__(self, mode):
        self.tmp = tempfile.TemporaryDirectory(prefix="herd-observer-hostile-")
        self.socket = os.path.join(self.tmp.name, "node.sock")
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "hostile_server.py"), self.socket, mode],
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise AssertionError("the %s server did not start: %r" % (mode, line))

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        self.p.stdout.close()
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def expect_failure(r, message, what):
    expect(r.returncode == 1, "%s: exit %d, expected 1" % (what, r.returncode), "stdout: " + r.stdout,
           "stderr: " + r.stderr)
    expect(r.stderr.startswith("herd-observer: " + message), "%s: stderr should start with %r" % (what, message),
           r.stderr)
    expect(len(r.stderr.splitlines()) == 1, what + ": one line", r.stderr)
    expect(r.stdout == "", what + ": nothing on stdout", r.stdout)


def root_only(check):
    """Making a file owned by another user takes root (as in CI); elsewhere the check is skipped."""
    def run(cli):
        if os.geteuid() != 0:
            raise Skipped("not root, cannot make another user's files")
        check(cli)
    run.__name__ = check.__name__
    return run


@root_only
def a_symlink_another_user_planted_is_refused(cli):
    with FakeNode() as node, tempfile.TemporaryDirectory() as d:
        shared = os.path.join(d, "shared")  # a /tmp of the test's own: sticky, anyone may write
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        # Another user's symlinks: aimed at our node today, at theirs tomorrow.
        os.symlink(node.dir, os.path.join(shared, "planted"))
        os.lchown(os.path.join(shared, "planted"), NOBODY, NOBODY)
        os.symlink(node.socket, os.path.join(shared, "planted.sock"))
        os.lchown(os.path.join(shared, "planted.sock"), NOBODY, NOBODY)
        for path, link in ((os.path.join(shared, "planted", "node.sock"), "planted"),
                           (os.path.join(shared, "planted.sock"), "planted.sock")):
            r = run_cli(cli, "--socket", path, "modules")
            expect_failure(r, "refusing the socket path %s: %s is a symlink owned by uid %d, neither this user"
                           % (path, os.path.join(shared, link), NOBODY), "through " + link)
        # The same symlink, ours: followed.
        os.symlink(node.dir, os.path.join(shared, "ours"))
        r = run_cli(cli, "--socket", os.path.join(shared, "ours", "node.sock"), "modules")
        expect(r.returncode == 0, "our own symlink: exit %d" % r.returncode, r.stderr)
        expect(len(node.requests()) == 1, "only the request through our symlink reached the node", node.requests())


@root_only
def a_directory_others_may_write_is_refused(cli):
    with FakeNode() as node, tempfile.TemporaryDirectory() as d:
        open_dir = os.path.join(d, "open")  # world-writable, not sticky: "node" in it can be swapped
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        os.symlink(node.dir, os.path.join(open_dir, "node"))
        path = os.path.join(open_dir, "node", "node.sock")
        r = run_cli(cli, "--socket", path, "modules")
        expect_failure(r, "refusing the socket path %s: directory %s can be written by group or others and is not sticky"
                       % (path, open_dir), "world-writable directory")


@root_only
def a_socket_served_by_another_user_is_refused(cli):
    with HostileServer("other_uid") as s:
        r = run_cli(cli, "--socket", s.socket, "modules")
        expect_failure(r, "refusing the node at %s: it runs as uid %d, neither this user (uid %d) nor root"
                       % (s.socket, NOBODY, os.geteuid()), "served by uid %d" % NOBODY)


def a_server_that_never_accepts_times_out(cli):
    with HostileServer("backlog_full") as s:
        # The CLI promises 5 s; the bound here only catches a hang.
        r = run_cli(cli, "--socket", s.socket, "overview", timeout=30)
        expect_failure(r, "the node at %s did not accept the connection within 5 s" % s.socket, "full backlog")


def a_reply_nested_50000_deep_is_an_error(cli):
    with HostileServer("deep") as s:
        for args in (["modules"], ["modules", "--json"], ["trace", "5.0"]):
            r = run_cli(cli, "--socket", s.socket, *args)
            expect_failure(r, "malformed reply from the node at %s: nested deeper than 256 levels: " % s.socket,
                           " ".join(args))


run_checks([a_symlink_another_user_planted_is_refused, a_directory_others_may_write_is_refused,
            a_socket_served_by_another_user_is_refused, a_server_that_never_accepts_times_out,
            a_reply_nested_50000_deep_is_an_error], sys.argv[1])
