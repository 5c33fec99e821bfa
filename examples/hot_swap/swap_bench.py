#!/usr/bin/env python3
"""Echo under load across a hot swap: a benchmark program, not a test.

    swap_bench.py [--build-dir build] [--connections 10000] [--reps 3] [--before 10] [--after 10]

Runs hot_swap_server with echo_v1.so (server on core 0, one worker) and
connbench (core 1) against it; `--before` seconds into the measured run it
renames echo_v2.so into the module directory and sends SIGHUP, and every
connection switches at its next message. From connbench's per-second
progress lines it compares the 10 s before the swap with the 10 s around it
(5 s either side). Prints one SWAPBENCH line per repetition and a median
line; fails (exit 1) only if a connection failed or the load was refused.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools"))
from herdlib import stop  # noqa: E402

PROGRESS = re.compile(r"\[\s*([\d.]+)s (\w+)\] connected=(\d+)/\d+ failed=(\d+) rt/s=(\d+) p99=(\d+)us disconnects=(\d+)")


def one_run(a, rep):
    build = a.build_dir
    server = os.path.join(build, "examples/hot_swap/hot_swap_server")
    v1 = os.path.join(build, "examples/hot_swap/echo_v1.so")
    v2 = os.path.join(build, "examples/hot_swap/echo_v2.so")
    connbench = os.path.join(build, "tools/connbench/connbench")
    moddir = tempfile.mkdtemp(prefix="swap_bench_")
    shutil.copy(v1, os.path.join(moddir, "echo_v1.so"))
    srv = subprocess.Popen(["taskset", "-c", "0", server, "--port", "0", "--bind", "127.0.0.1", "--workers", "1",
                            "--module-dir", moddir, "--module", "echo_handler"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cb = None
    try:
        if not srv.stdout.readline().startswith("loaded echo_handler v1"):
            raise RuntimeError("the server did not load echo_v1: " + srv.stderr.read())
        port = srv.stdout.readline().strip().rsplit(":", 1)[1]
        loaded = []
        threading.Thread(target=lambda: [loaded.append((time.monotonic(), l)) for l in iter(srv.stdout.readline, "")],
                         daemon=True).start()
        duration = a.before + a.after
        cb = subprocess.Popen(["taskset", "-c", "1", connbench, "--host", "127.0.0.1", "--port", port,
                               "--connections", str(a.connections), "--payload", "64", "--rate", "5000",
                               "--warmup", "2", "--duration", str(duration), "--server-pid", str(srv.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        swap_at = None
        sighup_t = None
        for line in iter(cb.stderr.readline, ""):
            m = PROGRESS.search(line)
            if not m:
                continue
            t, phase = float(m.group(1)), m.group(2)
            lines.append((t, phase, int(m.group(5)), int(m.group(6)), int(m.group(4)), int(m.group(7))))
            if phase != "warmup" and phase != "connect" and swap_at is None:
                measured_start = t
                swap_at = -1
            if swap_at == -1 and t >= measured_start + a.before:
                tmp = os.path.join(moddir, ".echo_v2.tmp")
                shutil.copy(v2, tmp)
                os.rename(tmp, os.path.join(moddir, "echo_v2.so"))
                sighup_t = time.monotonic()
                srv.send_signal(signal.SIGHUP)
                swap_at = t
        if a.verbose:
            for l in lines:
                print("  ", l, "<- swap" if l[0] == swap_at else "", flush=True)
        out, _ = cb.communicate(timeout=60)
        result = next((l for l in out.splitlines() if l.startswith("RESULT")), "")
        if swap_at is None or swap_at < 0:
            raise RuntimeError("the run ended before the swap")
        v2_lines = [(t, l) for t, l in loaded if "echo_handler v2" in l]
        if not v2_lines:
            raise RuntimeError("no v2 load line; server stderr: " + srv.stderr.read())
        load_ms = float(re.search(r"in ([\d.]+) ms", v2_lines[0][1]).group(1))
        sighup_to_loaded_ms = (v2_lines[0][0] - sighup_t) * 1000
        before = [l for l in lines if swap_at - a.before <= l[0] < swap_at and l[1] != "warmup"]
        around = [l for l in lines if swap_at - 5 <= l[0] < swap_at + 5]
        med = lambda xs: statistics.median(xs) if xs else float("nan")
        f = {
            "rt_per_s_before": med([l[2] for l in before]), "rt_per_s_around": med([l[2] for l in around]),
            "p99_us_before": med([l[3] for l in before]), "p99_us_around": med([l[3] for l in around]),
            "p99_us_worst_second_before": max((l[3] for l in before), default=0),
            "p99_us_worst_second_around": max((l[3] for l in around), default=0),
            "sighup_to_loaded_ms": sighup_to_loaded_ms, "load_ms": load_ms,
        }
        fields = dict(kv.split("=", 1) for kv in result.split()[1:] if "=" in kv)
        f["failed"] = int(fields.get("failed", -1))
        f["disconnects"] = int(fields.get("disconnects", -1))
        f["mismatches"] = int(fields.get("mismatches", -1))
        print(f"SWAPBENCH rep={rep} connections={a.connections} " +
              " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in f.items()), flush=True)
        return f
    finally:
        stop(cb, srv)
        shutil.rmtree(moddir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "../../build"))
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--before", type=float, default=10)
    ap.add_argument("--after", type=float, default=10)
    ap.add_argument("--verbose", action="store_true", help="print the per-second series")
    a = ap.parse_args()
    if a.connections < 1 or a.reps < 1 or a.before < 5 or a.after < 5:
        ap.error("--connections and --reps must be positive, --before and --after at least 5 s")
    runs = [one_run(a, r + 1) for r in range(a.reps)]
    keys = runs[0].keys()
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    print("SWAPBENCH median " + " ".join(f"{k}={v:.1f}" for k, v in med.items()) +
          f" rt_ratio_around_vs_before={med['rt_per_s_around'] / med['rt_per_s_before']:.3f}"
          f" p99_ratio_around_vs_before={med['p99_us_around'] / max(med['p99_us_before'], 1):.3f}", flush=True)
    bad = [r for r in runs if r["failed"] or r["disconnects"] or r["mismatches"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
