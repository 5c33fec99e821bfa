#!/usr/bin/env python3
"""pushbench against a peer gateway, small and short: every frame arrives, in
order, and the figures are sane.

    pushbench_smoke_test.py PUSHBENCH PEERS_BUILD_DIR [--peer go|node]

200 WebSocket users in 10 rooms, 2 s of user pushes (2,000/s) and room pushes
(50/s): against Go in compare.py's shape (pushes on a 250 us clock, pushbench
polling without sleeping), against Node in the old one (pushes whenever the
loop wakes, pushbench sleeping in epoll). Exit 77 (skipped) when the peer's toolchain is missing. Every process
it starts is stopped by its PID; 127.0.0.1 only.
"""
import argparse
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tools/pushbench"))
import peers  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pushbench")
    ap.add_argument("build_dir")
    ap.add_argument("--peer", choices=("go", "node"), default="go")
    a = ap.parse_args()
    try:
        if a.peer == "go":
            cmd, env = peers.build_go(a.build_dir), None
        else:
            cmd, env = peers.build_node(a.build_dir)
    except peers.Unavailable as e:
        print(f"skipped: {e}")
        return 77
    server = subprocess.Popen(cmd + ["--port", "0", "--workers", "1"], stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = server.stdout.readline()
        m = re.match(r"listening on [0-9.]+:(\d+)", line)
        if not m:
            print(f"FAIL: the peer printed {line!r}")
            return 1
        shape = {"go": ["--push-tick-us", "250", "--busy-poll", "1"], "node": ["--push-tick-us", "0"]}[a.peer]
        r = subprocess.run([a.pushbench, "--port", m.group(1), "--connections", "200", "--rooms", "10",
                            "--push-rate", "2000", "--room-rate", "50", "--duration", "2", "--warmup", "1",
                            "--idle-settle", "0.5", "--server-pid", str(server.pid), *shape],
                           capture_output=True, text=True, timeout=90)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    print(r.stderr[-2000:])
    res = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if r.returncode != 0 or len(res) != 1:
        print(f"FAIL: pushbench exit {r.returncode}, output {r.stdout!r}")
        return 1
    print(res[0])
    f = dict(kv.split("=", 1) for kv in res[0].split()[1:])
    num = {k: float(v) for k, v in f.items() if re.fullmatch(r"-?[0-9.]+", v)}
    problems = []
    for k, want in (("connected", 200), ("failed", 0), ("joined", 200), ("lost", 0), ("lost_gaps", 0),
                    ("out_of_order", 0), ("push_errors", 0), ("bad_frames", 0), ("error_replies", 0),
                    ("disconnects", 0), ("drained", 1), ("ramp_complete", 1), ("joins_complete", 1)):
        if num.get(k) != want:
            problems.append(f"{k}={f.get(k)} (want {want})")
    want_shape = {"go": (250, 1), "node": (0, 0)}[a.peer]
    if (num.get("push_tick_us"), num.get("busy_poll")) != want_shape:
        problems.append(f"push_tick_us={f.get('push_tick_us')} busy_poll={f.get('busy_poll')} (want {want_shape})")
    # Room pushes reach 20 members each: more frames than pushes.
    if not (num["frames"] == num["expected"] > num["pushes"] > 0):
        problems.append("frames, expected and pushes are not frames == expected > pushes > 0")
    if not (0 < num["p50_us"] <= num["p99_us"] <= num["p999_us"] <= num["max_us"]):
        problems.append("latency percentiles are not increasing and positive")
    for k in ("pushes_per_s", "frames_per_s", "cpu_us_per_push", "rss_kb", "rss_idle_kb"):
        if not num.get(k, 0) > 0:
            problems.append(f"{k} missing or not positive")
    if "bytes_per_idle_conn" not in num:
        problems.append("bytes_per_idle_conn missing")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
