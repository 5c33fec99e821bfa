#!/usr/bin/env python3
"""Slow and hostile peers against echo_server, while honest clients measure.

    hostile_peers_test.py ECHO_SERVER CONNBENCH

The server runs with --max-connections 1,500 and an observer socket. First
200 honest connections (connbench, every byte checked) run alone; then the
same honest load runs again while, at once:
  - 300 clients write 1 MiB each and never read (the server's sends park on
    full sockets),
  - 1,000 clients connect and send nothing (the server runs with
    --first-data-timeout-ms 15000: it must close each of them itself),
  - (before those) 200 clients send a line and half-close (shutdown(SHUT_WR))
    without ever reading the answer: the server must end each of them,
  - once the attackers and the honest clients fill max_connections, a flood connects at 5,000/s
    for 10 s and hangs up at once (it waits in the backlog, or overflows it).
Passes when the honest load loses nothing (no failed connect, mismatch or
disconnect) and is not starved (its p99 under attack within 10x (+50 ms) of
its p99 alone); the server's RSS stays under 96 MiB; the observer answers
every `overview` without a stall (within 1 s); the server closes every
silent client between 15 and 25 s
after it connected; and once the attackers leave, the connection and actor
counts return to where they were. Prints one HOSTILE line with the figures
(the p99s and the observer's worst answer are figures: the bounds above only
catch a starved client or a stalled observer, so that the test passes on a
busy machine; how fast they are is for benchmarks). Bounded in time; every
process it starts is stopped by its PID.
"""
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools"))
import herdlib  # noqa: E402

HONEST = 200
MAX_CONNECTIONS = 1500  # the honest clients and the attackers who hold a socket
RSS_BOUND_KB = 96 * 1024
SILENT_TIMEOUT_S = 15  # longer than the attack: the silent clients hold their slots through it


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def ask(path, req, **fields):
    """(the request's result, milliseconds)."""
    reply, ms = herdlib.ask(path, req, timeout=5, **fields)
    return reply["result"], ms


rss_kb = herdlib.rss_less_lazyfree_kb


