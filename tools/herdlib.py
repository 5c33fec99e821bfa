"""What herd's Python load tests and benchmark scripts share: one observer
request, a server's resident memory, and stopping what they started by PID.

    sys.path.insert(0, "<repo>/tools"); from herdlib import ask, rss_less_lazyfree_kb, stop
"""
import json
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
        reply = json.loads(f.readline())
        return reply, (time.monotonic() - t0) * 1000
    finally:
        s.close()


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
