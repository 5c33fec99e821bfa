#!/usr/bin/env python3
"""A reconnect storm against examples/push_gateway, driven by pushbench.

    push_gateway_storm_test.py GATEWAY PUSHBENCH [CONNECTIONS STORM]

CONNECTIONS users (default 2,000) connect and join rooms; while pushes run,
STORM of them (default 1,000) drop — half with a reset, half with a FIN and
no close frame — and reconnect within one second. Checked: every one is back
in its room and none was refused; the connections that stayed up missed no
frame and got none out of order; once pushbench has gone, the gateway's
/stats falls to 0 connections (no dropped connection stayed in presence). The rate
is low so that it holds on a busy machine; the 10,000-client storm is a
benchmark (tools/pushbench/compare.py --storm), not a test. 127.0.0.1 only;
the gateway is stopped by its PID.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/pushbench"))
from wsclient import Http  # noqa: E402

FAILED = []


def check(name, cond, why=""):
    print(f"{'ok' if cond else 'not ok'} - {name}{'' if cond else ': ' + str(why)}", flush=True)
    if not cond:
        FAILED.append(name)


def stats(port):
    h = Http(port)
    try:
        status, _, body = h.request("GET", "/stats")
        return json.loads(body) if status == 200 else None
    finally:
        h.sock.close()


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    exe, bench = sys.argv[1], sys.argv[2]
    conns, storm = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) == 5 else (2000, 1000)
    gw = subprocess.Popen([exe, "--port", "0", "--bind", "127.0.0.1", "--max-connections", str(conns + 100)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = gw.stdout.readline().strip()
        if not line.startswith("listening on "):
            sys.exit(f"no 'listening on' line but {line!r}")
        port = int(line.rsplit(":", 1)[1])
        r = subprocess.run([bench, "--port", str(port), "--connections", str(conns), "--rooms", "20",
                            "--push-rate", "1000", "--room-rate", "10", "--duration", "4", "--warmup", "1",
                            "--storm", str(storm), "--storm-at", "1", "--storm-window", "1", "--sources", "4",
                            "--rate", "2000", "--connect-timeout", "60", "--drain", "20",
                            "--server-pid", str(gw.pid)],
                           capture_output=True, text=True, timeout=300)
        res = next(({k: v for k, _, v in (kv.partition("=") for kv in ln.split()[1:])}
                    for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if res is None:
            check("pushbench printed a RESULT line", False, f"exit {r.returncode}: {r.stderr[-800:]}")
            return
        print(" ".join(f"{k}={res[k]}" for k in ("storm_dropped", "storm_back", "storm_refused", "storm_back_ms",
                                                 "stable_connections", "stable_lost", "p99_us")), flush=True)
        n = lambda k: int(float(res[k]))  # noqa: E731
        check("every user connected and joined before the storm", n("connected") == conns and n("joined") == conns, res)
        check(f"the storm dropped {storm} users", n("storm_dropped") == storm, res["storm_dropped"])
        check("every dropped user is back in its room", n("storm_back") == storm and n("storm_complete") == 1,
              res["storm_back"])
        check("no reconnect was refused", n("storm_refused") == 0, res["storm_refused"])
        check("the connections that stayed up were all there at the end", n("stable_connections") == conns - storm,
              res["stable_connections"])
        check("they missed no frame", n("stable_lost") == 0 and n("lost_gaps") == 0,
              (res["stable_lost"], res["lost_gaps"]))
        check("and got none out of order", n("out_of_order") == 0 and n("storm_out_of_order") == 0,
              (res["out_of_order"], res["storm_out_of_order"]))
        check("no push failed", n("push_errors") == 0 and n("bad_frames") == 0, (res["push_errors"], res["bad_frames"]))
        calm = {k: float(res.get(k, "-1")) for k in ("calm_window_s", "calm_frames", "calm_cpu_us_per_push",
                                                     "storm_phase_cpu_s", "storm_phase_frames")}
        check("the server's CPU is reported apart for the calm part of the window and the storm's",
              calm["calm_window_s"] > 0 and calm["calm_frames"] > 0 and calm["calm_cpu_us_per_push"] >= 0
              and calm["storm_phase_cpu_s"] >= 0 and calm["storm_phase_frames"] >= 0, calm)
        # pushbench has closed its connections; each leaves presence as the
        # gateway sees its end, so wait for the count to reach 0 rather than
        # read it once.
        end = time.monotonic() + 30
        st = stats(port)
        while st and st.get("connections") and time.monotonic() < end:
            time.sleep(0.05)
            st = stats(port)
        check("after the run the gateway's presence is empty (the old connections left)",
              st is not None and st.get("connections") == 0, st)
    finally:
        if gw.poll() is None:
            gw.send_signal(signal.SIGTERM)
        try:
            gw.wait(timeout=30)
        except subprocess.TimeoutExpired:
            gw.kill()
            gw.wait()
    if FAILED:
        sys.exit(f"{len(FAILED)} check(s) failed")


if __name__ == "__main__":
    main()
