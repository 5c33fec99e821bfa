#!/usr/bin/env python3
"""The example servers against careless operators (examples/server_main.cpp), run by ctest.

    server_hostile_test.py listener-lost PATH        the listener's supervisor is killed (through the
                                                     observer): the server says so and exits 1, the port
                                                     refuses connections
    server_hostile_test.py closed-pipe PATH          stdout and stderr are a pipe whose reader has gone:
                                                     the server serves, and drains on SIGTERM with exit 0
    server_hostile_test.py swap-closed-pipe SERVER V1 V2
                                                     the same for hot_swap_server across a SIGHUP swap
                                                     (its "loaded ..." line goes nowhere)
    server_hostile_test.py sighup-ignored PATH       SIGHUP is ignored (said on stderr), the server still
                                                     serves, and SIGTERM drains with exit 0
    server_hostile_test.py refuses PATH ARG...       the command line is refused: exit 2, a message and
                                                     the usage on stderr
Every server started is stopped by its PID; every wait is bounded.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from net_examples import Server, connect, eventually, fail, recv_exact  # noqa: E402



def ask(sock_path, req, **fields):
    """One request on the node's observer socket (docs/observer-protocol.md)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sock_path)
    f = s.makefile("rw")
    f.write(json.dumps({"v": 1, "req": req, **fields}) + "\n")
    f.flush()
    r = json.loads(f.readline())
    s.close()
    if not r.get("ok"):
        fail("observer %s: %r" % (req, r))
    return r["result"]


def refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def echo_once(port, payload=b"still here"):
    s = connect(port)
    s.sendall(payload)
    if recv_exact(s, len(payload)) != payload:
        fail("wrong echo")
    s.close()


def served(path, port):
    """One exchange: an echo from echo_server, an answer to a malformed line from chat_server."""
    if "chat" not in os.path.basename(path):
        return echo_once(port)
    s = connect(port)
    s.sendall(b"NOT A COMMAND\n")
    s.settimeout(10)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            fail("closed before answering a line")
        buf += chunk
    if not buf.startswith(b"ERROR"):
        fail("unexpected answer %r" % buf)
    s.close()


def wait_exit(p, what, timeout=30):
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        fail("%s: the server did not exit within %d s" % (what, timeout))


def test_listener_lost(path):
    tmp = tempfile.mkdtemp(prefix="listener_lost_")
    sock = os.path.join(tmp, "obs.sock")
    srv = Server(path, "--workers", "2", "--acceptors", "3", "--observer", sock)
    try:
        eventually("the observer socket", lambda: os.path.exists(sock), 10)
        held = connect(srv.port)  # a connection open while the tree dies
        (mine,) = [l for l in ask(sock, "listeners")["listeners"] if l["address"].endswith(":%d" % srv.port)]
        ask(sock, "kill", pid=mine["supervisor"], reason="kill", timeout_ms=0)
        code = wait_exit(srv.p, "after its listener's supervisor was killed")
        err = srv.p.stderr.read()
        if code != 1:
            fail("exit code %r after the listener died (want 1); stderr: %s" % (code, err))
        if "listener's supervision tree ended" not in err:
            fail("no word of the listener's end on stderr: %s" % err)
        if not refused(srv.port):
            fail("the port still takes connections")
        held.close()
    finally:
        srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def start_without_reader(argv):
    """Starts a server whose stdout and stderr are a pipe nobody reads any
    more (its reader closed before the server wrote a byte)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.Popen(argv, stdout=w, stderr=w, stdin=subprocess.DEVNULL)
    finally:
        os.close(w)


def observed_port(p, sock):
    """The port of the server's listener, from its observer (it cannot print it)."""
    def up():
        if p.poll() is not None:
            fail("the server ended (status %r) before its observer was up" % p.returncode)
        return os.path.exists(sock)
    eventually("the observer socket", up, 30)
    (mine,) = ask(sock, "listeners")["listeners"]
    return int(mine["address"].rsplit(":", 1)[1])


