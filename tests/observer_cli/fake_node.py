#!/usr/bin/env python3
"""A fake herd node for herd-observer's tests: it serves the observer protocol
(docs/observer-protocol.md, version 1) on a Unix socket with canned but
realistic data, and can misbehave on purpose.

    fake_node.py SOCKET LOG [--mode MODE]

Every request line received is appended to LOG (so a test can check that,
say, a kill for <6.0> arrived). "ready" is printed once the socket listens.
Modes:
    ok           answer like a node would (the default)
    malformed    answer every request with a line that is not JSON
    not_object   answer with a JSON array
    error        answer every request with ok:false, code "failed"
    wrong_shape  answer ok:true with a result lacking the documented fields
    close_mid    send half a reply line, then close the connection
    silent       read requests, never answer
    hostile      answer like a node, but with terminal escape sequences and
                 other control characters (HOSTILE) appended to every string
                 of every reply, and a trace event field named with them
    hostile_raw  answer every request with a line that is not JSON and holds
                 raw control bytes and bytes that are not UTF-8
Processes are sorted, limited and filtered as the protocol says, and a kill
removes its process, so a client sees the node's state change.
"""
import copy
import json
import os
import socket
import sys
import threading
import time

OS_PID = 4242

PROCESSES = [
    # pid, name, status, mailbox, reductions, memory, age_ms
    ("<1.0>", "echo_server_sup", "waiting", 0, 5400, 12288, 600000),
    ("<2.0>", "echo_server_acceptors_sup", "waiting", 0, 3200, 10240, 599000),
    ("<3.0>", "echo_server_acceptor_1", "waiting", 0, 88000, 9000, 598000),
    ("<4.0>", "echo_server_acceptor_2", "waiting", 0, 87000, 9100, 597000),
    ("<5.0>", "echo_server_conns_sup", "waiting", 2, 4100, 16384, 596000),
    ("<6.0>", "flooded_logger", "runnable", 25000, 40000, 2400000, 300000),
    ("<7.0>", "hungry_cruncher", "running", 0, 9800000, 70000, 120000),
    ("<8.1>", None, "hibernated", 0, 1500, 1200, 5000),
    ("<9.0>", "big_cache", "waiting", 3, 52000, 8500000, 590000),
]

# pid -> (initial_call, kind, reductions a second)
LABELS = {
    "<1.0>": ("herd::supervisor", "supervisor", 0),
    "<2.0>": ("herd::supervisor", "supervisor", 0),
    "<3.0>": ("herd::net acceptor", "acceptor", 40),
    "<4.0>": ("herd::net acceptor", "acceptor", 30),
    "<5.0>": ("herd::net conns_sup", "supervisor", 0),
    "<6.0>": ("logger_main()::<lambda()>", "worker", 2000),
    "<7.0>": ("cruncher", "server", 120000),
    "<8.1>": ("herd::net connection", "connection", 0),
    "<9.0>": ("cache_server", "server", 0),
}

SORT_FIELD = {"mailbox": "mailbox", "reductions": "reductions", "memory": "memory", "age": "age_ms",
              "reductions_rate": "reductions_per_s"}
STATUSES = {"running", "runnable", "waiting", "hibernated", "exiting"}


