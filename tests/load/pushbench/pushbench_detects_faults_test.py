#!/usr/bin/env python3
"""pushbench's checks can fail: against faulty_gateway.py (drops every 7th
user-push frame, swaps every 11th with the next) it must report lost frames,
gaps and frames out of order — the figures the smoke test requires to be 0.
Also: bad options (a non-loopback host among them) exit 2 with a message;
--trace writes one row per push frame received (as many as `frames`), and
RESULT splits latency into user and room frames.

    pushbench_detects_faults_test.py PUSHBENCH
"""
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    # Bad input: a message and exit 2, before any connection.
    for bad in (["--port", "1", "--host", "10.0.0.1"], ["--port", "1", "--bogus", "1"], ["--connections", "5"],
                ["--port", "1", "--push-tick-us", "-1"], ["--port", "1", "--busy-poll", "2"]):
        r = subprocess.run([sys.argv[1], *bad], capture_output=True, text=True, timeout=10)
        if r.returncode != 2 or "pushbench:" not in r.stderr:
            print(f"FAIL: pushbench {' '.join(bad)}: exit {r.returncode}, stderr {r.stderr!r}")
            return 1
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "faulty_gateway.py"), "--port", "0"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = re.match(r"listening on [0-9.]+:(\d+)", server.stdout.readline()).group(1)
        trace = os.path.join(tempfile.mkdtemp(prefix="pushbench_trace"), "trace.txt")
        r = subprocess.run([sys.argv[1], "--port", port, "--connections", "20", "--push-rate", "300",
                            "--duration", "1", "--warmup", "0.2", "--idle-settle", "0.2", "--drain", "1",
                            "--trace", trace], capture_output=True, text=True, timeout=60)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    line = next((l for l in r.stdout.splitlines() if l.startswith("RESULT ")), "")
    print(line or r.stderr[-1000:])
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    problems = [k for k in ("lost", "lost_gaps", "out_of_order") if not int(f.get(k, "0")) > 0]
    problems += [] if f.get("drained") == "0" else ["drained (want 0: frames never arrive)"]
    rows = []
    if os.path.exists(trace):
        with open(trace) as t:
            head = t.readline()
            rows = [l.split() for l in t]
        if not re.match(r"# window_ms=[0-9.]+ start_ns=\d+", head):
            problems.append(f"a trace header (got {head!r})")
    if not rows or len(rows) != int(f.get("frames", "-1")) or any(len(x) != 3 or x[2] != "U" for x in rows):
        problems.append(f"one trace row per frame ({len(rows)} rows, frames={f.get('frames')})")
    if float(f.get("user_p99_us", "0")) <= 0 or "room_p99_us" not in f:
        problems.append("user_p99_us and room_p99_us")
    for p in problems:
        print(f"FAIL: pushbench did not report {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
