#!/usr/bin/env python3
"""Checks a push gateway against push gateway protocol v1, line by line.

    contract_test.py [--env K=V ...] -- GATEWAY_COMMAND [ARGS...]

The command is started (several times, with different options appended:
--port 0 and the options under test), on 127.0.0.1 only; every process is
stopped by its PID. Python 3 standard library only: the WebSocket client is
written here so that frames can be malformed on purpose. Prints `ok - NAME` or
`not ok - NAME: WHY` per check and exits 1 if any failed. Takes ~20 s (the
408 check waits out the 10 s head timeout).
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wsclient import Http, Ws, WsClosed  # noqa: E402

FAILED = []


def check(name, cond, why=""):
    if cond:
        print(f"ok - {name}", flush=True)
    else:
        FAILED.append(name)
        print(f"not ok - {name}: {why}", flush=True)


class Gateway:
    def __init__(self, cmd, env, *opts):
        self.proc = subprocess.Popen(cmd + ["--port", "0", *opts], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.stop()
            raise SystemExit(f"gateway did not print 'listening on ADDR:PORT' but {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def ws(self, user, **kw):
        """A connection that has answered a command: the protocol does not
        say that a push sent right after the 101 reaches it, only that one
        sent after the server served it does."""
        ws = Ws(self.port, user, **kw)
        ws.send_text("hello?")
        reply = ws.recv_text()
        if not reply.startswith("error "):
            raise SystemExit(f"an unknown command was answered {reply!r}, not 'error <reason>'")
        return ws

    def http(self):
        return Http(self.port)


def expect_close(ws, code, name, timeout=5.0, auto_pong=True):
    try:
        while True:
            op, data = ws.recv(timeout=timeout, auto_pong=auto_pong)
            if op == 8:
                got = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
                return check(name, got == code, f"close code {got}, want {code}")
    except WsClosed as e:
        check(name, False, f"connection ended without a close frame ({e})")
    except TimeoutError:
        check(name, False, f"no close {code} within {timeout}s")


def command_line(cmd, env):
    for bad in (["--port", "0", "--no-such-option", "1"], ["--port", "abc"], ["--port", "0", "--workers", "x"]):
        p = subprocess.run(cmd + bad, env=env, capture_output=True, text=True, timeout=10)
        check(f"command line {' '.join(bad)}: exit 2 and a message",
              p.returncode == 2 and p.stderr.strip() != "", f"exit {p.returncode}, stderr {p.stderr!r}")


def http_checks(g):
    h = g.http()
    st, hd, body = h.request("GET", "/healthz")
    check("GET /healthz: 200 ok", st == 200 and body == b"ok", f"{st} {body!r}")
    st, hd, body = h.request("GET", "/stats")
    try:
        s = json.loads(body)
        fields = all(isinstance(s.get(k), int) for k in ("connections", "users", "rooms", "pushed", "dropped"))
    except ValueError:
        fields = False
    check("GET /stats: 200 and the integer fields", st == 200 and fields, f"{st} {body!r}")
    st, hd, body = h.request("POST", "/push/user/nobody", b"hello")
    check("push to an offline user: 200 application/json delivered 0",
          st == 200 and hd.get("content-type", "").startswith("application/json")
          and json.loads(body) == {"delivered": 0}, f"{st} {hd} {body!r}")
    for method, path, want in (("GET", "/nope", 404), ("GET", "/push/user/a", 405), ("POST", "/healthz", 405),
                               ("DELETE", "/stats", 405), ("POST", "/ws", 405),
                               ("POST", "/push/user/bad!name", 400), ("POST", "/push/room/" + "r" * 65, 400),
                               ("GET", "/ws?user=bad%20name", 400)):
        st, _, _ = g.http().request(method, path, b"x" if method == "POST" else None)
        check(f"{method} {path[:40]}: {want}", st == want, f"got {st}")
    st, _, _ = g.http().request("POST", "/push/user/a", b"x" * 65537)
    check("push body over max-message-bytes: 413", st == 413, f"got {st}")
    st, _, _ = h.request("POST", "/push/user/a", b"\xff\xfe bad")
    check("push body not UTF-8: 400", st == 400, f"got {st}")
    st, _, _ = g.http().request("GET", "/healthz", headers={"X-Big": "y" * 9000})
    check("request head over 8 KiB: 431", st == 431, f"got {st}")
    c = g.http()
    c.sock.sendall(b"GARBAGE\r\n\r\n")
    rest = c.read_all()
    check("malformed request: 400, last bytes before close", rest.startswith(b"HTTP/1.1 400")
          and rest.count(b"HTTP/1.1") == 1, f"{rest[:60]!r}")
    # Keep-alive and pipelining: three requests in one write, answered in order.
    c = g.http()
    c.sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                   b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
                   b"POST /push/user/nobody HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
    got = [c.response()[0] for _ in range(3)]
    check("pipelined requests answered in order", got == [200, 404, 200], f"{got}")
    st, _, _ = c.request("GET", "/healthz")
    check("keep-alive: the connection serves a fourth request", st == 200, f"got {st}")


def ws_checks(g):
    a1, a2, b = g.ws("alice"), g.ws("alice"), g.ws("bob")
    h = g.http()
    st, _, body = h.request("POST", "/push/user/alice", "héllo".encode())
    check("push to a user with two devices: delivered 2", st == 200 and json.loads(body) == {"delivered": 2},
          f"{st} {body!r}")
    check("each device gets the push as a text frame", a1.recv_text() == "héllo" and a2.recv_text() == "héllo")
    for i in range(200):
        h.request("POST", "/push/user/bob", f"m{i}".encode())
    got = [b.recv_text() for _ in range(200)]
    check("pushes arrive in the order accepted", got == [f"m{i}" for i in range(200)], f"{got[:5]}...")
    a1.send_text("join lobby")
    check("join -> ok join", a1.recv_text() == "ok join lobby")
    a1.send_text("join lobby")
    check("joining twice -> ok join", a1.recv_text() == "ok join lobby")
    st, _, body = h.request("POST", "/push/room/lobby", b"to the room")
    check("room push after ok join reaches the member", json.loads(body) == {"delivered": 1}
          and a1.recv_text() == "to the room", f"{body!r}")
    b.send_text("say lobby hi there")
    check("say from a non-member reaches the members", a1.recv_text() == "lobby bob hi there")
    a1.send_text("say lobby me too")
    check("say reaches the sender when a member", a1.recv_text() == "lobby alice me too")
    a1.send_text("dance")
    check("unknown command -> error <reason>", a1.recv_text().startswith("error "))
    a1.send_text("leave lobby")
    check("leave -> ok leave", a1.recv_text() == "ok leave lobby")
    a1.send_text("leave lobby")
    check("leaving a room not joined -> ok leave", a1.recv_text() == "ok leave lobby")
    a1.send_frame(1, b"jo", fin=False)
    a1.send_frame(0, b"in fr", fin=False)
    a1.send_frame(9, b"mid")  # a control frame between fragments is allowed
    a1.send_frame(0, b"ag", fin=True)
    op, data = a1.recv(auto_pong=False)
    check("ping answered with pong, same payload", op == 10 and data == b"mid", f"{op} {data!r}")
    check("fragmented message reassembled", a1.recv_text() == "ok join frag")
    s = json.loads(h.request("GET", "/stats")[2])
    check("stats count connections, users, rooms, pushed", s["connections"] == 3 and s["users"] == 2
          and s["rooms"] == 1 and s["pushed"] >= 205, f"{s}")
    bad = g.ws("carol")
    bad.send_frame(2, b"\x00\x01")
    expect_close(bad, 1003, "binary frame -> close 1003")
    bad = g.ws("carol")
    bad.send_frame(1, b"\xc3\x28")
    expect_close(bad, 1007, "text that is not UTF-8 -> close 1007")
    bad = g.ws("carol")
    bad.send_frame(1, b"join " + b"x" * 70000)
    expect_close(bad, 1009, "message over max-message-bytes -> close 1009")
    # Slow consumer: a client that reads nothing, with small socket buffers;
    # bob reads on and must lose nothing.
    slow = g.ws("slowpoke", rcvbuf=4096)
    big = "z" * 60000
    delivered = 0
    for i in range(400):
        st, _, body = h.request("POST", "/push/user/slowpoke", big.encode())
        h.request("POST", "/push/user/bob", f"n{i}".encode())
        delivered = json.loads(body)["delivered"]
        if delivered == 0:
            break
    check("slow consumer is dropped (later pushes deliver 0)", delivered == 0)
    expect_close(slow, 1008, "slow consumer gets close 1008", timeout=15)
    got = [b.recv_text() for _ in range(i + 1)]
    check("nothing queued for another connection is lost", got == [f"n{k}" for k in range(i + 1)])
    s = json.loads(h.request("GET", "/stats")[2])
    check("stats count the slow consumer in dropped", s["dropped"] == 1, f"{s}")
    return a1


def heartbeat_checks(cmd, env):
    g = Gateway(cmd, env, "--ping-interval-ms", "500", "--max-connections", "2")
    try:
        live, dead = g.ws("live"), g.ws("dead")
        st, _, _ = g.http().request("GET", "/ws?user=third", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        check("upgrade past --max-connections: 503", st == 503, f"got {st}")
        op, _ = live.recv(timeout=2, auto_pong=False)
        check("the server pings every interval", op == 9, f"opcode {op}")
        live.send_frame(10, b"")
        alive = [True]

        def answer_pings():  # live answers while dead stays silent
            end = time.monotonic() + 2.5
            try:
                while time.monotonic() < end:
                    live.recv(timeout=end - time.monotonic())
            except TimeoutError:
                pass
            except (WsClosed, OSError):
                alive[0] = False
        t = threading.Thread(target=answer_pings)
        t.start()
        expect_close(dead, 4000, "silent for two ping intervals -> close 4000", timeout=5, auto_pong=False)
        t.join()
        alive = alive[0]
        check("a connection answering pings stays open", alive)
    finally:
        g.stop()


def drain_checks(cmd, env):
    g = Gateway(cmd, env)
    ws = g.ws("leaving")
    g.proc.send_signal(signal.SIGTERM)
    expect_close(ws, 1001, "SIGTERM: every WebSocket gets close 1001")
    try:
        ws.send_frame(8, (1001).to_bytes(2, "big"))
    except OSError:
        pass
    rc = g.stop(signal.SIGTERM)
    check("SIGTERM: exit 0", rc == 0, f"exit {rc}")


def timeout_check(g):
    c = g.http()
    c.sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
    t0 = time.monotonic()
    rest = c.read_all(timeout=20)
    took = time.monotonic() - t0
    check("a head slower than 10 s: 408, then close", rest.startswith(b"HTTP/1.1 408")
          and rest.count(b"HTTP/1.1") == 1, f"after {took:.1f}s: {rest[:60]!r}")


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    while args and args[0] == "--env":
        k, _, v = args[1].partition("=")
        env[k] = v
        args = args[2:]
    if not args or args[0] != "--" or len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = args[1:]
    command_line(cmd, env)
    g = Gateway(cmd, env)
    try:
        t = threading.Thread(target=timeout_check, args=(g,))
        t.start()
        http_checks(g)
        ws_checks(g)
        t.join()
    finally:
        g.stop()
    heartbeat_checks(cmd, env)
    drain_checks(cmd, env)
    print(f"{'FAILED' if FAILED else 'PASSED'}: {len(FAILED)} failed", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