class Node:
    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.procs = {}
        for pid, name, status, mbox, reds, mem, age in PROCESSES:
            call, kind, _ = LABELS[pid]
            self.procs[pid] = {"pid": pid, "name": name, "initial_call": call, "kind": kind, "status": status,
                               "mailbox": mbox, "reductions": reds, "memory": mem, "age_ms": age,
                               "hibernated": status == "hibernated"}
        # reductions_rate: the reductions at the last such request (the node's baseline)
        self.rate_base = None
        self.rate_requests = 0
        self.listeners = {
            "echo_server": {"name": "echo_server", "address": "0.0.0.0:5555", "connections": 1,
                            "max_connections": "infinity", "acceptors": 2, "accepts": 1234,
                            "refusals": 3, "listen_drops": 17, "suspended": False, "draining": False, "supervisor": "<1.0>"},
            "chat_server": {"name": "chat_server", "address": "127.0.0.1:6000", "connections": 0,
                            "max_connections": 100, "acceptors": 1, "accepts": 0, "refusals": 0,
                            "suspended": True, "draining": False, "supervisor": None},
        }

    def uptime_ms(self):
        return 5021 + int((time.monotonic() - self.started) * 1000)

    # Each returns the result object, or raises Refusal(code, message).
    def overview(self, req):
        with self.lock:
            n = len(self.procs)
        return {"node": {"os_pid": OS_PID, "uptime_ms": self.uptime_ms(), "herd_version": "0.1.0", "workers": 2},
                "actors": n,
                "memory": {"rss_bytes": 41000000, "mimalloc_committed_bytes": 9000000,
                           "mimalloc_peak_committed_bytes": 67108864, "stacks_in_use": n, "stacks_carved": 64},
                "rates": {"messages_per_s": 120000.0, "switches_per_s": 240000.0, "spawns_per_s": 0.0},
                "workers": [{"id": 0, "utilization": 0.93, "run_queue": 4, "steals": 10, "parks": 77,
                             "switches": 1000000, "timers": 3, "sends_batched": 1280, "send_flushes": 41},
                            {"id": 1, "utilization": 0.12, "run_queue": 0, "steals": 2, "parks": 901,
                             "switches": 250000, "timers": 0}],
                "long_running": [{"pid": "<7.0>", "duration_ms": 25, "ago_ms": 1200}]}

    def processes(self, req):
        sort = req.get("sort", "reductions")
        limit = req.get("limit", 20)
        if sort not in SORT_FIELD:
            raise Refusal("bad_request", "sort must be mailbox, reductions, memory or age")
        if not isinstance(limit, int) or not 1 <= limit <= 100000:
            raise Refusal("bad_request", "limit must be 1..100000")
        status = req.get("status")
        if status is not None and status not in STATUSES:
            raise Refusal("bad_request", "unknown status")
        with self.lock:
            procs = [copy.deepcopy(p) for p in self.procs.values()]
            if sort == "reductions_rate":
                # Reductions grow at each process's own rate, on a virtual
                # clock that moves one second a request; the figure is the
                # delta since the last such request over its interval.
                self.rate_requests += 1
                for p in procs:
                    p["reductions"] += LABELS[p["pid"]][2] * self.rate_requests
                base, self.rate_base = self.rate_base, (self.rate_requests, dict((p["pid"], p["reductions"]) for p in procs))
                interval_ms = 1000 * (self.rate_requests - base[0]) if base else 0
                for p in procs:
                    delta = p["reductions"] - base[1].get(p["pid"], 0) if base else p["reductions"]
                    p["reductions_per_s"] = delta * 1000.0 / interval_ms if interval_ms else None
                    p["_key"] = delta
        total = len(procs)
        if "name" in req:
            procs = [p for p in procs if p["name"] is not None and req["name"] in p["name"]]
        if status is not None:
            procs = [p for p in procs if p["status"] == status]
        procs.sort(key=lambda p: p["_key"] if sort == "reductions_rate" else p[SORT_FIELD[sort]], reverse=True)
        for p in procs:
            p.pop("_key", None)
        out = {"total": total, "matched": len(procs), "processes": procs[:limit]}
        if sort == "reductions_rate":
            out["interval_ms"] = interval_ms
        return out

    def process(self, req):
        pid = req.get("pid")
        with self.lock:
            p = copy.deepcopy(self.procs.get(pid))
        if p is None:
            raise Refusal("noproc", "no live process %s" % pid)
        del p["age_ms"]
        p.update({"mailbox_bytes": p["mailbox"] * 64, "stack": {"size": 65536, "touched": 4096},
                  "trap_exit": pid in ("<1.0>", "<2.0>", "<5.0>"),
                  "parent": "<2.0>" if pid in ("<3.0>", "<4.0>") else "<1.0>",
                  "supervisor": "<2.0>" if pid in ("<3.0>", "<4.0>") else "<1.0>",
                  "links": ["<2.0>"] if pid in ("<3.0>", "<4.0>") else ["<1.0>"],
                  "monitors": ["<9.0>"] if pid == "<6.0>" else [],
                  "monitored_by": ["<6.0>"] if pid == "<9.0>" else [],
                  "module": {"name": "hot_swap_handler", "version": "v1"} if pid == "<9.0>" else None,
                  "last_ran_ms_ago": 12, "age_ms": self.procs_age(pid), "relations": "ok"})
        return p

    def procs_age(self, pid):
        return dict((x[0], x[6]) for x in PROCESSES)[pid]

    def tree(self, req):
        return {"roots": [{"pid": "<1.0>", "name": "echo_server_sup", "kind": "supervisor",
                           "strategy": "one_for_one", "intensity": 5, "period_ms": 10000,
                           "children": [
                               {"id": "acceptors", "pid": "<2.0>", "kind": "supervisor", "restart": "permanent",
                                "strategy": "one_for_one", "children": [
                                    {"id": "acceptor_1", "pid": "<3.0>", "kind": "worker", "restart": "permanent"},
                                    {"id": "acceptor_2", "pid": "<4.0>", "kind": "worker", "restart": "permanent"}]},
                               {"id": "conns", "pid": "<5.0>", "kind": "supervisor", "restart": "permanent",
                                "strategy": "simple_one_for_one", "children": [
                                    {"id": None, "pid": "<8.1>", "kind": "worker", "restart": "temporary"}],
                                "more": 1500}]},
                          {"pid": "<20.0>", "name": "web", "kind": "supervisor",
                           "strategy": "rest_for_one", "intensity": 10, "period_ms": 10000,
                           "children": [
                               {"id": "conns_sup", "pid": "<21.0>", "kind": "worker", "restart": "permanent",
                                "connections": [
                                    {"pid": "<30.0>", "peer": "127.0.0.1:40001", "tcp_state": "established",
                                     "send_queue": 0, "recv_queue": 5},
                                    {"pid": "<30.1>", "peer": "127.0.0.1:40002", "tcp_state": "close_wait",
                                     "send_queue": 2048, "recv_queue": 0}],
                                "connections_total": 3, "truncated": True}]}]}

    def listeners_(self, req):
        with self.lock:
            return {"listeners": [copy.deepcopy(l) for l in self.listeners.values()]}

    def tables(self, req):
        return {"tables": [
            {"id": 3, "name": "sessions", "type": "set", "protection": "public", "owner": "<7.0>", "heir": None,
             "size": 100000, "memory": 4450112, "key_type": "unsigned long", "value_type": "session"},
            {"id": 4, "name": None, "type": "bag", "protection": "private", "owner": "<8.0>", "heir": "<9.0>",
             "size": 0, "memory": 320, "key_type": "int", "value_type": "\x1b[31mred"}]}

    def nodes(self, req):
        rows = [{"name": "beam@vm", "up": True, "bytes_in": 48211, "bytes_out": 3 * 1048576, "messages_in": 412,
                 "messages_out": 20031, "queued_bytes": 2048, "queued_frames": 7, "last_received_ms": 812,
                 "ticks_missed": 0},
                {"name": "gw2@vm", "up": False, "bytes_in": 0, "bytes_out": 0, "messages_in": 0, "messages_out": 0,
                 "queued_bytes": 0, "queued_frames": 0, "last_received_ms": None, "ticks_missed": 0}]
        if "node" in req:
            rows = [r for r in rows if r["name"] == req["node"]]
            if not rows:
                raise Refusal("not_found", "not connected to node \"%s\"" % req["node"])
        return {"node": "gw@vm", "nodes": rows}

    def modules(self, req):
        return {"modules": [
            {"name": "hot_swap_handler",
             "current": {"version": "v2", "path": "/srv/modules/handler_v2.so", "actors": 10},
             "old": {"version": "v1", "path": "/srv/modules/handler_v1.so", "actors": 990}},
            {"name": "stats_handler",
             "current": {"version": "v1", "path": "/srv/modules/stats_v1.so", "actors": 1}, "old": None}]}

    def kill(self, req):
        pid = req.get("pid")
        reason = req.get("reason", "kill")
        with self.lock:
            if pid not in self.procs:
                raise Refusal("noproc", "no live process %s" % pid)
            del self.procs[pid]
        return {"pid": pid, "reason": reason, "outcome": "exited",
                "exit_reason": "killed" if reason == "kill" else reason, "waited_ms": 3}

    def load(self, req):
        path = req.get("path", "")
        if os.path.basename(path) == "handler_v3.so":
            return {"name": "hot_swap_handler", "version": "v3"}
        raise Refusal("failed", "%s: cannot open shared object file: No such file or directory" % path)

    def set_max_connections(self, req):
        name = req.get("listener")
        mx = req.get("max")
        if not (mx == "infinity" or isinstance(mx, int)):
            raise Refusal("bad_request", "max must be a number or \"infinity\"")
        with self.lock:
            if name not in self.listeners:
                raise Refusal("not_found", "no listener named %s" % name)
            self.listeners[name]["max_connections"] = mx
        return {"listener": name, "max_connections": mx}


