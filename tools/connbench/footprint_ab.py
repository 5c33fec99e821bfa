#!/usr/bin/env python3
"""footprint_ab: what an actor's per-message memory traffic costs a plain epoll server.

    python3 tools/connbench/footprint_ab.py [--footprint 1536,512[,64]] [--connections 10000]
        [--client et] [--window 2] [--duration 60] [--warmup 3]

Runs echo_epoll --footprint STACK,HEAP[,SLOT_KIB] on core 0 and connbench on core 1, and
during connbench's measured phase flips the footprint off and on every
--window seconds (SIGUSR1). Each window reports the server's CPU ns and the
messages it echoed; adjacent on/off windows are paired, so the host's slow and
fast phases (which on this VM move a whole 12 s run by 10-30%) fall on both
halves of a pair alike. Prints one line per pair and a RESULT line with the
median paired ratio (on / off CPU per message) and the median ns per message
of each state. compare.py's runs of separate servers cannot resolve a 5%
change here; this can, for the one thing it varies.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from herdlib import stop  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--footprint", default="1536,512",
                    help="STACK,HEAP[,SLOT_KIB]: bytes touched per message, slots SLOT_KIB apart (64)")
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--client", choices=["et", "lt"], default="et")
    ap.add_argument("--window", type=float, default=2.0, help="seconds per window")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of connbench's measured phase")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--echo-epoll", default=str(REPO / "build" / "tools" / "connbench" / "echo_epoll"))
    ap.add_argument("--connbench", default=str(REPO / "build" / "tools" / "connbench" / "connbench"))
    a = ap.parse_args()
    try:
        st, hp, *slot = (int(x) for x in a.footprint.split(","))
    except ValueError:
        ap.error("--footprint wants STACK,HEAP[,SLOT_KIB] (byte counts, a slot size)")
    if len(slot) > 1 or any(k < 4 or k & (k - 1) or st > k * 1024 for k in slot):
        ap.error("--footprint: SLOT_KIB is a power of two from 4 and holds STACK bytes")
    if st < 0 or hp < 0 or st + hp == 0 or a.window <= 0 or a.duration < 4 * a.window or a.connections < 1:
        ap.error("bad --footprint/--window/--duration/--connections")
    for b in (a.echo_epoll, a.connbench):
        if not os.access(b, os.X_OK):
            ap.error(f"no executable at {b} (build the echo_epoll and connbench targets)")

    pin0 = ["taskset", "-c", "0"] if (os.cpu_count() or 1) >= 2 else []
    pin1 = ["taskset", "-c", "1"] if pin0 else []
    server = subprocess.Popen(pin0 + [a.echo_epoll, "--port", "0", "--threads", "1", "--footprint", a.footprint],
                              stdout=subprocess.PIPE, text=True)
    client = None
    try:
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            print(f"footprint_ab: echo_epoll did not start: {line!r}", file=sys.stderr)
            return 1
        port = line.rsplit(":", 1)[1].strip()
        windows = []
        reader = threading.Thread(target=lambda: windows.extend(
            l.split() for l in server.stdout if l.startswith("WINDOW")), daemon=True)
        reader.start()
        client = subprocess.Popen(pin1 + [a.connbench, "--host", "127.0.0.1", "--port", port,
                                          "--connections", str(a.connections), "--payload", "64",
                                          "--rate", "5000", "--client", a.client, "--warmup", str(a.warmup),
                                          "--duration", str(a.duration)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        measuring = threading.Event()
        result = []

        def watch_stderr():
            for l in client.stderr:
                if " measure]" in l:
                    measuring.set()

        threading.Thread(target=watch_stderr, daemon=True).start()
        threading.Thread(target=lambda: result.extend(client.stdout), daemon=True).start()
        limit = time.monotonic() + a.connections / 5000 + a.warmup + 60
        while not measuring.is_set() and client.poll() is None and time.monotonic() < limit:
            measuring.wait(0.2)
        if not measuring.is_set():
            print("footprint_ab: connbench never reached its measured phase", file=sys.stderr)
            return 1
        os.kill(server.pid, signal.SIGUSR1)  # starts the first full window (the one before is dropped)
        end = time.monotonic() + a.duration - a.window  # stay inside the measured phase
        flips = 0
        while time.monotonic() + a.window <= end and client.poll() is None:
            time.sleep(a.window)  # the window's length, not synchronisation: the server reports it
            os.kill(server.pid, signal.SIGUSR1)
            flips += 1
        client.wait(timeout=a.duration + 120)
    finally:
        stop(client, server, timeout=10)
    reader.join(timeout=5)
    ws = []
    for w in windows[1:]:  # the first one started before the measured phase
        f = dict(kv.split("=") for kv in w[1:])
        n, cpu = int(f["messages"]), int(f["cpu_ns"])
        if n > 0:
            ws.append((int(f["footprint"]), cpu / n))
    pairs = []
    for i in range(0, len(ws) - 1, 2):
        (s1, v1), (s2, v2) = ws[i], ws[i + 1]
        if s1 == s2:
            continue
        on, off = (v1, v2) if s1 else (v2, v1)
        pairs.append(on / off)
        print(f"PAIR on_ns_per_msg={on:.0f} off_ns_per_msg={off:.0f} ratio={on / off:.3f}")
    if not pairs:
        print("footprint_ab: no complete on/off pair (a longer --duration?)", file=sys.stderr)
        return 1
    on_all = [v for s, v in ws if s]
    off_all = [v for s, v in ws if not s]
    print(f"RESULT tool=footprint_ab footprint={a.footprint} connections={a.connections} client={a.client} "
          f"window_s={a.window} pairs={len(pairs)} median_ratio={statistics.median(pairs):.3f} "
          f"min_ratio={min(pairs):.3f} max_ratio={max(pairs):.3f} "
          f"on_ns_per_msg={statistics.median(on_all):.0f} off_ns_per_msg={statistics.median(off_all):.0f}")
    for l in result:
        if l.startswith("RESULT"):
            print("# connbench: " + l.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
