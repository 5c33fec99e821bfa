#!/usr/bin/env python3
"""chat_server's flow control and room lifetime, run by ctest as separate processes.

    chat_flow_test.py burst PATH      20,000-line bursts to 20 members that read at their own pace lose
                                      nobody; a member that never reads is still cut off (by bytes)
    chat_flow_test.py rooms PATH      rooms end when empty: 1,200 JOINs from one client, then its
                                      disconnection, leave the process count at baseline; the 1,001st
                                      JOIN gets "ERROR too many rooms"
    chat_flow_test.py flood PATH      a client flooding a room of readers is slowed: the room's mailbox and
                                      the server's memory stay bounded, and a pair in another room gets through
    chat_flow_test.py long-line PATH  a refused over-long line leaves no 64 KiB buffer behind
    chat_flow_test.py neighbours PATH while a 2,000-member room fans out 600 lines, a pair in another
                                      room keeps talking and every JOIN there is answered "OK JOIN"
                                      (issue 14: a JOIN once timed out behind such a fan-out)
Everything is bounded in time and every process started is stopped by its PID. Figures are printed
as one "figure: name=value" line each.
"""
import json
import os
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from net_examples import LineClient, Server, broadcast, connect, eventually, fail, read_until_cut_off, recv_exact  # noqa: E402

DEADLINE_S = 120
# Under a sanitizer freed memory is held back (ASan's quarantine), so the
# server's RSS says little: memory figures are printed, not checked.
MEASURE_MEMORY = os.environ.get("HERD_SANITIZE_MODE", "none") in ("", "none")
SMALL = os.environ.get("HERD_TEST_SCALE") == "small"  # the sanitizer runs


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
        if not r.get("ok"):
            fail("observer %s: %r" % (req, r))
        return r


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    fail("no VmRSS for %d" % pid)



def small_client(port, rcvbuf):
    """A LineClient whose receive buffer is set before connecting, so the
    server's sends to it block after a few KiB."""
    c = LineClient.__new__(LineClient)
    c.s = socket.socket()
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    c.s.settimeout(10)
    c.s.connect(("127.0.0.1", port))
    c.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.buf = b""
    return c


def read_lines(c, n, deadline):
    """Reads n lines from c (whatever its pace); returns them."""
    out = []
    c.s.settimeout(max(1, deadline - time.monotonic()))
    while len(out) < n:
        while b"\n" not in c.buf:
            try:
                chunk = c.s.recv(1 << 16)
            except (ConnectionResetError, socket.timeout) as e:
                fail("a member reading at its own pace lost its connection after %d of %d lines: %r" %
                     (len(out), n, e))
            if not chunk:
                fail("a member reading at its own pace was disconnected after %d of %d lines (%r)" %
                     (len(out), n, c.buf[-200:]))
            c.buf += chunk
        *lines, c.buf = c.buf.split(b"\n")
        out += lines
    return out


def test_burst(path, members=10 if SMALL else 20, rounds=1 if SMALL else 3):
    srv = Server(path, "--workers", "2")
    try:
        # Members that read at their own pace, one after another: the room
        # fans the burst out faster than their connections write it.
        ms = [LineClient(srv.port) for _ in range(members)]
        for m in ms:
            m.send("JOIN burst\n")
            m.expect("OK JOIN burst")
        writer = LineClient(srv.port)
        n = 20000
        for r in range(rounds):
            writer.send("".join("MSG burst %d %05d\n" % (r, i) for i in range(n)))  # ~360 KB in one go
            deadline = time.monotonic() + DEADLINE_S
            for m in ms:
                got = read_lines(m, n, deadline)
                for i, ln in enumerate(got):
                    if ln != b"MSG burst %d %05d" % (r, i):
                        fail("round %d, line %d: got %r" % (r, i, ln))
        print("burst: %d x 20,000 lines to %d members: none lost" % (rounds, members), flush=True)

        # A member that never reads, more than 1 MiB behind its full socket:
        # cut off, while the room goes on for the reader.
        deaf, reader = small_client(srv.port, 4096), LineClient(srv.port)
        for m in (deaf, reader):
            m.send("JOIN deafroom\n")
            m.expect("OK JOIN deafroom")
        broadcast(LineClient(srv.port), "deafroom", [reader], n=1500, size=4000)  # ~6 MB
        data = read_until_cut_off(deaf, 30)
        if data.count(b"\n") >= 1500:
            fail("the deaf member got every line: it was never behind")
        print("burst: the member that never read was cut off after %d lines" % data.count(b"\n"), flush=True)
        if srv.stop() != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
    print("burst: ok")