def honest_start(connbench, port, pid, seconds):
    return subprocess.Popen([connbench, "--host", "127.0.0.1", "--port", str(port), "--connections", str(HONEST),
                             "--payload", "64", "--rate", "5000", "--warmup", "1", "--duration", str(seconds),
                             "--server-pid", str(pid)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def honest_result(p, seconds):
    out, _ = p.communicate(timeout=seconds + 60)
    line = next((l for l in out.splitlines() if l.startswith("RESULT")), None)
    if not line:
        fail("connbench printed no RESULT")
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def connect(port):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def silent_closed(socks, since, limit_s):
    """Waits until the server has closed each socket (EOF or reset), at most
    until `since` + limit_s: (how many it closed, seconds from `since` to the first close)."""
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed, first = 0, float("inf")
    while sel.get_map() and time.monotonic() < since + limit_s:
        for key, _ in sel.select(timeout=0.2):
            try:
                data = key.fileobj.recv(1)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                continue  # echo of nothing: cannot happen, but is not a close
            sel.unregister(key.fileobj)
            closed += 1
            first = min(first, time.monotonic() - since)
    sel.close()
    return closed, first


def main():
    server, connbench = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="hostile_")
    sock = os.path.join(tmp, "node.sock")
    srv = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--workers", "2",
                            "--max-connections", str(MAX_CONNECTIONS), "--first-data-timeout-ms",
                            str(SILENT_TIMEOUT_S * 1000), "--observer", sock],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    held = []
    try:
        port = herdlib.port_of(srv)
        base_actors = ask(sock, "overview")[0]["actors"]
        rss_before = rss_kb(srv.pid)

        alone = honest_result(honest_start(connbench, port, srv.pid, 5), 5)

        stop = threading.Event()
        samples = {"flood": 0}

        def flood():
            # 5,000 connects a second, each closed at once (50 per 10 ms tick).
            end = time.monotonic() + 10
            while time.monotonic() < end and not stop.is_set():
                t0 = time.monotonic()
                for _ in range(50):
                    connect(port).close()
                    samples["flood"] += 1
                time.sleep(max(0.0, 0.01 - (time.monotonic() - t0)))  # the client's pace (the workload)

        # Half-closed clients first: echo_server answers, sees the end of
        # input and ends each connection, though nobody reads its answer.
        half = []
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"half-closed\n")
            s.shutdown(socket.SHUT_WR)
            half.append(s)
        end = time.monotonic() + 10
        while ask(sock, "listeners")[0]["listeners"][0]["connections"] > 0:
            if time.monotonic() > end:
                fail("the half-closed connections were not ended by the server")
            time.sleep(0.1)  # the poll's interval
        for s in half:
            s.close()

        # The attackers hold their sockets; the honest run starts once they are in.
        blob = b"x" * (1 << 20)
        for _ in range(300):  # never read
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setblocking(False)
            try:
                s.send(blob)
            except BlockingIOError:
                pass
            held.append(s)
        silent_since = time.monotonic()
        silent = [connect(port) for _ in range(1000)]  # connect, send nothing
        held.extend(silent)
        hp = honest_start(connbench, port, srv.pid, 10)
        # The flood starts once every held and honest connection is in: from
        # then on max_connections is reached and the flood waits in the backlog.
        end = time.monotonic() + 20
        while ask(sock, "listeners")[0]["listeners"][0]["connections"] < MAX_CONNECTIONS:
            if time.monotonic() > end:
                fail("the attackers and honest clients did not all get in")
            time.sleep(0.1)  # the poll's interval
        # Stopped before the test closes its sockets: the watcher's process holds copies.
        watch = herdlib.watcher(sock, srv.pid)
        flooder = threading.Thread(target=flood)
        flooder.start()
        attacked = honest_result(hp, 10)
        stop.set()
        flooder.join(30)
        watched = watch.stop()
        peak_rss = max(kb for _, _, kb in watched)
        worst_obs = max(ms for _, ms, _ in watched)
        closed_by_server, first_close_s = silent_closed(silent, silent_since, SILENT_TIMEOUT_S + 10)
        for s in held:
            s.close()
        held.clear()
        end = time.monotonic() + 15
        while time.monotonic() < end:
            ov = ask(sock, "overview")[0]
            conns = ask(sock, "listeners")[0]["listeners"][0]["connections"]
            if ov["actors"] == base_actors and conns == 0:
                break
            time.sleep(0.2)  # the poll's interval
        print(f"HOSTILE honest={HONEST} p99_alone_us={alone['p99_us']} p99_attacked_us={attacked['p99_us']} "
              f"rt_per_s_alone={alone['rt_per_s']} rt_per_s_attacked={attacked['rt_per_s']} "
              f"bytes_checked={int(alone.get('bytes_checked', 0)) + int(attacked.get('bytes_checked', 0))} "
              f"flood_connects={samples['flood']} rss_before_kb={rss_before} peak_rss_kb={peak_rss} "
              f"rss_after_kb={rss_kb(srv.pid)} observer_worst_ms={worst_obs:.1f} "
              f"actors_before={base_actors} actors_after={ov['actors']} connections_after={conns} "
              f"silent_closed_by_server={closed_by_server} silent_first_closed_s={first_close_s:.1f}", flush=True)
        for name, r in (("alone", alone), ("attacked", attacked)):
            if r["failed"] != "0" or r["mismatches"] != "0" or r["disconnects"] != "0":
                fail(f"the honest clients lost something ({name}): {r}")
        if float(attacked["p99_us"]) > 10 * float(alone["p99_us"]) + 50000:
            fail(f"honest p99 went from {alone['p99_us']} us to {attacked['p99_us']} us under attack (starved)")
        herdlib.note_unchecked_memory()
        if not herdlib.SANITIZED and peak_rss > RSS_BOUND_KB:
            fail(f"the server's RSS reached {peak_rss} kB (bound {RSS_BOUND_KB} kB)")
        if closed_by_server != len(silent) or first_close_s < SILENT_TIMEOUT_S - 0.5:
            fail(f"{closed_by_server} of {len(silent)} silent clients were closed by the server, the first "
                 f"{first_close_s:.1f} s after it connected (--first-data-timeout-ms {SILENT_TIMEOUT_S * 1000})")
        if worst_obs > 1000:
            fail(f"the observer took {worst_obs:.1f} ms to answer overview under attack (stalled)")
        if ov["actors"] != base_actors or conns != 0:
            fail(f"after the attack: {ov['actors']} actors (was {base_actors}), {conns} connections")
        srv.terminate()
        if srv.wait(timeout=20) != 0:
            fail("the server did not exit 0 after SIGTERM")
        print("PASS")
    finally:
        for s in held:
            s.close()
        if srv.poll() is None:
            srv.kill()
            srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