def test_closed_pipe(path):
    tmp = tempfile.mkdtemp(prefix="closed_pipe_")
    sock = os.path.join(tmp, "obs.sock")
    p = start_without_reader([path, "--port", "0", "--bind", "127.0.0.1", "--workers", "2", "--observer", sock])
    try:
        port = observed_port(p, sock)
        held = connect(port)
        served(path, port)
        p.send_signal(signal.SIGTERM)  # says "draining ..." on the closed stderr
        code = wait_exit(p, "after SIGTERM")
        if code != 0:
            fail("exit status %r after SIGTERM with no log reader (want 0)" % code)
        held.close()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def answer(port, line="hello"):
    s = connect(port)
    s.sendall(line.encode() + b"\n")
    s.settimeout(10)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            fail("closed before answering %r" % line)
        buf += chunk
    s.close()
    return buf.decode().split(" ", 1)[0]


def test_swap_closed_pipe(server, v1, v2):
    tmp = tempfile.mkdtemp(prefix="swap_closed_pipe_")
    mods = os.path.join(tmp, "modules")
    os.mkdir(mods)
    shutil.copy(v1, os.path.join(mods, "handler_v1.so"))
    sock = os.path.join(tmp, "obs.sock")
    p = start_without_reader([server, "--module-dir", mods, "--port", "0", "--bind", "127.0.0.1",
                              "--workers", "2", "--observer", sock])
    try:
        port = observed_port(p, sock)
        before = answer(port)
        # Deployed by rename, newer than v1 (its modification time says so).
        staged = os.path.join(tmp, "handler_v2.so")
        shutil.copy(v2, staged)
        later = os.stat(os.path.join(mods, "handler_v1.so")).st_mtime + 10
        os.utime(staged, (later, later))
        os.rename(staged, os.path.join(mods, "handler_v2.so"))
        p.send_signal(signal.SIGHUP)  # prints "loaded ..." to the closed stdout
        eventually("a connection answered by the new version",
                   lambda: p.poll() is None and answer(port) != before, 30)
        if p.poll() is not None:
            fail("the server ended (status %r) after the swap" % p.returncode)
        p.send_signal(signal.SIGTERM)
        code = wait_exit(p, "after SIGTERM")
        if code != 0:
            fail("exit status %r after SIGTERM with no log reader (want 0)" % code)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def test_sighup_ignored(path):
    srv = Server(path, "--workers", "2")
    try:
        held = connect(srv.port)
        srv.p.send_signal(signal.SIGHUP)  # by default it would end the server (status 129, no drain)
        served(path, srv.port)
        # The server's signal thread hands SIGHUP then SIGTERM to the root in
        # that order: the drain below comes after SIGHUP was handled.
        held.close()
        code = srv.stop()
        err = srv.p.stderr.read()
        if code != 0:
            fail("exit status %r after SIGHUP then SIGTERM (want 0); stderr: %s" % (code, err))
        if "SIGHUP ignored" not in err or "draining" not in err:
            fail("SIGHUP not said to be ignored, or no drain: %s" % err)
    finally:
        srv.kill()


def test_refuses(path, args):
    try:
        p = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:  # run() has killed it
        fail("%s %r: still running after 10 s instead of refusing its command line" % (path, args))
    if p.returncode != 2:
        fail("%s %r: exit %r (want 2); stdout %r stderr %r" % (path, args, p.returncode, p.stdout, p.stderr))
    if "usage" not in p.stderr:
        fail("%s %r: no usage on stderr: %r" % (path, args, p.stderr))
    print("refused %r: %s" % (args, p.stderr.splitlines()[0]))


def main():
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "listener-lost":
        test_listener_lost(rest[0])
    elif mode == "closed-pipe":
        test_closed_pipe(rest[0])
    elif mode == "swap-closed-pipe":
        test_swap_closed_pipe(*rest[:3])
    elif mode == "sighup-ignored":
        test_sighup_ignored(rest[0])
    elif mode == "refuses":
        test_refuses(rest[0], rest[1:])
    else:
        fail("unknown mode " + mode)
    print("PASS")


if __name__ == "__main__":
    main()
