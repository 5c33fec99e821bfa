#!/usr/bin/env python3
"""Run connbench against herd's echo server and its epoll, Go and Erlang peers.

    python3 tools/connbench/compare.py [--herd PATH_TO_echo_server] [--reps 5]
        [--connections 1000,10000] [--duration 10] [--warmup 3] [--rate 5000]
        [--placements split,unpinned] [--clients et,lt] [--skip erlang,go] [--out FILE] [--quick]
        [--build-dir DIR] [--connbench PATH] [--idle 45]

Builds the peers (tools/connbench/peers) into --build-dir, then for each
placement and connection count runs every implementation once per rep and
client load shape (connbench --client et|lt; interleaved, order rotated per
rep, so machine noise hits all alike), plus one
idle run per implementation and placement at the largest connection count.
Prints each raw RESULT line, a min/median/max table and RATIO lines (vs epoll).
Standard library only. Every subprocess is bounded by a timeout, and every
server is stopped by its PID (SIGTERM, then SIGKILL to its own process group).
"""
import argparse
import os
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "tools" / "connbench"
PEERS = HERE / "peers"
IMPLS = ["herd", "herd_b", "epoll", "go", "erlang"]
KEYS = ["rt_per_s", "cpu_us_per_rt", "p50_us", "p99_us", "p999_us", "rss_kb",
        "bytes_per_idle_conn", "connect_ramp_s", "failed", "server_listen_drops"]
SANITY = ["disconnects", "mismatches"]  # shown when non-zero: a run that lost data
HIGHER_BETTER = {"rt_per_s"}
CONNECT_TIMEOUT = 10


