#!/usr/bin/env python3
"""Run herd's actorbench side by side with its Erlang, Go and CAF peers.

    python3 tools/actorbench/compare.py [--reps 3] [--workloads skynet,ring]
        [--herd PATH] [--out FILE] [--skip erlang,go,caf] [--build-dir DIR]
        [--timeout 120] [--quick] [--wait-idle SECS] [--retry-noisy N]
        [--raise-limits]

Builds the peers (tools/actorbench/peers) into --build-dir, runs every
workload for every implementation --reps times, interleaved so that machine
noise hits all alike, and prints each raw RESULT line, a table of medians and
RATIO lines (herd / peer). Standard library only.
"""
import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "tools" / "actorbench" / "peers"
IMPLS = ["herd", "erlang", "go", "caf"]

# label -> (full-size args, --quick args)
WORKLOADS = {
    "skynet": (["skynet", "1000000"], ["skynet", "10000"]),
    "spawn_idle": (["spawn_idle", "1000000"], ["spawn_idle", "10000"]),
    "spawn_idle_hibernate": (["spawn_idle", "1000000", "--hibernate"],
                             ["spawn_idle", "10000", "--hibernate"]),
    "pingpong": (["pingpong", "2000000"], ["pingpong", "20000"]),
    "pingpong_many": (["pingpong_many", "1000", "2000"], ["pingpong_many", "100", "200"]),
    "ring": (["ring", "10000", "100"], ["ring", "1000", "10"]),
    "fanin": (["fanin", "1000", "1000"], ["fanin", "100", "100"]),
    "call": (["call", "1000000"], ["call", "10000"]),
    "restart": (["restart", "100000"], ["restart", "1000"]),
    "forkjoin_monitor": (["forkjoin_monitor", "1000000"], ["forkjoin_monitor", "10000"]),
    "links": (["links", "1000000"], ["links", "10000"]),
    "monitors": (["monitors", "1000000"], ["monitors", "10000"]),
    "deferred_calls": (["deferred_calls", "1000000"], ["deferred_calls", "10000"]),
    # The same with herd's callers spawned compact_stack (HERD_ONLY_ARGS): a
    # parked caller holds its ~0.8 KiB of frames on the heap, not a stack page.
    # The peers run the plain workload: BEAM has no such option to set.
    "deferred_calls_compact": (["deferred_calls", "1000000"], ["deferred_calls", "10000"]),
}
# Arguments only herd's run of a workload gets.
HERD_ONLY_ARGS = {"deferred_calls_compact": ["--compact"]}
# The ETS contention rows (issue 16): every mix on both table types, 2 workers.
for _mix in ("read90", "write50", "counter", "counter_spread"):
    for _type in ("set", "ordered_set"):
        WORKLOADS[f"table_{_mix}_{_type}"] = (
            ["table", _mix, "--procs", "1000", "--keys", "100000", "--ops", "10000000", "--type", _type],
            ["table", _mix, "--procs", "100", "--keys", "10000", "--ops", "100000", "--type", _type])
WORKLOADS["pg_fanout"] = (["pg_fanout", "--members", "10000", "--messages", "100"],
                          ["pg_fanout", "--members", "1000", "--messages", "10"])
# 30,000, not more: OTP's pg copies the group's member list into ETS at each
# join, so its rate falls with the group (10k joins/s at 10,000, 3k at
# 30,000); herd's is 340-490k/s from 100,000 to 1,000,000 (docs/tables.md).
WORKLOADS["pg_join"] = (["pg_join", "--members", "30000"], ["pg_join", "--members", "3000"])
# Workloads only some peers have (the relations ones and tables: herd and Erlang).
ONLY_IMPLS = {w: {"herd", "erlang"} for w in ("forkjoin_monitor", "links", "monitors", "deferred_calls",
                                              "deferred_calls_compact")}
ONLY_IMPLS.update({w: {"herd", "erlang"} for w in WORKLOADS if w.startswith("table_") or w in ("pg_fanout", "pg_join")})

LOWER_BETTER = {"ns_per_rt", "bytes_per_actor", "ns_per_call", "p50_us", "p99_us", "bytes_per_entry"}
HIGHER_BETTER = {"msgs_per_s", "hops_per_s", "ops_per_s", "delivered_per_s", "joins_per_s"}


def better(key):
    if key in LOWER_BETTER or key.endswith("_ms"):
        return "lower"
    if key in HIGHER_BETTER:
        return "higher"
    return None  # informational (sum, workers, cross_core_pct, ...)


