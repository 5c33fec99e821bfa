#!/usr/bin/env python3
"""Push gateways side by side: herd's (when --herd is given), the Go peer and
the Node peer, driven by pushbench, plus wrk against /healthz.

    python3 tools/pushbench/compare.py [--herd build/examples/push_gateway]
        [--reps 3] [--connections 10000,19000] [--rooms 100] [--push-rate 20000]
        [--room-rate 20] [--duration 10] [--warmup 3] [--quick] [--out FILE]
        [--storm N]

Placement as connbench's `split`: the server on core 0 with one worker
(--workers 1: GOMAXPROCS=1, Node has one event loop anyway), pushbench and
wrk on core 1 (taskset). Each rep runs every implementation once per
connection count, the order rotated per rep. Reported per (connections, key):
the median of the reps per implementation and its ratio to the better peer's
median (lower is better for latency, CPU and memory, higher for rates), as
one `RATIO ...` line each. Raises RLIMIT_NOFILE to the hard limit (children
inherit it) and vm.max_map_count when it is low and we are root. --storm N
has users u0..u(N-1) drop and reconnect within one second, halfway through
the measured window (pushbench --storm): storm_back_ms is how long until the
last was back in its room, stable_lost what the others missed. Every process
it starts is stopped by its PID; 127.0.0.1 only.
"""
import argparse
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
# user/sys split the CPU (the system part holds the client's receive path on
# loopback); calm_cpu_us_per_push is per push before a --storm starts.
LOWER_BETTER = ("p50_us", "p99_us", "p999_us", "max_us", "user_p99_us", "room_p99_us", "cpu_us_per_push", "user_us_per_push", "sys_us_per_push",
                "calm_cpu_us_per_push", "rss_kb", "bytes_per_idle_conn",
                "connect_ramp_s", "storm_back_ms", "wrk_p50_us", "wrk_p99_us")
HIGHER_BETTER = ("pushes_per_s", "frames_per_s", "wrk_rps")
# The wrk row. wrk_server_us_per_req is the server's CPU per answered request;
# wrk_server_cpu and wrk_client_cpu are the shares of their cores the server
# and wrk used (no ratio: they say which side bound the rate). With wrk at
# its whole core and the server below it, wrk_rps is wrk's ceiling on this
# machine, not the server's, and the per-request CPU is the row that compares.
WRK_KEYS = ("wrk_rps", "wrk_p50_us", "wrk_p99_us", "wrk_server_us_per_req", "wrk_server_cpu", "wrk_client_cpu")
WRK_LOWER_BETTER = ("wrk_p50_us", "wrk_p99_us", "wrk_server_us_per_req")
WRK_SHARES = ("wrk_server_cpu", "wrk_client_cpu")
CHECKED = ("connected", "failed", "lost", "drained", "out_of_order", "disconnects", "push_errors", "push_late",
           "storm_back", "storm_refused", "stable_lost")


def log(out, line=""):
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def raise_limits(out):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            maps = int(f.read())
        if maps < 262144 and os.geteuid() == 0:  # stackful fibers: a mapping or two each
            subprocess.run(["sysctl", "-q", "-w", "vm.max_map_count=262144"], check=False)
    except OSError:
        pass
    log(out, f"# nofile={resource.getrlimit(resource.RLIMIT_NOFILE)} loadavg1={os.getloadavg()[0]:.2f}")


RT = []  # ["chrt", "-f", N] with --rt-priority: taskset execs chrt, which execs the program


