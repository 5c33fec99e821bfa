#!/usr/bin/env python3
"""Connect/close cost against the number of connections a listener holds.

For each rep and each case (server, hold kind, H), one server's cases back
to back: starts a fresh server (1 worker, pinned to CPU 0 when there are two),
runs `connbench --hold H ...` against it (pinned to CPU 1), stops the server
by its PID. Prints every RESULT line, then per case and measurement the
median (and min/max) of us_per_cycle, p50_us, p99_us and
server_cpu_us_per_cycle, and one RATIO line per key: the largest H's median
over the smallest's, for each server and hold kind, and the median (min,
max) of the same ratio taken within each rep (less disturbed by a shared
machine's changing load).

  python3 tools/connbench/churn.py --build build                 # the default cases
  python3 tools/connbench/churn.py --build build --reps 1 --cycles 2000 \\
      --real 100,1000 --ghost ''                                 # a quick look

Cases: --epoll H,... against the plain-C echo_epoll (what the kernel's TCP
connect/close costs by itself), --real H,... against examples/echo_server (held connections are open
sockets; H <= ~19,500 under a 20,000 descriptor limit), --ghost H,... against
tools/connbench/churn_server (held connections are ghosts: processes under
the listener without a socket, so H can exceed the limit). See README.md,
"Churn".
"""
import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import time

KEYS = ["us_per_cycle", "p50_us", "p99_us", "server_cpu_us_per_cycle"]


def ints(s):
    return [int(x) for x in s.split(",") if x.strip()]


def start_server(path, pin):
    # echo_epoll binds 127.0.0.1 and takes --threads for herd's --workers.
    extra = ["--threads", "1"] if path.endswith("echo_epoll") else ["--bind", "127.0.0.1", "--workers", "1"]
    p = subprocess.Popen(pin + [path, "--port", "0"] + extra,
                         stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on"):
        p.kill()
        p.wait()
        sys.exit(f"churn: {path} did not start: {line!r}")
    return p, int(line.rsplit(":", 1)[1])


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def parse_result(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def run_case(args, server, kind, hold, pin_s, pin_c):
    p, port = start_server(server, pin_s)
    try:
        cmd = pin_c + [os.path.join(args.build, "tools/connbench/connbench"), "--port", str(port),
                       "--server-pid", str(p.pid), "--hold", str(hold), "--hold-kind", kind,
                       "--cycles", str(args.cycles), "--cycle-concurrency", str(args.concurrency),
                       "--sources", str(args.sources), "--payload", "64"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True, timeout=args.timeout)
    finally:
        stop_server(p)
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    for l in lines:
        print(l, flush=True)
    if r.returncode != 0:
        print(f"# FAILED server={os.path.basename(server)} hold_kind={kind} held={hold} rc={r.returncode}", flush=True)
    return [parse_result(l) for l in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=10000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--sources", type=int, default=4)
    ap.add_argument("--real", type=ints, default=ints("100,19000"))
    ap.add_argument("--ghost", type=ints, default=ints("100,19000,100000"))
    ap.add_argument("--epoll", type=ints, default=ints("100,19000"))
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    if args.reps < 1 or args.cycles < 1:
        sys.exit("churn: --reps and --cycles must be at least 1")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by both sides
    pin_s, pin_c = (["taskset", "-c", "0"], ["taskset", "-c", "1"]) if os.cpu_count() >= 2 else ([], [])
    echo = os.path.join(args.build, "examples/echo_server")
    churn = os.path.join(args.build, "tools/connbench/churn_server")
    epoll = os.path.join(args.build, "tools/connbench/echo_epoll")
    cases = ([(echo, "real", h) for h in args.real] + [(churn, "ghost", h) for h in args.ghost] +
             [(epoll, "real", h) for h in args.epoll])
    print(f"# churn: cases={len(cases)} reps={args.reps} cycles={args.cycles} concurrency={args.concurrency}"
          f" loadavg1={os.getloadavg()[0]:.2f}", flush=True)
    got = {}  # (server, kind, held, run) -> [result dict]
    # Cases of one server run back to back (smallest H first on even reps,
    # largest first on odd ones), so a ratio within a rep compares runs the
    # machine's other load treated alike; the groups' order rotates per rep.
    groups = [g for g in ([(echo, "real", h) for h in sorted(args.real)], [(churn, "ghost", h) for h in sorted(args.ghost)],
                          [(epoll, "real", h) for h in sorted(args.epoll)]) if g]
    for rep in range(args.reps):
        print(f"# rep {rep + 1}/{args.reps} loadavg1={os.getloadavg()[0]:.2f}", flush=True)
        for g in groups[rep % len(groups):] + groups[:rep % len(groups)]:
            for server, kind, hold in (g if rep % 2 == 0 else list(reversed(g))):
                for r in run_case(args, server, kind, hold, pin_s, pin_c):
                    r["rep"] = rep
                    got.setdefault((os.path.basename(server), kind, hold, r["run"]), []).append(r)
    med = {}
    for (server, kind, hold, run), rs in sorted(got.items()):
        parts = []
        for k in KEYS:
            vals = [float(r[k]) for r in rs if k in r]
            if vals:
                med[(server, kind, hold, run, k)] = statistics.median(vals)
                parts.append(f"{k}={statistics.median(vals):.2f} {k}_min={min(vals):.2f} {k}_max={max(vals):.2f}")
        print(f"MEDIAN server={server} hold_kind={kind} held={hold} run={run} reps={len(rs)} " + " ".join(parts))
    for server, kind, holds in (("echo_server", "real", args.real), ("churn_server", "ghost", args.ghost),
                                ("echo_epoll", "real", args.epoll)):
        if len(holds) < 2:
            continue
        lo, hi = min(holds), max(holds)
        for run in ("sequential", "concurrent"):
            for k in KEYS:
                a, b = med.get((server, kind, lo, run, k)), med.get((server, kind, hi, run, k))
                if not (a and b):
                    continue
                los = {r["rep"]: float(r[k]) for r in got.get((server, kind, lo, run), []) if k in r}
                his = {r["rep"]: float(r[k]) for r in got.get((server, kind, hi, run), []) if k in r}
                per_rep = [his[i] / los[i] for i in sorted(los) if i in his and los[i] > 0]
                extra = (f" per_rep_median={statistics.median(per_rep):.3f} per_rep_min={min(per_rep):.3f}"
                         f" per_rep_max={max(per_rep):.3f}") if per_rep else ""
                print(f"RATIO server={server} hold_kind={kind} run={run} key={k} held_hi={hi} held_lo={lo}"
                      f" hi={b:.2f} lo={a:.2f} ratio={b / a:.3f}{extra}")


if __name__ == "__main__":
    main()