class Report:
    """Prints, and copies everything printed to --out as it goes."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def __call__(self, line=""):
        print(line, flush=True)
        if self.f:
            self.f.write(line + "\n")
            self.f.flush()


def run_cmd(cmd, timeout, env=None, cwd=None):
    """Runs cmd in its own process group; returns (rc or None on timeout, out, err)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        return None, out, err
    except BaseException:  # interrupted: leave no benchmark running behind us
        kill_group(p.pid)
        p.wait()
        raise


def kill_group(pgid):
    """Kills the process group we started, by its id."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def cpu_busy_s():
    """Seconds of CPU time the whole machine has been busy since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wait_idle(max_wait, log):
    """Waits up to max_wait s for 3 s in which other processes use < 10% CPU."""
    deadline = time.monotonic() + max_wait
    while True:
        b0 = cpu_busy_s()
        time.sleep(3)
        if (cpu_busy_s() - b0) / (3 * os.cpu_count()) < 0.10:
            return
        if time.monotonic() > deadline:
            log(f"# machine still busy after waiting {max_wait:.0f}s; running anyway")
            return


def stale(target, *sources):
    return not target.exists() or any(s.stat().st_mtime > target.stat().st_mtime
                                      for s in sources)


def build_peers(wanted, build_dir, log):
    """Returns {impl: command prefix} for the peers that built."""
    cmds = {}
    if "erlang" in wanted:
        srcs = sorted((PEERS / "erlang").glob("*.erl"))
        out = build_dir / "erlang"
        beam = out / "actorbench.beam"
        if not shutil.which("erlc"):
            log("build erlang: SKIPPED (no erlc; apt-get install erlang-nox)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            rc, _, err = (0, "", "") if not stale(beam, *srcs) else \
                run_cmd(["erlc", "-o", str(out)] + [str(s) for s in srcs], 300)
            if rc == 0:
                # +P: the default process limit (262,144) is below 1M idle actors.
                cmds["erlang"] = lambda w, out=out: [
                    "erl", "-noshell", "+S", f"{w}:{w}", "+P", "2000000",
                    "-pa", str(out), "-s", "actorbench", "main", "-extra"]
            else:
                log(f"build erlang: FAILED (exit {rc})\n{err.strip()}")
    if "go" in wanted:
        src = PEERS / "go"
        out = build_dir / "go"
        if not shutil.which("go"):
            log("build go: SKIPPED (no go; apt-get install golang-go)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            # Everything under the build dir, nothing from $HOME or the network.
            env = dict(os.environ, GOCACHE=str(out / "cache"), GOPATH=str(out / "gopath"),
                       GOPROXY="off", GOFLAGS="-mod=mod", GO111MODULE="on")
            rc, _, err = run_cmd(["go", "build", "-o", str(out / "actorbench"), "."],
                                 300, env=env, cwd=src)
            if rc == 0:
                cmds["go"] = lambda w, out=out: [str(out / "actorbench")]
            else:
                log(f"build go: FAILED (exit {rc})\n{err.strip()}")
    if "caf" in wanted:
        src = PEERS / "caf"
        out = build_dir / "caf"
        binary = out / "actorbench_caf"
        if stale(binary, src / "actorbench_caf.cpp", src / "build.sh"):
            rc, _, err = run_cmd(["sh", str(src / "build.sh"), str(out)], 600)
        else:
            rc, err = 0, ""
        if rc == 0:
            cmds["caf"] = lambda w, b=binary: [str(b)]
        else:
            log(f"build caf: FAILED (exit {rc}; needs g++ and libcaf-dev)\n"
                f"{err.strip()[-2000:]}")
    return cmds


def parse_result(line):
    fields = {}
    for tok in line.split()[1:]:
        k, sep, v = tok.partition("=")
        if sep:
            fields[k] = v
    return fields


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v):
    """A number for the table: short, millions as M."""
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v == int(v) or abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}"


def plain(v):
    """A number for machine-readable lines: no exponent, no needless decimals."""
    return str(int(v)) if v == int(v) else f"{v:.3f}".rstrip("0")


