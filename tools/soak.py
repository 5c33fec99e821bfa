#!/usr/bin/env python3
"""A soak, run on demand (not in CI): mixed echo and chat load with kills for
--minutes (30 by default), reporting each server's RSS over time.

    tools/soak.py [--build-dir build] [--minutes 30] [--echo 2000] [--members 1000]

echo_server and chat_server run side by side, each with an observer socket.
connbench drives them in rounds of 60 s (echo: --echo connections, every byte
checked; chat: --members members of one room); between rounds and during them
a random connection actor of each server is killed through the observer every
2 s. Every 10 s it prints a SOAK line with both servers' RSS (less LazyFree)
and actor counts. At the end it compares the mean RSS of the last third with
the third after warm-up and prints a SOAKSUMMARY line; exit 1 if a round lost
a byte or the RSS grew by more than 10%.
Every process it starts is stopped by its PID.
"""
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import herdlib  # noqa: E402
from herdlib import rss_less_lazyfree_kb as rss_kb  # noqa: E402


def ask(path, req, **fields):
    return herdlib.ask(path, req, timeout=5, **fields)[0]


def start(binary, sock):
    p = subprocess.Popen([binary, "--port", "0", "--bind", "127.0.0.1", "--observer", sock],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p, herdlib.port_of(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(__file__), "../build"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--echo", type=int, default=2000)
    ap.add_argument("--members", type=int, default=1000)
    a = ap.parse_args()
    if a.minutes < 3 or a.echo < 1 or a.members < 1:
        ap.error("--minutes must be at least 3, --echo and --members positive")
    b = a.build_dir
    tmp = tempfile.mkdtemp(prefix="soak_")
    socks = {"echo": os.path.join(tmp, "echo.sock"), "chat": os.path.join(tmp, "chat.sock")}
    servers = {}
    loads = []
    stop = threading.Event()
    lost = []
    samples = []
    try:
        for name, binary in (("echo", "examples/echo_server"), ("chat", "examples/chat_server")):
            servers[name] = start(os.path.join(b, binary), socks[name])
        connbench = os.path.join(b, "tools/connbench/connbench")

        def rounds(name):
            p, port = servers[name]
            args = (["--connections", str(a.echo)] if name == "echo"
                    else ["--mode", "chat", "--connections", str(a.members), "--room-members", str(a.members)])
            while not stop.is_set():
                cb = subprocess.Popen([connbench, "--host", "127.0.0.1", "--port", str(port), "--rate", "2000",
                                       "--warmup", "1", "--duration", "60", *args],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                loads.append(cb)
                out, _ = cb.communicate()
                if stop.is_set():
                    break  # interrupted at the end: no verdict on this round
                line = next((l for l in out.splitlines() if l.startswith("RESULT")), "")
                f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
                # Echo: not one byte may differ. Chat: no protocol error; the
                # members killed by the soak miss what was sent after (missing).
                bad_key = "mismatches" if name == "echo" else "errors"
                if f.get(bad_key, "1") != "0" or f.get("failed", "1") != "0":
                    lost.append(f"{name}: {line or 'no RESULT'}")

        def killer():
            rng = random.Random(7)
            while not stop.wait(2):
                for name in servers:
                    r = ask(socks[name], "processes", sort="age", limit=100000)
                    tree = ask(socks[name], "tree")
                    named = json.dumps(tree)
                    cands = [x["pid"] for x in r["result"]["processes"]
                             if not x["name"] and x["pid"] != "<0.0>" and f'"{x["pid"]}"' not in named]
                    if cands:
                        ask(socks[name], "kill", pid=rng.choice(cands))

        threads = [threading.Thread(target=rounds, args=(n,)) for n in servers] + [threading.Thread(target=killer)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < a.minutes * 60:
            time.sleep(10)
            row = {"t_s": round(time.monotonic() - t0)}
            for name, (p, _) in servers.items():
                row[f"{name}_rss_kb"] = rss_kb(p.pid)
                row[f"{name}_actors"] = ask(socks[name], "overview")["result"]["actors"]
            samples.append(row)
            print("SOAK " + " ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        stop.set()
        for cb in loads:
            if cb.poll() is None:
                cb.send_signal(signal.SIGINT)
        for t in threads:
            t.join(120)
        third = max(1, len(samples) // 3)
        verdict = 0
        for name in servers:
            early = statistics.mean(s[f"{name}_rss_kb"] for s in samples[third:2 * third] or samples)
            late = statistics.mean(s[f"{name}_rss_kb"] for s in samples[-third:])
            growth = late / early - 1
            print(f"SOAKSUMMARY server={name} minutes={a.minutes} rss_mid_kb={early:.0f} rss_last_kb={late:.0f} "
                  f"growth={growth * 100:.1f}% lost_rounds={sum(1 for l in lost if l.startswith(name))}", flush=True)
            verdict |= growth > 0.10
        for l in lost:
            print("LOST " + l)
        return 1 if verdict or lost else 0
    finally:
        stop.set()
        for cb in loads:
            if cb.poll() is None:
                cb.kill()
                cb.wait()
        herdlib.stop(*(p for p, _ in servers.values()))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
