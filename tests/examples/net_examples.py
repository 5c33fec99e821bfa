#!/usr/bin/env python3
"""Smoke tests of the net examples, run by ctest as separate processes (the
server and its clients must not share one open-files limit).

    net_examples.py echo PATH            many connections, every byte checked, SIGTERM drains, exit 0
    net_examples.py bad-options PATH     each bad option: a message and exit 2
    net_examples.py first-data PATH      --first-data-timeout-ms closes silent clients, not slow talkers
    net_examples.py chat-first-data PATH the same for chat_server (the talker JOINs, then idles)
    net_examples.py not-here PATH FLAG   a flag this server does not honour is refused, not ignored
    net_examples.py chat PATH            join/msg/leave, malformed lines, 1,000 members with one that never reads
Everything is bounded in time and every process started is stopped by its PID.
"""
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import time

DEADLINE_S = 60


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def eventually(what, pred, deadline_s=60, every_s=0.02):
    """Polls pred until it holds; fails with `what` after deadline_s."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(every_s)  # the poll's interval
    fail("not within %d s: %s" % (deadline_s, what))


def read_until_cut_off(member, timeout_s):
    """Reads what a member that never read was still sent, until the server
    cuts it off (a reset or an end); fails if it is not cut off in time."""
    member.s.settimeout(timeout_s)
    data = b""
    try:
        while True:
            chunk = member.s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    except socket.timeout:
        fail("the member that never read was not cut off")
    return data


class Server:
    def __init__(self, path, *args):
        self.p = subprocess.Popen([path, "--port", "0", "--bind", "127.0.0.1", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line.startswith("listening on "):
            self.kill()
            fail("no 'listening on' line, got %r; stderr: %s" % (line, self.p.stderr.read()))
        self.port = int(line.strip().rsplit(":", 1)[1])

    def stop(self, timeout=15):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("the server did not exit within %d s of SIGTERM" % timeout)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            fail("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def test_echo(path):
    srv = Server(path, "--workers", "2")
    try:
        rng = random.Random(7)
        conns = [connect(srv.port) for _ in range(300)]
        for rnd in range(5):
            payloads = [bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 64, 1000, 70000])))
                        for _ in conns]
            for s, p in zip(conns, payloads):
                s.sendall(p)
            for s, p in zip(conns, payloads):
                got = recv_exact(s, len(p))
                if got != p:
                    fail("round %d: echoed bytes differ" % rnd)
        # A half-close: what was sent still comes back, then the server closes.
        s = conns.pop()
        s.sendall(b"last words")
        s.shutdown(socket.SHUT_WR)
        if recv_exact(s, 10) != b"last words":
            fail("half-close: wrong echo")
        s.settimeout(10)
        if s.recv(1) != b"":
            fail("half-close: the server did not close its side")
        s.close()
        # An abrupt reset must not disturb the others.
        r = conns.pop()
        r.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        r.close()
        conns[0].sendall(b"still here")
        if recv_exact(conns[0], 10) != b"still here":
            fail("after a reset, another connection broke")
        code = srv.stop()
        if code != 0:
            fail("exit code %d after SIGTERM (want 0)" % code)
        for s in conns:
            s.close()
    finally:
        srv.kill()
    print("echo: ok")


def test_bad_options(path):
    cases = [[], ["--port"], ["--port", "70000"], ["--port", "x"], ["--port", "0", "--workers", "0"],
             ["--port", "0", "--max-connections", "-3"], ["--port", "0", "--frobnicate"],
             ["--port", "0", "--acceptors", "1e3"], ["--port", "0", "--first-data-timeout-ms", "-1"],
             ["--port", "0", "--first-data-timeout-ms"], ["--port", "0", "--busy-wait-us", "-5"],
             ["--port", "0", "--busy-wait-us", "10001"], ["--port", "0", "--busy-wait-us", "fast"]]
    for args in cases:
        p = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
        if p.returncode != 2 or "usage:" not in p.stderr:
            fail("%s: exit %d, stderr %r (want 2 and a usage message)" % (args, p.returncode, p.stderr))
    # A port in use: a clear message and a non-zero exit, not a crash.
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    p = subprocess.run([path, "--port", str(port), "--bind", "127.0.0.1"], capture_output=True, text=True,
                       timeout=10)
    blocker.close()
    if p.returncode != 1 or "cannot listen" not in p.stderr:
        fail("port in use: exit %d, stderr %r" % (p.returncode, p.stderr))
    print("bad-options: ok")


class LineClient:
    def __init__(self, port):
        self.s = connect(port)
        self.buf = b""

    def send(self, text):
        self.s.sendall(text.encode())

    def line(self, timeout=10):
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                fail("connection closed while waiting for a line (have %r)" % self.buf)
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def expect(self, want):
        got = self.line()
        if got != want:
            fail("want %r, got %r" % (want, got))


def broadcast(sender, room, readers, n, size):
    """Sends n lines to room and checks every reader gets all of them in order."""
    text = "y" * size
    sel = selectors.DefaultSelector()
    for m in readers:
        m.s.setblocking(False)
        sel.register(m.s, selectors.EVENT_READ, m)
    counts = {id(m): 0 for m in readers}
    finished = 0
    deadline = time.time() + DEADLINE_S
    sent = 0
    window = 200  # lines in flight: a reader never falls far behind
    # The slowest reader's count matters only while there is more to send:
    # min() over every reader per select would cost more than the server.
    while finished < len(readers):
        if sent < n:  # as many as the window allows, in one write
            upto = min(n, min(counts.values()) + window)
            if upto > sent:
                sender.send("".join("MSG %s %d %s\n" % (room, i, text) for i in range(sent, upto)))
                sent = upto
        for key, _ in sel.select(timeout=1):
            m = key.data
            try:
                chunk = m.s.recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                fail("a reading member was disconnected")
            m.buf += chunk
            *lines, m.buf = m.buf.split(b"\n")
            for ln in lines:
                seq = int(ln.split(b" ")[2])
                if seq != counts[id(m)]:
                    fail("a member got seq %d, want %d" % (seq, counts[id(m)]))
                counts[id(m)] += 1
                finished += counts[id(m)] == n
        if time.time() > deadline:
            fail("not all lines delivered in time: min %d of %d" % (min(counts.values()), n))
    sel.close()
    for m in readers:
        m.s.setblocking(True)


def test_chat(path):
    srv = Server(path, "--workers", "2")
    try:
        a, b, c = LineClient(srv.port), LineClient(srv.port), LineClient(srv.port)
        a.send("JOIN lobby\n"); a.expect("OK JOIN lobby")
        b.send("JOIN lobby\r\n"); b.expect("OK JOIN lobby")
        a.send("MSG lobby hello all\n")
        a.expect("MSG lobby hello all"); b.expect("MSG lobby hello all")
        # Malformed lines: an error line each, the connection stays.
        for bad, want in [("HELLO\n", "ERROR unknown"), ("JOIN\n", "ERROR bad room"),
                          ("MSG lobby\n", "ERROR usage"), ("MSG nowhere hi\n", "ERROR no such room"),
                          ("LEAVE kitchen\n", "ERROR not in room"), ("JOIN a b\n", "ERROR bad room")]:
            c.send(bad)
            got = c.line()
            if not got.startswith(want):
                fail("%r: want %r..., got %r" % (bad, want, got))
        c.send("x" * 70000 + "\n")
        if not c.line().startswith("ERROR line too long"):
            fail("a long line was not refused")
        # A non-member may post; LEAVE stops deliveries.
        b.send("LEAVE lobby\n"); b.expect("OK LEAVE lobby")
        c.send("MSG lobby from outside\n")
        a.expect("MSG lobby from outside")
        b.send("JOIN lobby\n"); b.expect("OK JOIN lobby")
        for x in (a, b, c):
            x.s.close()

        print("chat: basic protocol ok", flush=True)
        # 1,000 members, one of which never reads: the others get every line, in order.
        members = [LineClient(srv.port) for _ in range(1000)]
        for m in members:
            m.send("JOIN big\n")
        for m in members:
            m.expect("OK JOIN big")
        broadcast(LineClient(srv.port), "big", members[1:], n=200, size=100)
        print("chat: broadcast to 1,000 members ok", flush=True)

        # A member that never reads falls more than 1,000 lines / 1 MiB behind:
        # it is disconnected, and the room goes on for the reader.
        slow, reader = LineClient(srv.port), LineClient(srv.port)
        slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for m in (slow, reader):
            m.send("JOIN slowroom\n")
            m.expect("OK JOIN slowroom")
        broadcast(LineClient(srv.port), "slowroom", [reader], n=8000, size=1000)
        print("chat: 8,000 lines to the reader ok; waiting for the slow member's disconnection", flush=True)
        # It is cut off with a reset: what it never read is dropped, so this
        # ends quickly (a graceful close would trickle megabytes through its
        # tiny receive window first).
        data = read_until_cut_off(slow, 20)
        if data.count(b"\n") >= 8000:
            fail("the slow member got every line: it was never behind")
        code = srv.stop()
        if code != 0:
            fail("exit code %d after SIGTERM" % code)
    finally:
        srv.kill()
    print("chat: ok")


def test_first_data(path, chat=False):
    extra = [] if chat else ["--idle-hibernate-ms", "100"]
    first, then = ((b"JOIN lobby\n", b"OK JOIN lobby\n"), (b"LEAVE lobby\n", b"OK LEAVE lobby\n")) if chat else \
        ((b"hello", b"hello"), (b"again", b"again"))
    srv = Server(path, "--first-data-timeout-ms", "500", *extra)
    try:
        silent = [connect(srv.port) for _ in range(20)]
        talker = connect(srv.port)
        t0 = time.monotonic()
        talker.sendall(first[0])
        if recv_exact(talker, len(first[1])) != first[1]:
            fail("the talker was not answered")
        for s in silent:
            s.settimeout(60)  # bounded only to end a broken run
            try:
                got = s.recv(1)
            except ConnectionResetError:
                got = b""
            if got != b"":
                fail("a silent client got %r instead of being closed" % got)
        took = time.monotonic() - t0
        if took < 0.4:  # not before the timeout; how long after depends on the machine's load
            fail("silent clients closed after %.2f s (want at least 0.5 s)" % took)
        # Past the first message the timeout is over: idle (and hibernated), the talker stays.
        time.sleep(1.0)  # not synchronisation: longer than the timeout, which must not close it
        talker.sendall(then[0])
        if recv_exact(talker, len(then[1])) != then[1]:
            fail("the talker was not answered after an idle second")
        if srv.stop() != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
    print("first-data: ok")


def test_not_here(path, flag):
    p = subprocess.run([path, "--port", "0", flag, "100"], capture_output=True, text=True, timeout=10)
    if p.returncode != 2 or "is not an option of this server" not in p.stderr or flag in p.stderr.split("usage:")[1]:
        fail("%s: exit %d, stderr %r (want 2, a message, and a usage line without it)" % (flag, p.returncode, p.stderr))
    print("not-here: ok")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    tests = {"echo": test_echo, "bad-options": test_bad_options, "chat": test_chat, "first-data": test_first_data,
             "chat-first-data": lambda p: test_first_data(p, chat=True), "not-here": test_not_here}
    tests[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