def observed_server(path, tmp, *args):
    sock = os.path.join(tmp, "obs.sock")
    srv = Server(path, "--workers", "2", "--observer", sock, *args)
    eventually("the observer socket", lambda: os.path.exists(sock), 10)
    return srv, Observer(sock)


def test_rooms(path):
    tmp = tempfile.mkdtemp(prefix="chat_rooms_")
    srv, obs = observed_server(path, tmp)
    try:
        def actors():
            return obs.ask("overview")["result"]["actors"]
        base = actors()
        c = LineClient(srv.port)
        c.send("".join("JOIN r%d\n" % i for i in range(1200)))
        for i in range(1000):
            c.expect("OK JOIN r%d" % i)
        line = c.line()
        if not line.startswith("ERROR too many rooms"):
            fail("the 1,001st JOIN: want 'ERROR too many rooms...', got %r" % line)
        for i in range(1001, 1200):
            if not c.line().startswith("ERROR too many rooms"):
                fail("JOIN %d beyond the cap was not refused" % i)
        # The connection is still usable; LEAVE frees a place.
        c.send("LEAVE r0\nJOIN extra\n")
        c.expect("OK LEAVE r0")
        c.expect("OK JOIN extra")
        peak = actors()
        print("figure: rooms_peak_actors=%d baseline=%d" % (peak, base), flush=True)
        if peak < base + 1000:
            fail("1,000 rooms but only %d processes over the baseline" % (peak - base))
        c.s.close()
        eventually("the process count back at the baseline %d (now %d)" % (base, actors()), lambda: actors() <= base)
        # A room that ended is started afresh by its next member.
        d = LineClient(srv.port)
        d.send("JOIN r5\nMSG r5 again\n")
        d.expect("OK JOIN r5")
        d.expect("MSG r5 again")
        d.s.close()
        eventually("the process count back at the baseline after a second client", lambda: actors() <= base)
        if srv.stop() != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("rooms: ok")


