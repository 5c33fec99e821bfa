#!/usr/bin/env python3
"""How the net examples start and stop (examples/server_main.cpp), run by ctest as separate processes.

    server_start_stop_test.py echo-drain PATH   SIGTERM with 100 idle connections and one busy one: the idle
                                                ones are closed at once, the busy one gets its whole reply,
                                                nothing is stopped at the drain's timeout
    server_start_stop_test.py chat-drain PATH   the same for chat_server: a busy member gets every line its
                                                room handed it
    server_start_stop_test.py help PATH         --help prints the usage on stdout and exits 0
    server_start_stop_test.py nofile PATH       under `ulimit -n 256` the start-up check warns
Everything is bounded in time and every process started is stopped by its PID. Figures are printed
as one "figure: name=value" line each.
"""
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from net_examples import LineClient, Server, connect, fail  # noqa: E402

# What the listener logs when it stops connections that did not end; what
# the server says when none was left.
TIMED_OUT = "drain timed out"


def small_rcvbuf_socket(port, rcvbuf=4096):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def expect_eof(s, what):
    s.settimeout(30)
    try:
        got = s.recv(1)
    except ConnectionResetError:
        fail("%s: reset (stopped) instead of closed" % what)
    except socket.timeout:
        fail("%s: still open 30 s after SIGTERM" % what)
    if got != b"":
        fail("%s: got %r instead of an end of stream" % (what, got))


def finish(srv, t0):
    code = srv.p.wait(timeout=30)
    took = time.monotonic() - t0
    err = srv.p.stderr.read()
    print("figure: drain_seconds=%.2f" % took, flush=True)
    if code != 0:
        fail("exit code %d after SIGTERM; stderr: %s" % (code, err))
    if TIMED_OUT in err or "every connection ended" not in err:
        fail("connections were stopped at the drain's timeout: %s" % err)


def test_echo_drain(path, idle=100):
    srv = Server(path, "--workers", "2")
    try:
        idlers = [connect(srv.port) for _ in range(idle)]
        for s in idlers[: idle // 2]:  # half of them talked once, then went idle
            s.sendall(b"hi")
            if s.recv(2) != b"hi":
                fail("no echo")
        # The busy one: a request far larger than every buffer on the way,
        # and it does not read yet, so the server is parked writing the reply.
        busy = small_rcvbuf_socket(srv.port, 1 << 16)
        # Full scale: more than every buffer on the way holds. Under a
        # sanitizer (small) less, so the echo ends well within the drain's 5 s.
        size = (3 << 20) if os.environ.get("HERD_TEST_SCALE") == "small" else (8 << 20)
        payload = bytes(range(256)) * (size // 256)
        sent = [0]

        def send_all():
            view = memoryview(payload)
            try:
                while sent[0] < size:
                    sent[0] += busy.send(view[sent[0]:sent[0] + (1 << 16)])
            except ConnectionResetError:
                pass  # the reply tells

        sender = threading.Thread(target=send_all)
        sender.start()
        end = time.monotonic() + 30
        while sent[0] < size // 4:  # the server has taken part of it and is echoing
            if time.monotonic() > end:
                fail("the busy client could not send a quarter of its request")
            time.sleep(0.01)  # polls the count
        t0 = time.monotonic()
        srv.p.send_signal(signal.SIGTERM)
        # Every idle one is closed while the busy one is still unread.
        for i, s in enumerate(idlers):
            expect_eof(s, "idle connection %d" % i)
        print("figure: idle_closed_seconds=%.2f" % (time.monotonic() - t0), flush=True)
        got = bytearray()
        busy.settimeout(30)
        try:
            while True:
                chunk = busy.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
        except ConnectionResetError:
            pass  # reported below
        sender.join()
        if len(got) != size or got != payload:
            srv.p.wait(timeout=30)
            fail("the busy connection got %d of %d bytes back (%.2f s after SIGTERM); server: %s" %
                 (len(got), size, time.monotonic() - t0, srv.p.stderr.read()))
        finish(srv, t0)
    finally:
        srv.kill()
    print("echo-drain: ok")


def test_chat_drain(path, idle=100):
    srv = Server(path, "--workers", "2")
    try:
        idlers = [LineClient(srv.port) for _ in range(idle)]
        for c in idlers[: idle // 2]:
            c.send("JOIN lobby\n")
            c.expect("OK JOIN lobby")
        busy = LineClient.__new__(LineClient)
        busy.s, busy.buf = small_rcvbuf_socket(srv.port), b""
        busy.send("JOIN news\n")
        busy.expect("OK JOIN news")
        # 600 KB for the busy member: under the 1 MiB that would cut it off,
        # far over what its socket takes while it does not read.
        n = 600
        writer = LineClient(srv.port)
        writer.send("".join("MSG news %03d %s\n" % (i, "n" * 1000) for i in range(n)))
        writer.send("JOIN news\n")  # answered once the room has handed out every line
        writer.expect("OK JOIN news")
        t0 = time.monotonic()
        srv.p.send_signal(signal.SIGTERM)
        for i, c in enumerate(idlers):
            expect_eof(c.s, "idle member %d" % i)
        print("figure: idle_closed_seconds=%.2f" % (time.monotonic() - t0), flush=True)
        for i in range(n):
            busy.expect("MSG news %03d %s" % (i, "n" * 1000))
        expect_eof(busy.s, "the busy member")
        finish(srv, t0)
    finally:
        srv.kill()
    print("chat-drain: ok")


def test_help(path):
    for flag in ("--help", "-h"):
        p = subprocess.run([path, flag], capture_output=True, text=True, timeout=10)
        if p.returncode != 0 or "usage:" not in p.stdout or p.stderr:
            fail("%s: exit %d, stdout %r, stderr %r (want 0, the usage on stdout)" %
                 (flag, p.returncode, p.stdout, p.stderr))
    print("help: ok")


def test_nofile(path):
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    for args in ([], ["--max-connections", "1000"]):
        p = subprocess.Popen([path, "--port", "0", "--bind", "127.0.0.1", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=lower)
        try:
            line = p.stdout.readline()
            if not line.startswith("listening on "):
                fail("%s: no 'listening on' line: %r" % (args, line))
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
            err = p.stderr.read()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if "warning" not in err or "256" not in err or "ulimit -n" not in err:
            fail("%s under ulimit -n 256: no descriptor warning; stderr %r" % (args, err))
    # With room to spare, no warning.
    p = subprocess.Popen([path, "--port", "0", "--bind", "127.0.0.1", "--max-connections", "100"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lower)
    try:
        p.stdout.readline()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if "ulimit -n" in err:
        fail("--max-connections 100 under ulimit -n 256 was warned about: %r" % err)
    print("nofile: ok")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    tests = {"echo-drain": test_echo_drain, "chat-drain": test_chat_drain, "help": test_help, "nofile": test_nofile}
    tests[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
