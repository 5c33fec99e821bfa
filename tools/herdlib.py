"""What herd's Python load tests and benchmark scripts share: one observer
request, a server's resident memory, a watcher sampling both, and stopping
what they started by PID.

    sys.path.insert(0, "<repo>/tools"); from herdlib import ask, port_of, rss_less_lazyfree_kb, stop, watcher
"""
import json
import os
import multiprocessing
import re
import signal
import socket
import subprocess
import time


def ask(path, req, timeout=10, **fields):
    """One request on a fresh connection to a node's observer socket:
    (the whole reply, milliseconds it took)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(path)
        f = s.makefile("rw")
        t0 = time.monotonic()
        f.write(json.dumps({"v": 1, "req": req, **fields}) + "\n")
        f.flush()
        line = f.readline()
        ms = (time.monotonic() - t0) * 1000  # the node's answer, not Python's parsing of it
        return json.loads(line), ms
    finally:
        s.close()


def port_of(server):
    """The port an example server started with --port 0 and --observer says it
    listens on (its first line; the second, "observer on PATH", is read too).
    Raises RuntimeError with what it printed instead."""
    line = server.stdout.readline()
    if not line.startswith("listening on"):
        raise RuntimeError(f"the server did not start: {line!r}")
    server.stdout.readline()
    return int(line.strip().rsplit(":", 1)[1])


def rss_less_lazyfree_kb(pid):
    """Resident memory of a process less the pages it freed lazily (MADV_FREE)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"(\w+):\s+(\d+) kB", line)
            if m:
                fields[m.group(1)] = int(m.group(2))
    return fields.get("Rss", 0) - fields.get("LazyFree", 0)


def stop(*procs, timeout=15):
    """SIGTERM each still-running subprocess, then SIGKILL what outlives timeout."""
    for p in procs:
        if p is None or p.poll() is not None:
            continue
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class watcher:
    """Asks a node's observer for `overview` every `period` s and samples its
    RSS, from a process of its own: in the test's process the timings would
    include waits for Python's GIL while the test's own threads make load.
    stop() returns [(seconds since start, ms to answer or inf, rss_kb), ...]."""

    def __init__(self, sock, pid, period=0.2):
        ctx = multiprocessing.get_context("fork")  # before the caller starts threads
        self._stop = ctx.Event()
        self._rx, tx = ctx.Pipe(False)
        self._p = ctx.Process(target=self._run, args=(sock, pid, period, tx), daemon=True)
        self._p.start()

    def _run(self, sock, pid, period, tx):
        t0 = time.monotonic()
        out = []
        while not self._stop.is_set():
            try:
                _, ms = ask(sock, "overview", timeout=5)
            except (OSError, ValueError):
                ms = float("inf")  # no answer within 5 s
            out.append((time.monotonic() - t0, ms, rss_less_lazyfree_kb(pid)))
            time.sleep(period)
        tx.send(out)

    def stop(self):
        self._stop.set()
        out = self._rx.recv() if self._rx.poll(30) else []
        self._p.join(10)
        if self._p.is_alive():
            self._p.kill()
        return out


# Set by CTest in the sanitizer builds: shadow memory and the allocator's
# quarantine make RSS meaningless there, so load tests report the server's
# memory but check it against their bounds only when this is False.
SANITIZED = os.environ.get("HERD_SANITIZED") == "1"


def note_unchecked_memory():
    if SANITIZED:
        print("memory bounds not checked: sanitizer build (HERD_SANITIZED=1)", flush=True)