def cell(values, notes, exact=False):
    """Median with min-max across reps, so noise is visible."""
    if values:
        med = statistics.median(values)
        f = plain if exact else fmt
        s = f(med)
        if len(values) > 1 and (not exact or min(values) != max(values)):
            s += f" [{f(min(values))}-{f(max(values))}]"
        return s, med
    return (notes[-1] if notes else "-"), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma list of: " + ",".join(WORKLOADS))
    ap.add_argument("--herd", default=str(REPO / "build/tools/actorbench/actorbench"))
    ap.add_argument("--out", help="also write the whole report to this file")
    ap.add_argument("--skip", default="", help="comma list of impls to leave out")
    ap.add_argument("--build-dir", default=str(REPO / "build/actorbench-peers"))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, to check that everything runs")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECS",
                    help="before each run, wait up to SECS for an idle machine")
    ap.add_argument("--retry-noisy", type=int, default=0, metavar="N",
                    help="rerun a run up to N times while other processes used "
                         "more than 10%% of the CPUs during it")
    ap.add_argument("--raise-limits", action="store_true",
                    help="sysctl vm.max_map_count=2200000 if lower (root only)")
    a = ap.parse_args()

    workloads = [w for w in a.workloads.split(",") if w]
    bad = [w for w in workloads if w not in WORKLOADS]
    skip = {s for s in a.skip.split(",") if s}
    if bad or skip - set(IMPLS) or a.reps < 1 or a.workers < 1:
        ap.error(f"unknown workload {bad} or impl {sorted(skip - set(IMPLS))}, "
                 "or reps/workers < 1")
    log = Report(a.out)
    build_dir = Path(a.build_dir).resolve()

    raise_limits(a.raise_limits, log)
    cmds = build_peers([i for i in IMPLS if i not in skip and i != "herd"], build_dir, log)
    if "herd" not in skip:
        herd = Path(a.herd).resolve()
        if herd.is_file() and os.access(herd, os.X_OK):
            cmds["herd"] = lambda w: [str(herd)]
        else:
            log(f"herd: SKIPPED (no executable at {herd}; pass --herd PATH)")
    impls = [i for i in IMPLS if i in cmds]
    if not impls:
        log("nothing to run")
        return 1

    load = os.getloadavg()[0]
    log(f"# impls={','.join(impls)} workloads={','.join(workloads)} reps={a.reps} "
        f"workers={a.workers} loadavg1={load:.2f}")
    if load > 0.5:
        log("# WARNING: the machine is busy; figures will be noisy")

    # results[bucket][impl][key] -> list of floats; notes keep non-numeric
    # values. A bucket is a workload label, or "label/other" for extra RESULT
    # lines that a run prints about another workload name (herd's node_start).
    results = {w: {i: {} for i in impls} for w in workloads}
    notes = {w: {i: {} for i in impls} for w in workloads}
    failures = {}
    noisy = {}
    for rep in range(a.reps):
        if rep:
            log(f"# rep {rep + 1}/{a.reps} loadavg1={os.getloadavg()[0]:.2f}")
        # rotate the order too, so no impl always runs right after the same one
        order = impls[rep % len(impls):] + impls[:rep % len(impls)]
        for wl in workloads:
            args = WORKLOADS[wl][1 if a.quick else 0]
            for impl in order:
                if impl not in ONLY_IMPLS.get(wl, IMPLS):
                    continue
                extra = HERD_ONLY_ARGS.get(wl, []) if impl == "herd" else []
                cmd = cmds[impl](a.workers) + args + extra + ["--workers", str(a.workers)]
                env = dict(os.environ, GOMAXPROCS=str(a.workers))
                for attempt in range(a.retry_noisy + 1):
                    if a.wait_idle:
                        wait_idle(a.wait_idle, log)
                    t0, b0, c0 = time.monotonic(), cpu_busy_s(), children_cpu_s()
                    rc, out, err = run_cmd(cmd, a.timeout, env=env)
                    wall = time.monotonic() - t0
                    # CPU the rest of the machine took while this run went on
                    other = (cpu_busy_s() - b0 - (children_cpu_s() - c0)) / (
                        wall * os.cpu_count())
                    if other <= 0.10:
                        break
                    retry = attempt < a.retry_noisy
                    log(f"# NOISY impl={impl} workload={wl} rep={rep + 1}: other "
                        f"processes used {other:.0%} of the CPUs during the run"
                        + (", retrying" if retry else ", kept"))
                    if not retry:
                        noisy[(wl, impl)] = noisy.get((wl, impl), 0) + 1
                lines = [l for l in out.splitlines() if l.startswith("RESULT ")]
                problem = None
                if rc is None:
                    problem = f"timeout after {a.timeout:.0f}s"
                elif rc != 0:
                    problem = f"exit {rc}: {err.strip()[-300:]}"
                elif not lines:
                    problem = "no RESULT line"
                parsed = []
                for line in lines:
                    log(line)
                    fields = parse_result(line)
                    parsed.append(fields)
                    if wl == "skynet" and fields.get("workload") == "skynet" and "sum" in fields:
                        n = int(args[1])
                        if num(fields["sum"]) != n * (n - 1) // 2:
                            problem = f"wrong sum {fields['sum']}"
                for fields in ([] if problem else parsed):  # a failed run counts for nothing
                    bucket = wl
                    if fields.get("workload", args[0]) != args[0]:
                        bucket = f"{wl}/{fields['workload']}"
                        results.setdefault(bucket, {i: {} for i in impls})
                        notes.setdefault(bucket, {i: {} for i in impls})
                    for k, v in fields.items():
                        if k in ("impl", "workload"):
                            continue
                        x = num(v)
                        if x is None:
                            notes[bucket][impl].setdefault(k, []).append(v)
                        else:
                            results[bucket][impl].setdefault(k, []).append(x)
                if problem:
                    failures.setdefault((wl, impl), []).append(f"rep {rep + 1}: {problem}")
                    log(f"FAIL impl={impl} workload={wl} rep={rep + 1} "
                        f"({wall:.1f}s): {problem}")

    shown = {}
    for b in results:  # each workload's extra buckets right after it
        if b in workloads:
            shown[b] = WORKLOADS[b][1 if a.quick else 0] + (
                [f"(herd also {' '.join(HERD_ONLY_ARGS[b])})"] if b in HERD_ONLY_ARGS else [])
            for x in results:
                if x.startswith(b + "/"):
                    shown[x] = ["(other RESULT lines of those runs)"]
    summarize(log, shown, impls, results, notes, failures)
    if noisy:
        log()
        log("# figures include runs disturbed by other processes (>10% of the "
            "CPUs): " + ", ".join(
            f"{wl}/{impl} x{n}" for (wl, impl), n in noisy.items()))
    return 0


