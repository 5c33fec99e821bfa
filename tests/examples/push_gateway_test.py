#!/usr/bin/env python3
"""What tools/pushbench/contract_test.py does not check of examples/push_gateway.

    push_gateway_test.py CASE GATEWAY

CASE:
  options      the gateway's own options: bad values, twice, --help, an
               option it would not honour; --max-message-bytes is applied
               to pushes (413) and to WebSocket messages (1009)
  lifecycle    closing connections leave presence and rooms (stats return to
               0, pushes deliver 0), a reconnect storm of 20 users x 10
               devices, exact `pushed` accounting, bad commands keep the
               connection
  concurrent   two HTTP pushers at once to a user and to a room: each
               device gets every frame, each pusher's frames in its order,
               and `delivered` adds up to what arrived
  hibernated   with --idle-hibernate-ms 10: idle connections still get
               pushes and room messages, answer pings and stay open; a
               silent one is closed with 4000
  slow-room    a room member that reads nothing is dropped (1008) and leaves
               the room at once; the member that reads gets every frame
  limit        --max-connections 2: the slot of a connection that went is
               given back (a later upgrade gets 101, not 503)
  one-wake     by default a push wakes its hibernated connection once: it
               hibernates again as soon as its mailbox is empty, with no
               idle timer to wake it a second time (--workers 1, the
               observer's count of fibers resumed)
  head-timer   the contract's "a request head slower than 10 s in total:
               408" is timed from the head's first byte: a connection that
               dribbles a head gets 408 then EOF, while one opened at the same
               moment that stays silent past those 10 s and then sends a
               whole head is answered (its keep-alive wait is not a slow head)

127.0.0.1 only; the gateway is stopped by its PID.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/pushbench"))
from wsclient import Http, Ws, WsClosed  # noqa: E402

FAILED = []


def check(name, cond, why=""):
    print(f"{'ok' if cond else 'not ok'} - {name}{'' if cond else ': ' + str(why)}", flush=True)
    if not cond:
        FAILED.append(name)


def eventually(f, timeout=20.0):
    """f() until it is true or timeout; the last value."""
    end = time.monotonic() + timeout
    while True:
        v = f()
        if v or time.monotonic() > end:
            return v
        time.sleep(0.02)


class Gateway:
    def __init__(self, exe, *opts):
        self.proc = subprocess.Popen([exe, "--port", "0", "--bind", "127.0.0.1", *opts], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.stop(signal.SIGKILL)
            raise SystemExit(f"no 'listening on' line but {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def ws(self, user):
        w = Ws(self.port, user)
        w.send_text("hello?")  # served: registered (see contract_test.py)
        r = w.recv_text()
        assert r.startswith("error "), r
        return w

    def stats(self):
        return json.loads(Http(self.port).request("GET", "/stats")[2])

    def push(self, kind, name, body, h=None):
        st, _, b = (h or Http(self.port)).request("POST", f"/push/{kind}/{name}", body.encode())
        return json.loads(b)["delivered"] if st == 200 else -st


def options(exe):
    for bad in (["--ping-interval-ms", "0"], ["--ping-interval-ms", "x"], ["--max-message-bytes", "-1"],
                ["--max-message-bytes"], ["--ping-interval-ms", "5", "--ping-interval-ms", "5"],
                ["--first-data-timeout-ms", "100"], ["--max-connections", "0"], ["--bind", ""]):
        p = subprocess.run([exe, "--port", "0", *bad], capture_output=True, text=True, timeout=10)
        check(f"{' '.join(bad)}: exit 2 and a message", p.returncode == 2 and p.stderr.strip() != "",
              f"exit {p.returncode} {p.stderr!r}")
    p = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    check("--help: usage on stdout, exit 0", p.returncode == 0 and "--ping-interval-ms" in p.stdout
          and "--max-message-bytes" in p.stdout, f"{p.returncode} {p.stdout!r}")
    g = Gateway(exe, "--max-message-bytes", "100")
    try:
        check("--max-message-bytes 100: a 100-byte push is taken", g.push("user", "u", "x" * 100) == 0)
        check("--max-message-bytes 100: a 101-byte push is 413", g.push("user", "u", "x" * 101) == -413)
        w = g.ws("u")
        w.send_text("join " + "r" * 95)  # 100 bytes: an answer
        check("--max-message-bytes 100: a 100-byte message is served", w.recv_text().startswith("error bad room"))
        w.send_text("join " + "r" * 96)
        try:
            while True:
                op, data = w.recv(timeout=5)
                if op == 8:
                    break
            code = int.from_bytes(data[:2], "big")
        except (WsClosed, TimeoutError) as e:
            code = str(e)
        check("--max-message-bytes 100: a 101-byte message is closed with 1009", code == 1009, code)
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def lifecycle(exe):
    g = Gateway(exe)
    try:
        h = Http(g.port)
        a = g.ws("ann")
        for cmd, want in (("join", "error bad room"), ("join bad!room", "error bad room"), ("say lobby", "error usage"),
                          ("say", "error usage"), ("", "error "), ("JOIN lobby", "error unknown")):
            a.send_text(cmd)
            got = a.recv_text()
            check(f"{cmd!r} -> {want}...", got.startswith(want), got)
        a.send_text("join lobby")
        check("the connection still serves after bad commands", a.recv_text() == "ok join lobby")
        fresh = [Ws(g.port, "fresh") for _ in range(20)]  # nothing sent: only the 101 read
        check("a push sent once the 101 was read reaches the connection",
              g.push("user", "fresh", "first", h) == 20 and all(w.recv_text() == "first" for w in fresh))
        for w in fresh:
            w.sock.close()
        before = g.stats()["pushed"]
        a.send_text("join lobby2")
        a.recv_text()
        a.send_text("say lobby hi")
        check("say arrives", a.recv_text() == "lobby ann hi")
        check("push arrives", g.push("user", "ann", "p", h) == 1 and a.recv_text() == "p")
        check("pushed counts say and push frames, not ok/error replies", g.stats()["pushed"] == before + 2,
              g.stats())
        a.sock.close()
        check("a closed connection leaves presence and its rooms",
              eventually(lambda: g.stats() == dict(g.stats(), connections=0, users=0, rooms=0)), g.stats())
        check("then a push to its user delivers 0", g.push("user", "ann", "x", h) == 0)
        check("and a push to its room delivers 0", g.push("room", "lobby", "x", h) == 0)
        # A reconnect storm: 20 users x 10 devices, each device connects,
        # joins, and goes, three rounds; the last round stays.
        for rnd in range(3):
            conns = []
            for u in range(20):
                for d in range(10):
                    w = g.ws(f"user{u}")
                    w.send_text(f"join room{u % 4}")
                    assert w.recv_text() == f"join room{u % 4}".replace("join", "ok join")
                    conns.append(w)
            if rnd < 2:
                for w in conns:
                    w.sock.close()
        s = eventually(lambda: g.stats()["connections"] == 200 and g.stats())
        check("after the storm: 200 connections, 20 users, 4 rooms",
              s and s["users"] == 20 and s["rooms"] == 4, g.stats())
        check("a push to a user reaches its 10 devices", g.push("user", "user7", "u7", h) == 10)
        check("a room push reaches its 50 members", g.push("room", "room3", "r3", h) == 50)
        got_u = sum(1 for w in conns[70:80] if w.recv_text() == "u7")
        check("each device of user7 got its push", got_u == 10, got_u)
        got_r = sum(1 for u in range(3, 20, 4) for w in conns[u * 10:u * 10 + 10] if w.recv_text() == "r3")
        check("each member of room3 got the room push", got_r == 50, got_r)
        for w in conns:
            w.sock.close()
        check("all gone: stats back to 0",
              eventually(lambda: g.stats() == dict(g.stats(), connections=0, users=0, rooms=0)), g.stats())
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def concurrent(exe):
    g = Gateway(exe)
    try:
        devices = [g.ws("dana") for _ in range(3)]
        for w in devices:
            w.send_text("join news")
            assert w.recv_text() == "ok join news"
        n = 300
        delivered = []

        def pusher(kind, name, tag):
            h = Http(g.port)
            for i in range(n):
                delivered.append(g.push(kind, name, f"{tag}{i}", h))
        ts = [threading.Thread(target=pusher, args=a) for a in (("user", "dana", "u"), ("room", "news", "r"))]
        for t in ts:
            t.start()
        got = [[w.recv_text() for _ in range(2 * n)] for w in devices]
        for t in ts:
            t.join()
        check("delivered adds up to the frames that arrived", sum(delivered) == 2 * n * 3, sum(delivered))
        for k, frames in enumerate(got):
            us = [f for f in frames if f.startswith("u")]
            rs = [f for f in frames if f.startswith("r")]
            check(f"device {k}: every user push, in the order accepted", us == [f"u{i}" for i in range(n)])
            check(f"device {k}: every room push, in the order accepted", rs == [f"r{i}" for i in range(n)])
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def hibernated(exe):
    g = Gateway(exe, "--idle-hibernate-ms", "10", "--ping-interval-ms", "300")
    try:
        live, dead = g.ws("live"), g.ws("dead")
        live.send_text("join quiet")
        check("join while hibernating between frames", live.recv_text() == "ok join quiet")
        stop = time.monotonic() + 2.0
        ok = True
        pushes = 0
        while time.monotonic() < stop:  # idle gaps far longer than 10 ms: it sleeps in between
            time.sleep(0.1)
            pushes += 1
            if g.push("user", "live", f"p{pushes}") != 1 or live.recv_text(timeout=5) != f"p{pushes}":
                ok = False
                break
        check("a hibernating connection gets every push (and answers pings meanwhile)", ok, pushes)
        check("a room push wakes it too", g.push("room", "quiet", "q") == 1 and live.recv_text() == "q")
        try:
            while True:
                op, data = dead.recv(timeout=5, auto_pong=False)
                if op == 8:
                    break
            code = int.from_bytes(data[:2], "big")
        except (WsClosed, TimeoutError) as e:
            code = str(e)
        check("a silent hibernating connection is closed with 4000", code == 4000, code)
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def slow_room(exe):
    g = Gateway(exe)
    try:
        slow = Ws(g.port, "slowpoke", rcvbuf=4096)
        slow.send_text("join feed")  # its answer is read with the rest: never
        reader = g.ws("reader")
        reader.send_text("join feed")
        check("the reader joins", reader.recv_text() == "ok join feed")
        pre = []  # until the slow member's join is served, a room push reaches the reader alone

        def both():
            pre.append(f"first{len(pre)}")
            return g.push("room", "feed", pre[-1]) == 2
        check("both are members", eventually(both, 10))
        big = "z" * 60000
        h = Http(g.port)
        sent, delivered = 0, 2
        got = []

        def read_all():
            try:
                while not got or got[-1] != "after4":
                    got.append(reader.recv_text(timeout=15))
            except (TimeoutError, WsClosed):
                pass
        t = threading.Thread(target=read_all)
        t.start()
        while delivered == 2 and sent < 400:
            delivered = g.push("room", "feed", f"{sent}:{big}", h)
            sent += 1
        check("the slow member leaves the room: a later room push delivers 1", delivered == 1, delivered)
        for i in range(5):
            g.push("room", "feed", f"after{i}", h)
        stats = g.stats()
        check("dropped counts it", stats["dropped"] == 1, stats)
        code = None
        try:
            while True:
                op, data = slow.recv(timeout=15)
                if op == 8:
                    code = int.from_bytes(data[:2], "big")
                    break
        except (WsClosed, TimeoutError) as e:
            code = str(e)
        check("the slow member gets close 1008", code == 1008, code)
        t.join()
        want = pre + [f"{i}:{big}" for i in range(sent)] + [f"after{i}" for i in range(5)]
        check("the reader got every room frame, in order", got == want, f"{len(got)} of {len(want)}")
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def limit(exe):
    g = Gateway(exe, "--max-connections", "2")
    try:
        a, b = g.ws("a"), g.ws("b")
        try:
            Ws(g.port, "c")
            third = "101"
        except ConnectionError as e:
            third = str(e)
        check("a third upgrade is refused with 503", "503" in third, third)
        a.sock.close()

        def upgrade():
            try:
                return g.ws("c")
            except ConnectionError:
                return None
        c = eventually(upgrade, 10)
        check("after one went, an upgrade gets 101 again", c is not None)
        check("and it takes pushes", c is not None and g.push("user", "c", "hi") == 1 and c.recv_text() == "hi")
        b.sock.close()
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


class Observer:
    """A client of the node's observer socket (docs/observer-protocol.md)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(30)
        self.s.connect(path)
        self.f = self.s.makefile("rw")

    def ask(self, req, **fields):
        self.f.write(json.dumps({"v": 1, "req": req, **fields}) + "\n")
        self.f.flush()
        r = json.loads(self.f.readline())
        assert r.get("ok"), r
        return r["result"]