# What a chat room name could carry: clear screen, bell, a C1 CSI, DEL, a
# set-window-title OSC, a bidi override, CR and LF; after harmless UTF-8.
HOSTILE = "caf\u00e9 \u2713 \U0001f600\x1b[2J\x07\x9b31m\x7f\x1b]0;owned\x07\u202e\r\n"


def taint(v):
    """v with HOSTILE appended to every string; a trace event gets a field named with it too."""
    if isinstance(v, str):
        return v + HOSTILE
    if isinstance(v, list):
        return [taint(x) for x in v]
    if isinstance(v, dict):
        out = dict((k, taint(x)) for k, x in v.items())
        if "at_ms" in v:
            out["extra" + HOSTILE] = 1
        return out
    return v


class HostileConnection:
    """Sends each reply line with its strings tainted."""

    def __init__(self, conn):
        self.conn = conn

    def sendall(self, data):
        for line in data.split(b"\n"):
            if line:
                self.conn.sendall((json.dumps(taint(json.loads(line))) + "\n").encode())

    def __getattr__(self, name):
        return getattr(self.conn, name)


class Refusal(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def serve_client(conn, node, mode, log):
    f = conn.makefile("rb")
    if mode == "hostile":
        conn = HostileConnection(conn)
    try:
        for raw in f:
            with open(log, "a") as lf:
                lf.write(raw.decode(errors="replace").rstrip("\n") + "\n")
            if mode == "silent":
                continue
            if mode == "malformed":
                conn.sendall(b"this is not json {\n")
                continue
            if mode == "hostile_raw":
                # ...and an overlong '/', a UTF-16 surrogate, a cut-off sequence.
                conn.sendall(b"not json \x1b[2J\x07\xc2\x9b31m\x7f\xff\xfe\r\xc0\xaf\xed\xa0\x80\xe2\x9c{\n")
                continue
            if mode == "not_object":
                conn.sendall(b"[1,2,3]\n")
                continue
            try:
                req = json.loads(raw)
            except ValueError:
                conn.sendall(b'{"v":1,"ok":false,"error":{"code":"parse_error","message":"not JSON"}}\n')
                continue
            rid = req.get("id")
            if mode == "error":
                reply = {"v": 1, "id": rid, "ok": False,
                         "error": {"code": "failed", "message": "the snapshot provider crashed"}}
                conn.sendall((json.dumps(reply) + "\n").encode())
                continue
            if mode == "wrong_shape":
                reply = {"v": 1, "id": rid, "ok": True, "result": {"unexpected": 1}}
                conn.sendall((json.dumps(reply) + "\n").encode())
                continue
            if mode == "close_mid":
                line = json.dumps({"v": 1, "id": rid, "ok": True, "result": node.overview({})}).encode()
                conn.sendall(line[: len(line) // 2])
                conn.shutdown(socket.SHUT_RDWR)
                return
            if req.get("req") == "trace":
                trace(conn, node, req)
                continue
            handler = {"overview": node.overview, "processes": node.processes, "process": node.process,
                       "tree": node.tree, "listeners": node.listeners_, "modules": node.modules, "tables": node.tables,
                       "nodes": node.nodes,
                       "kill": node.kill, "load": node.load,
                       "set_max_connections": node.set_max_connections}.get(req.get("req"))
            try:
                if handler is None:
                    raise Refusal("unknown_request", "no request %r" % req.get("req"))
                reply = {"v": 1, "id": rid, "ok": True, "result": handler(req)}
            except Refusal as r:
                reply = {"v": 1, "id": rid, "ok": False, "error": {"code": r.code, "message": r.message}}
            conn.sendall((json.dumps(reply) + "\n").encode())
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        conn.close()


def trace(conn, node, req):
    rid = req.get("id")
    pid = req.get("pid")
    limit = req.get("limit", 100)
    if pid not in node.procs:
        conn.sendall((json.dumps({"v": 1, "id": rid, "ok": False,
                                  "error": {"code": "noproc", "message": "no live process %s" % pid}}) + "\n").encode())
        return
    send = lambda obj: conn.sendall((json.dumps(dict({"v": 1, "id": rid, "ok": True}, **obj)) + "\n").encode())
    send({"result": {"tracing": pid, "limit": limit}})
    events = [{"at_ms": 5021, "kind": "message", "type": "echo::ping", "bytes": 64},
              {"at_ms": 5022, "kind": "signal", "type": "exit", "from": "<3.0>", "reason": "shutdown"},
              {"at_ms": 5030, "kind": "message", "type": "echo::pong", "bytes": 2048}]
    n = min(limit, len(events))
    for e in events[:n]:
        time.sleep(0.05)  # events arrive over time: the client must print as they come
        send({"event": e})
    send({"done": {"events": n, "why": "limit" if n == limit else "exited"}})


def main():
    path, log = sys.argv[1], sys.argv[2]
    mode = "ok"
    if len(sys.argv) > 3:
        assert sys.argv[3] == "--mode"
        mode = sys.argv[4]
    node = Node()
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o600)
    srv.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve_client, args=(conn, node, mode, log), daemon=True).start()


if __name__ == "__main__":
    main()