def test_flood(path, seconds=4.0, readers=20):
    tmp = tempfile.mkdtemp(prefix="chat_flood_")
    srv, obs = observed_server(path, tmp)
    try:
        rss0 = rss_kb(srv.p.pid)
        members = [LineClient(srv.port) for _ in range(readers)]
        for m in members:
            m.send("JOIN flood\n")
            m.expect("OK JOIN flood")
        a, b = LineClient(srv.port), LineClient(srv.port)
        for x in (a, b):
            x.send("JOIN quiet\n")
            x.expect("OK JOIN quiet")

        stop = threading.Event()
        received = [0]

        def read_all():  # the flooded room's members, reading as fast as they can
            sel = selectors.DefaultSelector()
            for m in members:
                m.s.setblocking(False)
                sel.register(m.s, selectors.EVENT_READ)
            while not stop.is_set():
                for key, _ in sel.select(0.2):
                    try:
                        chunk = key.fileobj.recv(1 << 20)
                    except (BlockingIOError, ConnectionResetError):
                        continue
                    if not chunk:
                        sel.unregister(key.fileobj)
                    received[0] += len(chunk)
            sel.close()

        flooder = LineClient(srv.port)
        sent = [0]
        flood_end = time.monotonic() + seconds

        def flood():
            chunk = ("MSG flood %s\n" % ("z" * 20)).encode() * 2000
            try:
                while time.monotonic() < flood_end:
                    flooder.s.sendall(chunk)  # blocks when the server stops reading it
                    sent[0] += len(chunk)
            except OSError:
                pass

        threads = [threading.Thread(target=read_all), threading.Thread(target=flood)]
        for t in threads:
            t.start()
        # Meanwhile: the quiet pair, one round trip at a time, and samples.
        peak_rss, peak_room_mailbox, rounds = rss0, 0, 0
        deadline = time.monotonic() + DEADLINE_S
        while threads[1].is_alive() or rounds < 50:
            a.send("MSG quiet ping %d\n" % rounds)
            for x in (a, b):
                x.expect("MSG quiet ping %d" % rounds)
            rounds += 1
            peak_rss = max(peak_rss, rss_kb(srv.p.pid))
            r = obs.ask("processes", sort="mailbox", limit=1, name="chat.room.flood")["result"]["processes"]
            if r:
                peak_room_mailbox = max(peak_room_mailbox, r[0]["mailbox"])
            if time.monotonic() > deadline:
                fail("the quiet pair took too long")
        threads[1].join()
        flooder.s.close()
        sent_mb = sent[0] / 1e6
        print("figure: flood_seconds=%.1f flood_sent_mb=%.1f fanned_out_mb=%.1f quiet_rounds=%d" %
              (seconds, sent_mb, received[0] / 1e6, rounds), flush=True)
        print("figure: rss_before_kb=%d rss_peak_kb=%d room_mailbox_peak=%d" % (rss0, peak_rss, peak_room_mailbox),
              flush=True)
        # The room's mailbox holds at most 64 publishes in flight plus one
        # 64 KiB read of 31-byte lines from its one publisher.
        if peak_room_mailbox > 64 + 65536 // 31 + 100:
            fail("the flooded room's mailbox reached %d messages: the publisher was not slowed" % peak_room_mailbox)
        if MEASURE_MEMORY and peak_rss - rss0 > 150 * 1024:
            fail("the server grew by %d MB under the flood" % ((peak_rss - rss0) // 1024))
        # Once the flooder is gone, the room catches up.
        eventually("the flooded room's mailbox empty",
                   lambda: not any(p["mailbox"] for p in obs.ask("processes", sort="mailbox", limit=1,
                                                                  name="chat.room.flood")["result"]["processes"]))
        stop.set()
        threads[0].join()
        for m in members:
            m.s.setblocking(True)
        a.send("MSG quiet after\n")
        b.expect("MSG quiet after")
        if srv.stop() != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print("flood: ok")


def test_long_line(path, clients=200):
    srv = Server(path, "--workers", "2")
    try:
        conns = [LineClient(srv.port) for _ in range(clients)]
        for c in conns:  # every connection is set up before the baseline
            c.send("JOIN lobby\n")
            c.expect("OK JOIN lobby")
        rss0 = rss_kb(srv.p.pid)
        for c in conns:  # one at a time: a released buffer is reused by the next
            c.send("x" * 70000 + "\nJOIN lobby\n")
            if not c.line().startswith("ERROR line too long"):
                fail("a long line was not refused")
            c.expect("OK JOIN lobby")
        rss1 = rss_kb(srv.p.pid)
        per_client = (rss1 - rss0) * 1024 // clients
        print("figure: long_line_rss_growth_kb=%d per_client_bytes=%d" % (rss1 - rss0, per_client), flush=True)
        if MEASURE_MEMORY and per_client > 16 * 1024:
            fail("each client that sent a long line keeps %d bytes" % per_client)
        if srv.stop() != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
    print("long-line: ok")


def test_neighbours(path, members=500 if SMALL else 2000, lines=200 if SMALL else 600):
    """A big room's fan-out and its neighbours: every member gets every line,
    the pair next door gets every ping, and every JOIN next door gets OK (the
    server's JOIN waits at most 5 s for the room: a starved room answers
    "ERROR cannot join"). How long they waited is printed, not checked.
    Sized for this test's one Python thread reading every member (about 100k
    lines a second); tools/connbench --mode chat drives bigger rooms."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < members + 200:
        members = hard - 200
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    srv = Server(path, "--workers", "2")
    try:
        ms = [connect(srv.port) for _ in range(members)]
        for m in ms:  # every JOIN sent, then every reply read: no round trip each
            m.sendall(b"JOIN big\n")
        # Every member in before the first line: a JOIN the server has not
        # read yet (its connection not even accepted while the fan-out runs)
        # would come after the lines it is waiting for.
        for m in ms:
            m.settimeout(DEADLINE_S)
            if recv_exact(m, len(b"OK JOIN big\n")) != b"OK JOIN big\n":
                fail("a member's JOIN was not answered OK")
        text = "x" * 20
        per_line = len("MSG big 0000 %s\n" % text)
        want = {m.fileno(): per_line * lines for m in ms}
        got = {fd: 0 for fd in want}
        done = threading.Event()
        err = []

        def read_all():  # the members, reading as fast as they can
            sel = selectors.DefaultSelector()
            for m in ms:
                m.setblocking(False)
                sel.register(m, selectors.EVENT_READ)
            left, end = len(ms), time.monotonic() + DEADLINE_S
            while left and time.monotonic() < end:
                for key, _ in sel.select(timeout=1):
                    try:
                        chunk = key.fileobj.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        err.append("a member was disconnected")
                        done.set()
                        return
                    fd = key.fileobj.fileno()
                    got[fd] += len(chunk)
                    if got[fd] == want[fd]:
                        sel.unregister(key.fileobj)
                        left -= 1
            if left:
                worst = min(got.values())
                err.append("%d members did not get all %d lines within %d s (the furthest behind had %d of %d bytes)"
                           % (left, lines, DEADLINE_S, worst, per_line * lines))
            done.set()

        reader = threading.Thread(target=read_all)
        reader.start()
        a, b = LineClient(srv.port), LineClient(srv.port)
        for c in (a, b):
            c.send("JOIN side\n")
            c.expect("OK JOIN side")
        publisher = LineClient(srv.port)
        threading.Thread(target=publisher.send, daemon=True,
                         args=("".join("MSG big %04d %s\n" % (i, text) for i in range(lines)),)).start()
        pings, joins, n = [], [], 0
        while not done.is_set():
            t = time.monotonic()
            a.send("MSG side %d\n" % n)
            for c in (b, a):
                c.expect("MSG side %d" % n)
            pings.append(time.monotonic() - t)
            if n % 10 == 0:
                j = LineClient(srv.port)
                t = time.monotonic()
                j.send("JOIN side\n")
                got_line = j.line(timeout=30)
                if got_line != "OK JOIN side":
                    fail("a JOIN beside the fan-out got %r" % got_line)
                joins.append(time.monotonic() - t)
                j.s.close()
            n += 1
        reader.join()
        if err:
            fail(err[0])
        pings.sort()
        joins.sort()
        print("figure: neighbours members=%d lines=%d pings=%d ping_p50_ms=%.1f ping_max_ms=%.1f joins=%d "
              "join_max_ms=%.1f" % (members, lines, len(pings), 1000 * pings[len(pings) // 2], 1000 * pings[-1],
                                    len(joins), 1000 * joins[-1]), flush=True)
        if srv.stop(timeout=60) != 0:
            fail("exit code after SIGTERM")
    finally:
        srv.kill()
    print("neighbours: ok")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    tests = {"burst": test_burst, "rooms": test_rooms, "flood": test_flood, "long-line": test_long_line,
             "neighbours": test_neighbours}
    tests[sys.argv[1]](sys.argv[2])


if __name__ == "__main__":
    main()
