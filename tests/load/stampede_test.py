#!/usr/bin/env python3
"""Ranch's stampede under load: echo_server at N connections (connbench in
another process, every byte checked) while random connection actors,
acceptors and the acceptors' supervisor are killed through the observer.

    stampede_test.py ECHO_SERVER CONNBENCH [--connections 5000] [--seconds 60]

Passes when:
  - connbench saw no mismatched byte and no failed connect, and exactly one
    disconnect per connection actor killed (the others kept every byte in
    order; a killed one was closed, not left hanging);
  - the acceptors are all back (new pids) and a new connection is echoed;
  - once connbench is gone the actor count is back to its baseline, and RSS
    less LazyFree is within 10% of what the same node held after a clean
    run of the same load (the pools' bound), plus 4 MiB: what mimalloc's
    segment caches and glibc's arenas happen to keep varies from run to run
    — 1.1 MB over on an idle machine, 2.7 MB in a CI run where other load
    tests ran beside it (ctest -j2; 2.5 MB of it one glibc thread arena that
    malloc_trim could not give back). That bound catches a leak of some
    4 KB per killed connection (about 1,000 to 2,600 are killed); smaller
    leaks need a growth-per-cycle check (not yet written).
Under a sanitizer build (HERD_SANITIZED=1, set by CTest there) the RSS
figures are printed but not checked: shadow memory and the quarantine make
them meaningless.
A supervisor kill stays under the listener's restart intensity (10 in 10 s),
as an operator's would: this is about surviving kills, not about escalation.
Prints one STAMPEDE line with the figures. Bounded in time; every process it
starts is stopped by its PID.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools"))
from herdlib import SANITIZED, note_unchecked_memory, port_of, rss_less_lazyfree_kb  # noqa: E402


ALLOCATOR_SLACK_KB = 4096


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


class Observer:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(10)
        self.s.connect(path)
        self.f = self.s.makefile("rw")

    def ask(self, req, **fields):
        t0 = time.monotonic()
        self.f.write(json.dumps({"v": 1, "req": req, **fields}) + "\n")
        self.f.flush()
        r = json.loads(self.f.readline())
        self.last_ms = (time.monotonic() - t0) * 1000
        return r


def biggest_mappings(pid, n=8):
    """The mappings holding the most resident memory, to say where it went."""
    rows, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                cur = parts[5] if len(parts) > 5 else "[anon " + parts[0] + "]"
            elif line.startswith("Rss:"):
                rows.append((int(line.split()[1]), cur))
    return "\n".join(f"  {kb:>8} kB  {name}" for kb, name in sorted(rows, reverse=True)[:n])


def tree_pids(obs):
    """(acceptor pids, acceptors_sup pid, every pid in the listener's tree)."""
    roots = obs.ask("tree")["result"]["roots"]
    acceptors, sup, every = [], None, set()

    def walk(node):
        nonlocal sup
        if node.get("pid"):
            every.add(node["pid"])
        if node.get("id") == "acceptors_sup":
            sup = node["pid"]
        if str(node.get("id", "")).startswith("acceptor_") and node.get("pid"):
            acceptors.append(node["pid"])
        for c in node.get("children", []):
            walk(c)

    for r in roots:
        walk(r)
    return acceptors, sup, every


def run_connbench(connbench, port, n, seconds, server_pid):
    return subprocess.Popen([connbench, "--host", "127.0.0.1", "--port", str(port), "--connections", str(n),
                             "--payload", "64", "--rate", "5000", "--warmup", "1", "--duration", str(seconds),
                             "--server-pid", str(server_pid)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def result_of(cb, timeout):
    out, _ = cb.communicate(timeout=timeout)
    line = next((l for l in out.splitlines() if l.startswith("RESULT")), None)
    if not line:
        fail("connbench printed no RESULT")
    return {k: v for k, v in (kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)}


def settle(obs, pid, baseline_actors, deadline_s=15):
    """Waits for the actor count to return to baseline and the quiet trim."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if obs.ask("overview")["result"]["actors"] == baseline_actors:
            break
        time.sleep(0.2)  # the poll's interval
    time.sleep(3)  # a second without stack traffic, then the trim (the check after the stampede polls on)
    return obs.ask("overview")["result"]["actors"], rss_less_lazyfree_kb(pid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("server")
    ap.add_argument("connbench")
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    rng = random.Random(int(os.environ.get("STAMPEDE_SEED", "1")))
    tmp = tempfile.mkdtemp(prefix="stampede_")  # 0700, as the observer wants
    sock = os.path.join(tmp, "observer.sock")
    srv = subprocess.Popen([a.server, "--port", "0", "--bind", "127.0.0.1", "--workers", "2", "--acceptors", "10",
                            "--observer", sock], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cb = None
    try:
        port = port_of(srv)
        obs = Observer(sock)
        baseline = obs.ask("overview")["result"]["actors"]
        rss_start = rss_less_lazyfree_kb(srv.pid)

        # A clean run of the same load, watched as the stampede will be (the
        # observer's replies have pools too): what the node holds afterwards
        # is the bound.
        clean = run_connbench(a.connbench, port, a.connections, 5, srv.pid)
        while clean.poll() is None:
            tree_pids(obs)
            obs.ask("processes", sort="age", limit=100000)
            time.sleep(1)  # the observer's pace during the clean run (the workload)
        r = result_of(clean, 120)
        if r["failed"] != "0" or r["mismatches"] != "0" or r["disconnects"] != "0":
            fail(f"the clean run was not clean: {r}")
        _, rss_clean = settle(obs, srv.pid, baseline)

        acceptors_before, _, _ = tree_pids(obs)
        cb = run_connbench(a.connbench, port, a.connections, a.seconds, srv.pid)
        # Wait for the connections to be up before the kills start.
        end = time.monotonic() + 30
        while obs.ask("listeners")["result"]["listeners"][0]["connections"] < a.connections:
            if time.monotonic() > end:
                fail("the connections did not come up")
            time.sleep(0.2)  # the poll's interval
        killed_conns = killed_acceptors = killed_sups = 0
        worst_ms = 0.0
        peak_rss = 0
        conns, last_list = [], 0.0
        last_acceptor_kill = last_sup_kill = 0.0
        stop_at = time.monotonic() + a.seconds - 3  # leave connbench's last seconds quiet
        while time.monotonic() < stop_at:
            now = time.monotonic()
            if now - last_list > 1:
                acceptors, sup, tree = tree_pids(obs)
                worst_ms = max(worst_ms, obs.last_ms)
                procs = obs.ask("processes", sort="age", limit=100000)["result"]["processes"]
                worst_ms = max(worst_ms, obs.last_ms)
                conns = [p["pid"] for p in procs if p["pid"] not in tree and p["pid"] != "<0.0>" and not p["name"]]
                last_list = now
                peak_rss = max(peak_rss, rss_less_lazyfree_kb(srv.pid))
            if sup and now - last_sup_kill > 5:
                victim, kind = sup, "sup"
                last_sup_kill = now
            elif acceptors and now - last_acceptor_kill > 1.5:
                victim, kind = rng.choice(acceptors), "acceptor"
                last_acceptor_kill = now
            elif conns:
                victim, kind = conns.pop(rng.randrange(len(conns))), "conn"
            else:
                time.sleep(0.05)  # the stampede's pace (the workload)
                continue
            reply = obs.ask("kill", pid=victim)
            worst_ms = max(worst_ms, obs.last_ms)
            if reply["ok"]:
                if kind == "conn":
                    killed_conns += 1
                elif kind == "acceptor":
                    killed_acceptors += 1
                    acceptors.remove(victim)
                else:
                    killed_sups += 1
                    sup, acceptors = None, []  # its acceptors die with it; re-read at the next listing
            elif reply["error"]["code"] != "noproc":
                fail(f"kill {victim}: {reply}")
            time.sleep(0.02)  # the stampede's pace (the workload)
        r = result_of(cb, a.seconds + 60)
        cb = None
        if r["mismatches"] != "0" or r["failed"] != "0":
            fail(f"bytes differed or connects failed: {r}")
        if int(r["disconnects"]) != killed_conns:
            fail(f"{killed_conns} connection actors were killed but connbench saw {r['disconnects']} disconnects")
        acceptors_after, _, _ = tree_pids(obs)
        if len(acceptors_after) != 10 or set(acceptors_after) & set(acceptors_before):
            fail(f"the acceptors did not all come back anew: {acceptors_before} -> {acceptors_after}")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"after the stampede")
            if s.recv(100) != b"after the stampede":
                fail("a new connection after the stampede was not echoed")
        actors_after, rss_after = settle(obs, srv.pid, baseline)
        if actors_after != baseline:
            fail(f"{actors_after} actors after the stampede, {baseline} before")
        note_unchecked_memory()
        # The trim comes after a quiet second, which a loaded machine may delay:
        # polled (up to a minute) before the memory counts as kept.
        end = time.monotonic() + 60
        while not SANITIZED and rss_after > 1.10 * rss_clean + ALLOCATOR_SLACK_KB and time.monotonic() < end:
            time.sleep(0.5)  # the poll's interval
            rss_after = rss_less_lazyfree_kb(srv.pid)
        if not SANITIZED and rss_after > 1.10 * rss_clean + ALLOCATOR_SLACK_KB:
            print(biggest_mappings(srv.pid), flush=True)
            fail(f"RSS less LazyFree {rss_after} kB after the stampede, {rss_clean} kB after a clean run")
        print(f"STAMPEDE connections={a.connections} seconds={a.seconds} rt_per_s={r['rt_per_s']} "
              f"killed_connections={killed_conns} killed_acceptors={killed_acceptors} "
              f"killed_acceptor_sups={killed_sups} disconnects={r['disconnects']} mismatches=0 "
              f"bytes_checked={r.get('bytes_checked')} "
              f"actors_before={baseline} actors_after={actors_after} rss_start_kb={rss_start} "
              f"rss_clean_kb={rss_clean} rss_peak_kb={peak_rss} rss_after_kb={rss_after} "
              f"observer_worst_ms={worst_ms:.1f}", flush=True)
        srv.send_signal(signal.SIGTERM)
        if srv.wait(timeout=20) != 0:
            fail("the server did not exit 0 after SIGTERM")
        print("PASS")
    finally:
        for p in (cb, srv):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