def one_wake(exe):
    n = 100
    path = os.path.join(tempfile.mkdtemp(prefix="push_gateway_test"), "observer.sock")
    g = Gateway(exe, "--workers", "1", "--observer", path)
    try:
        conns = [g.ws(f"w{i}") for i in range(n)]
        obs = Observer(eventually(lambda: os.path.exists(path) and path))

        def asleep():
            ps = obs.ask("processes", status="hibernated", limit=100000)["processes"]
            return sum(1 for p in ps if p.get("protocol") == "websocket") == n

        def switches():
            # A batched send (node_options::batch_sends) resumes its sender
            # once more when the batch is flushed: a resumption, not a wake-up.
            ws = obs.ask("overview")["workers"]
            return sum(w["switches"] - w["sends_batched"] for w in ws)

        check("every connection hibernates once idle", eventually(asleep))
        h = Http(g.port)
        h.request("GET", "/healthz")  # the pusher's connection is up before counting
        before = switches()
        for i in range(n):
            g.push("user", f"w{i}", f"p{i}", h)
        check("every pushed frame arrives", all(w.recv_text() == f"p{i}" for i, w in enumerate(conns)))
        check("and every connection hibernates again", eventually(asleep))
        resumed = switches() - before
        # Per push: the pusher's HTTP process once, the connection once (an
        # idle timer would add a second); the observer's own questions and
        # the pusher's idle timer are a few more.
        check(f"{n} pushes resumed fewer than {n * 5 // 2} fibers", resumed < n * 5 // 2, resumed)
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def head_timer(exe):
    g = Gateway(exe)
    try:
        slow = socket.create_connection(("127.0.0.1", g.port), timeout=30)
        quiet = socket.create_connection(("127.0.0.1", g.port), timeout=30)
        t0 = time.monotonic()
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        got = b""
        while True:  # until EOF: the 408 must be the last bytes
            try:
                d = slow.recv(4096)
            except OSError:
                break
            if not d:
                break
            got += d
        took = time.monotonic() - t0
        check("a head dribbled for 10 s: 408, then close", got.startswith(b"HTTP/1.1 408")
              and got.count(b"HTTP/1.1") == 1, f"after {took:.1f}s: {got[:60]!r}")
        check("not before 10 s", took >= 9.5, took)
        # The quiet connection was opened with the slow one, more than 10 s ago.
        quiet.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while b"\r\n\r\nok" not in reply:
            try:
                d = quiet.recv(4096)
            except OSError:
                break
            if not d:
                break
            reply += d
        check("a connection silent past 10 s, then a whole head: answered 200, not 408",
              reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"ok"), reply[:60])
        slow.close()
        quiet.close()
    finally:
        rc = g.stop()
    check("drains and exits 0", rc == 0, rc)


def main():
    cases = {"options": options, "lifecycle": lifecycle, "concurrent": concurrent, "hibernated": hibernated,
             "slow-room": slow_room, "limit": limit, "one-wake": one_wake, "head-timer": head_timer}
    if len(sys.argv) != 3 or sys.argv[1] not in cases:
        sys.exit(__doc__)
    cases[sys.argv[1]](sys.argv[2])
    print(f"{'FAILED' if FAILED else 'PASSED'}: {len(FAILED)} failed", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