def summarize(log, workloads, impls, results, notes, failures):
    """workloads: {label: args as run}."""
    log()
    log("== medians over reps, [min-max] ==")
    for wl in workloads:
        log(f"-- {wl}: {' '.join(workloads[wl])}")
        keys = []
        for impl in impls:
            for k in list(results[wl][impl]) + list(notes[wl][impl]):
                if k not in keys and k != "workers":
                    keys.append(k)
        cols = [i for i in impls if results[wl][i] or notes[wl][i]] or impls
        rows = [["key", "better"] + cols]
        for k in keys:
            rows.append([k, better(k) or ""] + [
                cell(results[wl][i].get(k, []), notes[wl][i].get(k, []),
                     exact=not better(k))[0]
                for i in cols])
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
        for r in rows:
            log("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
        for impl in impls:
            for f in failures.get((wl, impl), []):
                log(f"  FAILED {impl} {f}")

    if "herd" not in impls:
        return
    log()
    log("== herd / peer, medians ==")
    verdicts = []
    for wl in workloads:
        for k, hv in results[wl]["herd"].items():
            direction = better(k)
            if not direction:
                continue
            h = statistics.median(hv)
            said = []
            for peer in impls[1:]:
                pv = results[wl][peer].get(k)
                if not pv or statistics.median(pv) == 0:
                    continue
                p = statistics.median(pv)
                ratio = h / p
                extra = ""
                if "unsupported" in notes[wl][peer].get("hibernate", []):
                    extra = " note=peer_has_no_hibernate"
                log(f"RATIO workload={wl} key={k} herd={plain(h)} peer={peer} "
                    f"peer_value={plain(p)} ratio={ratio:.3f}{extra}")
                ahead = (ratio < 1) if direction == "lower" else (ratio > 1)
                said.append(f"{peer} {ratio:.2f} ({'ahead' if ahead else 'behind'})")
            if said:
                verdicts.append(f"  {wl} {k} ({direction} is better): " + ", ".join(said))
    log()
    log("== herd / peer ratio per key, and whether herd is ahead ==")
    for v in verdicts:
        log(v)


def raise_limits(wanted, log):
    path = Path("/proc/sys/vm/max_map_count")
    if not path.exists():
        return
    cur = int(path.read_text())
    if cur >= 2200000:
        return
    if not wanted:
        log(f"# note: vm.max_map_count={cur}; if herd needs more for 1M actors, "
            "pass --raise-limits")
        return
    if os.geteuid() != 0:
        log(f"# --raise-limits: not root, vm.max_map_count stays {cur}")
        return
    rc, _, err = run_cmd(["sysctl", "-w", "vm.max_map_count=2200000"], 30)
    log(f"# --raise-limits: sysctl -w vm.max_map_count=2200000 (was {cur})"
        + ("" if rc == 0 else f" FAILED: {err.strip()}"))


if __name__ == "__main__":
    # SIGTERM unwinds like Ctrl-C, so run_cmd can kill the benchmark it started
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(main())
