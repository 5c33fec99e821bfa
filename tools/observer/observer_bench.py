#!/usr/bin/env python3
"""What watching a node costs: echo throughput with `herd-observer top`
attached versus without, and the time to answer `processes --sort mailbox
--limit 20` at the load's connection count. A benchmark program, not a test.

    observer_bench.py [--build-dir build] [--connections 10000] [--reps 3] [--duration 10] [--flood N]

Server on core 0 (one worker), connbench on core 1; `top` runs in a detached
tmux session (80x24), as a user would run it, refreshing every second. The
runs alternate (without, with, without, ...). Prints one OBSBENCH line per
run and a median line with the ratio.

--flood N compares echo without observer clients against echo while N
clients flood the observer (each keeps 8 `processes --sort mailbox --limit
20` requests in flight, from one process on core 1), and times an
operator's `overview` meanwhile: what the observer's pacing bounds
(docs/observer-protocol.md, "Limits").
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FLOODER = r"""
import json, selectors, socket, sys, time
path, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
req = (json.dumps({"v": 1, "req": "processes", "sort": "mailbox", "limit": 20}) + "\n").encode()
sel = selectors.DefaultSelector()
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.setblocking(False)
    s.send(req * 8)
    sel.register(s, selectors.EVENT_READ)
    socks.append(s)
answered = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    for key, _ in sel.select(0.2):
        data = key.fileobj.recv(1 << 20)
        if not data:
            sel.unregister(key.fileobj)
            continue
        k = data.count(b"\n")
        answered += k
        if k:
            try:
                key.fileobj.send(req * k)
            except BlockingIOError:
                pass
print(f"answered={answered}", flush=True)
"""

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from herdlib import ask, stop  # noqa: E402


def one_run(a, with_top, rep):
    """with_top: top attached (or, with --flood, the flooding clients)."""
    b = a.build_dir
    tmp = tempfile.mkdtemp(prefix="obsbench_")
    sock = os.path.join(tmp, "node.sock")
    srv = subprocess.Popen(["taskset", "-c", "0", os.path.join(b, "examples/echo_server"), "--port", "0",
                            "--bind", "127.0.0.1", "--workers", "1", "--observer", sock],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    session = f"obsbench{os.getpid()}"
    cb = flood = None
    try:
        port = srv.stdout.readline().strip().rsplit(":", 1)[1]
        srv.stdout.readline()
        if with_top and a.flood:
            flood = subprocess.Popen(["taskset", "-c", "1", sys.executable, "-c", FLOODER, sock, str(a.flood),
                                      str(a.duration + 3 + a.connections / 5000 + 8)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        elif with_top:
            subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24",
                            os.path.join(b, "tools/observer/cli/herd-observer"), "--socket", sock, "top"], check=True)
        cb = subprocess.Popen(["taskset", "-c", "1", os.path.join(b, "tools/connbench/connbench"), "--host",
                               "127.0.0.1", "--port", port, "--connections", str(a.connections), "--payload", "64",
                               "--rate", "5000", "--warmup", "3", "--duration", str(a.duration),
                               "--server-pid", str(srv.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        # The processes query, timed by this client, while the load runs.
        time.sleep(a.connections / 5000 + 4)
        times, overview_times = [], []
        for _ in range(5):
            r, ms = ask(sock, "processes", sort="mailbox", limit=20)
            if not r.get("ok"):
                raise RuntimeError(f"processes failed: {r}")
            times.append(ms)
            r, ms = ask(sock, "overview")
            if not r.get("ok"):
                raise RuntimeError(f"overview failed: {r}")
            overview_times.append(ms)
            time.sleep(0.5)
        if with_top and not a.flood:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            if "PID" not in screen:
                raise RuntimeError("top is not showing its process list:\n" + screen)
        out, _ = cb.communicate(timeout=a.duration + 120)
        line = next(l for l in out.splitlines() if l.startswith("RESULT"))
        f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        res = {"rt_per_s": float(f["rt_per_s"]), "p99_us": float(f["p99_us"]),
               "cpu_us_per_rt": float(f["cpu_us_per_rt"]), "processes_top20_ms": statistics.median(times),
               "overview_ms": statistics.median(overview_times), "overview_max_ms": max(overview_times),
               "flood_answered_per_s": 0.0,
               "failed": int(f["failed"]), "mismatches": int(f["mismatches"])}
        if flood:
            fout, _ = flood.communicate(timeout=120)
            got = [l for l in fout.splitlines() if l.startswith("answered=")]
            span = a.duration + 3 + a.connections / 5000 + 8
            res["flood_answered_per_s"] = int(got[0].split("=")[1]) / span if got else -1.0
        mode = ("flood" if a.flood else "top") + "=" + ("on" if with_top else "off")
        print(f"OBSBENCH rep={rep} {mode} connections={a.connections} " +
              " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items()), flush=True)
        return res
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        stop(cb, flood, srv)
        try:
            os.unlink(sock)
            os.rmdir(tmp)
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "../../build"))
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--flood", type=int, default=0, help="compare against N clients flooding the observer, not top")
    a = ap.parse_args()
    if a.connections < 1 or a.reps < 1 or a.duration <= 0:
        ap.error("--connections, --reps and --duration must be positive")
    runs = {False: [], True: []}
    for rep in range(a.reps):
        for with_top in (False, True):
            runs[with_top].append(one_run(a, with_top, rep + 1))
    med = {t: {k: statistics.median(r[k] for r in runs[t]) for k in runs[t][0]} for t in runs}
    print(f"OBSBENCH median {'flood=' + str(a.flood) if a.flood else 'top'} connections={a.connections} rt_per_s_off={med[False]['rt_per_s']:.0f} "
          f"rt_per_s_on={med[True]['rt_per_s']:.0f} ratio_on_off={med[True]['rt_per_s'] / med[False]['rt_per_s']:.3f} "
          f"cpu_us_per_rt_off={med[False]['cpu_us_per_rt']:.2f} cpu_us_per_rt_on={med[True]['cpu_us_per_rt']:.2f} "
          f"processes_top20_ms={statistics.median([med[False]['processes_top20_ms'], med[True]['processes_top20_ms']]):.2f} "
          f"overview_ms_off={med[False]['overview_ms']:.2f} overview_ms_on={med[True]['overview_ms']:.2f} "
          f"flood_answered_per_s={med[True]['flood_answered_per_s']:.1f}",
          flush=True)
    bad = [r for t in runs for r in runs[t] if r["failed"] or r["mismatches"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