class Report:
    """Prints, and copies everything printed to --out as it goes."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def __call__(self, line=""):
        print(line, flush=True)
        if self.f:
            self.f.write(line + "\n")
            self.f.flush()


def raise_nofile():
    """preexec_fn: servers and connbench each need one fd per connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_cmd(cmd, timeout, env=None, cwd=None):
    """Runs cmd in its own process group; returns (rc or None on timeout, out, err)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=cwd, start_new_session=True, preexec_fn=raise_nofile)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        return None, out, err
    except BaseException:  # interrupted: leave nothing running behind us
        kill_group(p.pid)
        p.wait()
        raise


def stale(target, *sources):
    return not target.exists() or any(s.stat().st_mtime > target.stat().st_mtime for s in sources)


def build(wanted, build_dir, log):
    """Returns {impl: fn(cores) -> server argv} for the peers that built."""
    cmds = {}
    if "epoll" in wanted:
        src = PEERS / "epoll" / "echo_epoll.c"
        binary = build_dir / "epoll" / "echo_epoll"
        binary.parent.mkdir(parents=True, exist_ok=True)
        rc, _, err = (0, "", "") if not stale(binary, src) else run_cmd(
            ["gcc", "-O2", "-Wall", "-Wextra", "-pthread", "-o", str(binary), str(src)], 300)
        if rc == 0:
            cmds["epoll"] = lambda n, b=binary: [str(b), "--port", "0", "--threads", str(n)]
        else:
            log(f"build epoll: FAILED (exit {rc})\n{err.strip()}")
    if "go" in wanted:
        out = build_dir / "go"
        if not shutil.which("go"):
            log("build go: SKIPPED (no go; tools/setup.sh --peers)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            # Everything under the build dir, nothing from $HOME or the network.
            env = dict(os.environ, GOCACHE=str(out / "cache"), GOPATH=str(out / "gopath"),
                       GOPROXY="off", GOFLAGS="-mod=mod", GO111MODULE="on")
            rc, _, err = run_cmd(["go", "build", "-o", str(out / "echo"), "."], 300,
                                 env=env, cwd=PEERS / "go")
            if rc == 0:
                cmds["go"] = lambda n, b=out / "echo": [str(b), "--port", "0", "--procs", str(n)]
            else:
                log(f"build go: FAILED (exit {rc})\n{err.strip()}")
    if "erlang" in wanted:
        src = PEERS / "erlang" / "echo.erl"
        out = build_dir / "erlang"
        if not shutil.which("erlc"):
            log("build erlang: SKIPPED (no erlc; tools/setup.sh --peers)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            rc, _, err = (0, "", "") if not stale(out / "echo.beam", src) else run_cmd(
                ["erlc", "-o", str(out), str(src)], 300)
            if rc == 0:
                cmds["erlang"] = lambda n, d=out: [
                    "erl", "-noshell", "+S", f"{n}:{n}", "-pa", str(d),
                    "-s", "echo", "main", "-extra", "--port", "0"]
            else:
                log(f"build erlang: FAILED (exit {rc})\n{err.strip()}")
    return cmds


def find_connbench(arg, build_dir, log):
    """--connbench, else the CMake build, else a direct g++ build of the sources."""
    if arg:
        return Path(arg).resolve()
    cmake_built = REPO / "build" / "tools" / "connbench" / "connbench"
    if cmake_built.is_file():
        return cmake_built
    binary = build_dir / "connbench"
    srcs = [HERE / f for f in ("connbench.cpp", "worker.cpp", "stats.cpp", "cli.cpp", "worker.hpp", "stats.hpp", "cli.hpp")]
    if stale(binary, *srcs):
        log(f"# no {cmake_built}; building connbench with g++ into {binary}")
        rc, _, err = run_cmd(["g++", "-std=c++20", "-O2", "-pthread", "-o", str(binary)]
                             + [str(s) for s in srcs if s.suffix == ".cpp"], 300)
        if rc != 0:
            log(f"build connbench: FAILED (exit {rc})\n{err.strip()}")
            return None
    return binary


class Server:
    """A server started in its own session; stop() is safe to call twice."""

    def __init__(self, argv, log_path):
        self.errf = open(log_path, "w")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.errf,
                                  start_new_session=True, preexec_fn=raise_nofile)
        self.pid = self.p.pid  # taskset, erl and erlexec exec: the PID stays the server's
        self.exit_note = None

    def wait_listening(self, timeout):
        """Returns the port from 'listening on ADDR:PORT', or None."""
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                break
            chunk = os.read(self.p.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            m = re.search(rb"listening on [^\s:]+:(\d+)", buf)
            if m:
                # Keep draining stdout (e.g. Erlang's logger writes there) so a
                # full pipe can never block the server mid-run.
                threading.Thread(target=self._drain, daemon=True).start()
                return int(m.group(1))
        return None

    def _drain(self):
        try:
            while os.read(self.p.stdout.fileno(), 65536):
                pass
        except (OSError, ValueError):
            pass

    def stop(self):
        if self.p.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.exit_note = "did not exit within 5 s of SIGTERM; killed"
        kill_group(self.pid)  # stragglers such as erl_child_setup
        self.p.wait()
        if self.exit_note is None and self.p.returncode != 0:
            self.exit_note = f"exit {self.p.returncode} after SIGTERM"
        self.p.stdout.close()
        self.errf.close()


def parse_result(line):
    return dict(tok.split("=", 1) for tok in line.split()[1:] if "=" in tok)


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v == int(v) or abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def plain(v):
    return str(int(v)) if v == int(v) else f"{v:.3f}".rstrip("0")


def one_run(log, a, label, impl, server_argv, cb_argv, timeout, logdir):
    """Starts the server, runs connbench against it, stops the server. Returns fields or None."""
    server = None
    try:
        server = Server(server_argv, logdir / f"{impl}.stderr")
        port = server.wait_listening(30)
        if port is None:
            log(f"FAIL {label} impl={impl}: no 'listening on' line within 30 s "
                f"(see {logdir / (impl + '.stderr')})")
            return None
        rc, out, err = run_cmd(cb_argv + ["--port", str(port), "--server-pid", str(server.pid)], timeout)
        lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
        if rc is None or rc != 0 or not lines:
            why = "timeout" if rc is None else f"exit {rc}"
            log(f"FAIL {label} impl={impl}: connbench {why}: {err.strip()[-400:]}")
            return None
        log(f"{lines[-1]} impl={impl} {label}")
        return parse_result(lines[-1])
    finally:
        if server is not None:
            server.stop()
            if server.exit_note:
                log(f"# {label} impl={impl}: server {server.exit_note}")
        time.sleep(1)  # let the kernel reap the closed sockets before the next server


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--herd", help="herd's examples/echo_server binary")
    ap.add_argument("--herd-b", help="a second echo_server build, run as impl herd_b beside --herd "
                                     "(an A/B of two herd builds, interleaved in the same run)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--connections", default="1000,10000")
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--rate", type=float, default=5000, help="connects per second")
    # 45 s: herd gives the pages of a burst's stacks back within two to four 10 s pool windows;
    # Go's and BEAM's collectors settle within that too.
    ap.add_argument("--idle", type=float, default=45, help="seconds of the idle-memory run")
    ap.add_argument("--placements", default="split,unpinned")
    ap.add_argument("--clients", default="et,lt",
                    help="connbench client load shapes: et (edge-triggered, recv until EAGAIN), "
                         "lt (level-triggered, one recv of the outstanding bytes)")
    ap.add_argument("--skip", default="", help="comma list of impls to leave out")
    ap.add_argument("--out", help="also write the whole report to this file")
    ap.add_argument("--quick", action="store_true",
                    help="1 rep, 200 connections, 3 s, 1 s warmup, first placement only")
    ap.add_argument("--build-dir", default=str(REPO / "build" / "connbench-peers"))
    ap.add_argument("--connbench", help="connbench binary (default: build/tools/connbench/connbench)")
    a = ap.parse_args()

    try:
        conns = [int(c) for c in a.connections.split(",") if c]
    except ValueError:
        ap.error("--connections wants a comma list of integers")
    placements = [p for p in a.placements.split(",") if p]
    skip = {s for s in a.skip.split(",") if s}
    clients = [c for c in a.clients.split(",") if c]
    if (not conns or min(conns) < 1 or a.reps < 1 or set(placements) - {"split", "unpinned"}
            or not placements or skip - set(IMPLS) or a.duration <= 0 or a.warmup < 0
            or not clients or set(clients) - {"et", "lt"}):
        ap.error("bad --connections/--reps/--placements/--clients/--skip/--duration/--warmup")
    if a.quick:
        a.reps, conns, a.duration, a.warmup, a.idle = 1, [200], 3, 1, 2
        placements = placements[:1]
    if "split" in placements and (os.cpu_count() or 1) < 2:
        ap.error("split placement needs 2 cores")

    log = Report(a.out)
    build_dir = Path(a.build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    cmds = build([i for i in IMPLS if i not in skip and i not in ("herd", "herd_b")], build_dir, log)
    if a.herd_b:
        hb = Path(a.herd_b).resolve()
        if not (hb.is_file() and os.access(hb, os.X_OK)):
            ap.error(f"--herd-b: no executable at {hb}")
        cmds["herd_b"] = lambda n, h=hb: [str(h), "--port", "0", "--workers", str(n)]
    if "herd" not in skip:
        herd = Path(a.herd).resolve() if a.herd else None
        if herd and herd.is_file() and os.access(herd, os.X_OK):
            cmds["herd"] = lambda n, h=herd: [str(h), "--port", "0", "--workers", str(n)]
        else:
            log(f"# herd: SKIPPED ({'no --herd given' if not herd else f'no executable at {herd}'}; "
                "pass --herd build/examples/echo_server)")
    impls = [i for i in IMPLS if i in cmds]
    connbench = find_connbench(a.connbench, build_dir, log)
    if not impls or connbench is None or not connbench.is_file():
        log(f"nothing to run (impls={impls}, connbench={connbench})")
        return 1

    def sysctl(name):
        try:
            return Path("/proc/sys/" + name.replace(".", "/")).read_text().split()
        except OSError:
            return ["?"]
    log(f"# impls={','.join(impls)} connections={a.connections if not a.quick else 200} "
        f"placements={','.join(placements)} clients={','.join(clients)} reps={a.reps} duration={a.duration} warmup={a.warmup} "
        f"rate={a.rate} loadavg1={os.getloadavg()[0]:.2f} nofile={resource.getrlimit(resource.RLIMIT_NOFILE)} "
        f"port_range={'-'.join(sysctl('net.ipv4.ip_local_port_range'))} "
        f"somaxconn={sysctl('net.core.somaxconn')[0]}")
    logdir = Path(tempfile.mkdtemp(prefix="logs-", dir=build_dir))

    # results[(placement, conns, client)][impl][key] -> [values]
    results = {}
    failures = []
    for placement in placements:
        cores = 1 if placement == "split" else 2
        spre = ["taskset", "-c", "0"] if placement == "split" else []
        cpre = ["taskset", "-c", "1"] if placement == "split" else []
        for n in conns:
            buckets = {c: results.setdefault((placement, n, c), {i: {} for i in impls}) for c in clients}
            base = cpre + [str(connbench), "--host", "127.0.0.1", "--connections", str(n),
                           "--payload", "64", "--rate", str(a.rate),
                           "--connect-timeout", str(CONNECT_TIMEOUT)]
            timeout = n / a.rate + CONNECT_TIMEOUT + 5 + a.warmup + a.duration + 60
            for rep in range(a.reps):
                order = impls[rep % len(impls):] + impls[:rep % len(impls)]
                for client in clients[rep % len(clients):] + clients[:rep % len(clients)]:
                    for impl in order:
                        label = f"placement={placement} client={client} rep={rep + 1}"
                        f = one_run(log, a, label, impl, spre + cmds[impl](cores),
                                    base + ["--client", client, "--duration", str(a.duration),
                                            "--warmup", str(a.warmup)],
                                    timeout, logdir)
                        if f is None:
                            failures.append(f"{label} connections={n} impl={impl}")
                            continue
                        for k, v in f.items():
                            if num(v) is not None:
                                buckets[client][impl].setdefault(k, []).append(num(v))
        n = max(conns)
        for impl in impls:
            label = f"placement={placement} idle"
            f = one_run(log, a, label, impl, spre + cmds[impl](cores),
                        cpre + [str(connbench), "--connections", str(n), "--rate", str(a.rate),
                                "--idle", str(a.idle), "--connect-timeout", str(CONNECT_TIMEOUT)],
                        n / a.rate + CONNECT_TIMEOUT + 5 + a.idle + 60, logdir)
            if f is None:
                failures.append(f"{label} connections={n} impl={impl}")
            elif num(f.get("bytes_per_idle_conn")) is not None:
                # Idle memory does not depend on the load shape: shown in every shape's table.
                for c in clients:
                    results[(placement, n, c)][impl].setdefault("bytes_per_idle_conn", []).append(
                        num(f["bytes_per_idle_conn"]))

    summarize(log, results, impls)
    for f in failures:
        log(f"FAILED {f}")
    log(f"# server stderr logs: {logdir}")
    return 1 if failures else 0


def summarize(log, results, impls):
    log()
    log("== min / median / max per implementation; ratio = impl median / epoll median ==")
    for (placement, n, client), bucket in results.items():
        log(f"-- placement={placement} connections={n} client={client}")
        rows = [["key", "better"] + impls + (["herd/epoll", "herd in epoll range"]
                                              if "herd" in impls and "epoll" in impls else [])]
        keys = KEYS + [k for k in SANITY if any(any(bucket[i].get(k, [])) for i in impls)]
        for k in keys:
            if not any(bucket[i].get(k) for i in impls):
                continue
            row = [k, "higher" if k in HIGHER_BETTER else "lower"]
            for i in impls:
                v = bucket[i].get(k)
                row.append(f"{fmt(min(v))}/{fmt(statistics.median(v))}/{fmt(max(v))}" if v else "-")
            if len(rows[0]) > len(impls) + 2:
                h, e = bucket["herd"].get(k), bucket["epoll"].get(k)
                if h and e:
                    hm, em = statistics.median(h), statistics.median(e)
                    row.append(f"{hm / em:.3f}" if em else "-")
                    row.append("yes" if min(e) <= hm <= max(e) else "no")
                else:
                    row += ["-", "-"]
            rows.append(row)
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            log("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    if "epoll" not in impls:
        return
    log()
    for (placement, n, client), bucket in results.items():
        for k in KEYS:
            e = bucket["epoll"].get(k)
            if not e:
                continue
            em = statistics.median(e)
            for impl in impls:
                v = bucket[impl].get(k)
                if impl == "epoll" or not v:
                    continue
                m = statistics.median(v)
                ratio = f"{m / em:.3f}" if em else "-"
                noise = "yes" if min(e) <= m <= max(e) else "no"
                log(f"RATIO placement={placement} connections={n} client={client} key={k} {impl}={plain(m)} "
                    f"epoll={plain(em)} ratio={ratio} within_noise={noise}")


if __name__ == "__main__":
    sys.exit(main())