class Server:
    def __init__(self, argv, env, logpath):
        self.err = open(logpath, "w")
        self.p = subprocess.Popen(["taskset", "-c", "0", *RT, *argv, "--port", "0", "--workers", "1"],
                                  stdout=subprocess.PIPE, stderr=self.err, env=env, text=True)
        self.pid = self.p.pid  # taskset execs: the PID is the server's
        line = self.p.stdout.readline()
        m = re.match(r"listening on [0-9.]+:(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"{argv[0]} printed {line!r}, see {logpath}")
        self.port = int(m.group(1))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


def parse_result(text, prefix="RESULT "):
    for line in text.splitlines():
        if line.startswith(prefix):
            return {k: v for k, _, v in (kv.partition("=") for kv in line.split()[1:])}
    return None


def run_pushbench(a, server, conns):
    argv = ["taskset", "-c", "1", *RT, a.pushbench, "--port", str(server.port), "--connections", str(conns),
            "--rooms", str(a.rooms), "--push-rate", str(a.push_rate), "--room-rate", str(a.room_rate),
            "--duration", str(a.duration), "--warmup", str(a.warmup), "--server-pid", str(server.pid),
            "--sources", "4", "--rate", str(a.rate), "--connect-timeout", "30", "--drain", "10",
            "--push-tick-us", str(a.push_tick_us), "--busy-poll", "1" if a.busy_poll else "0"]
    if a.storm:
        argv += ["--storm", str(min(a.storm, conns)), "--storm-at", str(a.duration / 2)]
    timeout = conns / a.rate + a.duration + a.warmup + 180
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    res = parse_result(r.stdout)
    if res is None:
        raise RuntimeError(f"pushbench exit {r.returncode}: {r.stderr[-500:]}")
    return res


def wrk_us(s):
    m = re.match(r"([0-9.]+)(us|ms|s)$", s)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else None


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_wrk(a, server):
    # wrk is the only child waited for during the run (taskset execs it), so
    # the children's rusage grows by wrk's CPU alone.
    ticks0, kids0 = cpu_ticks(server.pid), children_cpu_s()
    r = subprocess.run(["taskset", "-c", "1", *RT, "wrk", "-t1", "-c64", f"-d{a.wrk_duration}s", "--latency",
                        f"http://127.0.0.1:{server.port}/healthz"], capture_output=True, text=True,
                       timeout=a.wrk_duration + 30)
    if r.returncode != 0:  # e.g. wrk not installed: taskset says so and exits 1
        sys.exit(f"compare.py: wrk failed (exit {r.returncode}): {r.stderr.strip()[:300]}\n"
                 "wrk comes with `tools/setup.sh --peers`; or pass --no-wrk")
    res = {}
    m = re.search(r"Requests/sec:\s+([0-9.]+)", r.stdout)
    if m:
        res["wrk_rps"] = m.group(1)
    for pct, key in (("50", "wrk_p50_us"), ("99", "wrk_p99_us")):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", r.stdout, re.M)
        if m and wrk_us(m.group(1)) is not None:
            res[key] = str(wrk_us(m.group(1)))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    res["wrk_errors"] = m.group(1) if m else "0"
    server_s = (cpu_ticks(server.pid) - ticks0) / os.sysconf("SC_CLK_TCK")
    client_s = children_cpu_s() - kids0
    m = re.search(r"(\d+) requests in ([0-9.]+)(us|ms|s),", r.stdout)
    if m and int(m.group(1)) > 0:
        requests, secs = int(m.group(1)), wrk_us(m.group(2) + m.group(3)) / 1e6
        res["wrk_server_us_per_req"] = f"{server_s * 1e6 / requests:.2f}"
        res["wrk_server_cpu"] = f"{server_s / secs:.3f}"
        res["wrk_client_cpu"] = f"{client_s / secs:.3f}"
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--herd", help="herd's push gateway binary (skipped when not given)")
    ap.add_argument("--pushbench", default=os.path.join(ROOT, "build/tools/pushbench/pushbench"))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build/pushbench-peers"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--connections", default="10000,19000")
    ap.add_argument("--rooms", type=int, default=100)
    ap.add_argument("--push-rate", type=float, default=20000)
    ap.add_argument("--room-rate", type=float, default=20)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--wrk-duration", type=int, default=5)
    # The ramp is not what is compared here: a connect rate a starved server
    # still follows, and 30 s before a connect counts as failed.
    ap.add_argument("--rate", type=float, default=2000, help="WebSocket connects per second")
    ap.add_argument("--no-wrk", action="store_true")
    # Both fix the load's shape so that it does not follow the server's own
    # answers (docs/push-gateway.md, "Session 15: a load that does not follow
    # the server"): pushes leave on a clock, and pushbench never sleeps while
    # pushing, so no server pays for waking it.
    ap.add_argument("--push-tick-us", type=int, default=250, help="pushes leave every this many us (0: whenever pushbench wakes)")
    ap.add_argument("--busy-poll", type=int, default=1, choices=(0, 1), help="pushbench polls without sleeping while pushing")
    ap.add_argument("--storm", type=int, default=0, help="users that drop and reconnect within 1 s (pushbench --storm)")
    ap.add_argument("--quick", action="store_true", help="1 rep, 1,000 connections, 3 s")
    ap.add_argument("--out")
    ap.add_argument("--herd-b", help="a second herd gateway binary, run as impl herd_b (A/B of two builds)")
    ap.add_argument("--peers", default="go,node", help="peers to run: go,node (default), a subset, or none")
    ap.add_argument("--rt-priority", type=int, default=0,
                    help="run server, pushbench and wrk at SCHED_FIFO this priority (1-99): shields "
                         "the figures from other work on a shared machine; 0 (default): normal")
    a = ap.parse_args()
    if not a.no_wrk and shutil.which("wrk") is None:  # found out before the long runs, not after
        sys.exit("compare.py: wrk is not installed (tools/setup.sh --peers installs it); or pass --no-wrk")
    if a.quick:
        a.reps, a.connections, a.duration, a.warmup, a.wrk_duration = 1, "1000", 3, 1, 2
    counts = [int(c) for c in a.connections.split(",")]
    out = open(a.out, "w") if a.out else None
    if not os.access(a.pushbench, os.X_OK):
        sys.exit(f"compare.py: no pushbench at {a.pushbench} (cmake --build build --target pushbench)")
    if a.rt_priority:
        if not 1 <= a.rt_priority <= 99:
            sys.exit("compare.py: --rt-priority takes 1-99")
        RT[:] = ["chrt", "-f", str(a.rt_priority)]
    wanted = [] if a.peers == "none" else a.peers.split(",")
    if any(p not in ("go", "node") for p in wanted):
        sys.exit(f"compare.py: --peers {a.peers}: go, node, a comma list of them, or none")
    raise_limits(out)
    if RT:
        log(out, f"# server, pushbench and wrk at SCHED_FIFO {a.rt_priority}")
    impls = {}
    for name, path in (("herd", a.herd), ("herd_b", a.herd_b)):
        if path:
            if not os.access(path, os.X_OK):
                sys.exit(f"compare.py: {path} is not an executable")
            impls[name] = ([os.path.abspath(path)], None)
    builders = {"go": lambda: (peers.build_go(a.build_dir), None), "node": lambda: peers.build_node(a.build_dir)}
    for name, build in ((n, builders[n]) for n in wanted):
        try:
            impls[name] = build()
        except peers.Unavailable as e:
            log(out, f"# {name} peer skipped: {e}")
    logdir = os.path.join(a.build_dir, "logs")
    os.makedirs(logdir, exist_ok=True)
    names = list(impls)
    results = {}  # (conns, impl) -> [result dicts]
    for rep in range(a.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for conns in counts:
            for name in order:
                argv, env = impls[name]
                s = Server(argv, env, os.path.join(logdir, f"{name}-{conns}-{rep}.log"))
                try:
                    res = run_pushbench(a, s, conns)
                finally:
                    s.stop()
                log(out, f"RUN rep={rep} impl={name} " + " ".join(f"{k}={v}" for k, v in res.items()))
                results.setdefault((conns, name), []).append(res)
        if not a.no_wrk:
            for name in order:
                argv, env = impls[name]
                s = Server(argv, env, os.path.join(logdir, f"{name}-wrk-{rep}.log"))
                try:
                    res = run_wrk(a, s)
                finally:
                    s.stop()
                log(out, f"RUN rep={rep} impl={name} wrk " + " ".join(f"{k}={v}" for k, v in res.items()))
                results.setdefault(("wrk", name), []).append(res)
    summarize(out, results, names, counts)


def median_of(runs, key):
    vals = [float(r[key]) for r in runs if key in r]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


def fmt(v):
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def summarize(out, results, names, counts):
    peers_ = [n for n in names if n != "herd"]
    log(out)
    log(out, f"{'row':<8} {'key':<20}" + "".join(f"{n + ' median [min-max]':>34}" for n in names))
    for row in [*counts, "wrk"]:
        keys = WRK_KEYS if row == "wrk" else (*HIGHER_BETTER[:2], *LOWER_BETTER[:-2], *CHECKED)
        for key in keys:
            meds = {n: median_of(results.get((row, n), []), key) for n in names}
            cells = "".join(f"{'-' if meds[n] is None else f'{fmt(meds[n][0])} [{fmt(meds[n][1])}-{fmt(meds[n][2])}]':>34}"
                            for n in names)
            log(out, f"{row!s:<8} {key:<20}{cells}")
            if key in CHECKED or key in WRK_SHARES:
                continue
            have = [n for n in peers_ if meds[n] is not None]
            if not have:
                continue
            pick = min if key in LOWER_BETTER or key in WRK_LOWER_BETTER else max
            best = pick(have, key=lambda n: meds[n][0])
            for n in names:
                if meds[n] is None or meds[best][0] == 0:
                    continue
                log(out, f"RATIO connections={row} key={key} impl={n} value={meds[n][0]:.4g} best_peer={best} "
                         f"best_peer_value={meds[best][0]:.4g} ratio={meds[n][0] / meds[best][0]:.3f}")
    for n in names:
        runs = results.get(("wrk", n), [])
        client, server = median_of(runs, "wrk_client_cpu"), median_of(runs, "wrk_server_cpu")
        if client and server:
            bound = "wrk" if client[0] >= 0.95 and server[0] < 0.9 else "server" if server[0] >= 0.95 else "neither"
            log(out, f"WRK_BOUND impl={n} bound={bound} wrk_client_cpu={client[0]:.3f} wrk_server_cpu={server[0]:.3f}")


if __name__ == "__main__":
    main()
