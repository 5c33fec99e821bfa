#!/usr/bin/env python3
"""A Unix socket server that is not a herd node, for herd-observer's tests of
what it must refuse or give up on:

    hostile_server.py SOCKET MODE

Modes:
    backlog_full  listen, never accept, and fill the listen backlog itself,
                  so a further connect cannot complete
    deep          answer every request line with a reply whose "result" is
                  an array nested 50,000 deep
    other_uid     bind as root, then listen and answer as uid 65534 (what a
                  socket planted by another user looks like to SO_PEERCRED);
                  it answers like a node with no modules
"ready" is printed once the socket is listening. It runs until killed.
"""
import json
import os
import signal
import socket
import sys
import threading

NOBODY = 65534
DEPTH = 50000


def fill_backlog(path):
    """Connects to `path` until the kernel says the backlog is full; returns the sockets (kept open)."""
    held = []
    while True:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except BlockingIOError:
            c.close()
            return held
        held.append(c)
        if len(held) > 1000:
            raise SystemExit("the backlog never filled")


def answer(conn, reply_for):
    f = conn.makefile("rb")
    try:
        for raw in f:
            req = json.loads(raw)
            conn.sendall(reply_for(req))
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        conn.close()


def deep_reply(req):
    return ('{"v":1,"id":%d,"ok":true,"result":' % req.get("id", 0) + "[" * DEPTH + "]" * DEPTH + "}\n").encode()


def no_modules_reply(req):
    return (json.dumps({"v": 1, "id": req.get("id"), "ok": True, "result": {"modules": []}}) + "\n").encode()


def main():
    path, mode = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    if mode == "other_uid":
        # SO_PEERCRED reports who called listen(), not who bound.
        os.setgid(NOBODY)
        os.setgroups([])
        os.setuid(NOBODY)
    srv.listen(0 if mode == "backlog_full" else 16)
    held = fill_backlog(path) if mode == "backlog_full" else []
    print("ready", flush=True)
    if mode == "backlog_full":
        while True:
            signal.pause()
    reply_for = {"deep": deep_reply, "other_uid": no_modules_reply}[mode]
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=answer, args=(conn, reply_for), daemon=True).start()


if __name__ == "__main__":
    main()
