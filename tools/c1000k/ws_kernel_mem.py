#!/usr/bin/env python3
"""Kernel memory of idle WebSocket connections over real TCP (loopback).

Starts herd's WebSocket echo server (`ws_idlebench --serve`: one worker,
idle connections hibernate after 100 ms, pings every 25 s) in its own
process, opens N WebSocket connections to it from this process (blocking
sockets, each an upgrade checked for its 101, spread over 127.0.0.1..4 so
TIME_WAIT from an earlier run does not exhaust the ports), and reads before
and after:
  /proc/net/sockstat   sockets used, TCP sockets, TCP mem (pages of socket
                       buffers: ~0 while idle, nothing queued)
  /proc/slabinfo       (root) the slab caches a connection allocates from:
                       TCP (struct tcp_sock), sock_inode_cache, filp,
                       dentry, eventpoll_epi (the server's epoll entries)
  /proc/meminfo        Slab, as a cross-check (other processes move it too)
  the server's VmRSS   herd's user-space bytes per connection
Both ends of a loopback connection live in this kernel: the per-connection
kernel cost of a server is one end (half the socket caches) plus its epoll
entry. One RESULT line; the server is stopped by closing its stdin (then by
its PID). 127.0.0.1 only; bounded (a connection that does not answer in 10 s
fails the run).

  tools/c1000k/ws_kernel_mem.py BUILD_DIR [N=19000]
"""
import os
import re
import resource
import socket
import subprocess
import sys
import time

CACHES = ["TCP", "sock_inode_cache", "filp", "dentry", "eventpoll_epi"]
SERVER_ONLY = {"eventpoll_epi"}  # the client here uses blocking sockets, no epoll


def sockstat():
    out = {}
    for line in open("/proc/net/sockstat"):
        name, _, rest = line.partition(":")
        f = rest.split()
        for k, v in zip(f[0::2], f[1::2]):
            out[f"{name}.{k}"] = int(v)
    return out


def slabs():
    try:
        lines = open("/proc/slabinfo").read().splitlines()[2:]
    except OSError:
        return None
    out = {}
    for line in lines:
        f = line.split()
        if f[0] in CACHES:
            # objects in use, object size, and the memory of the slabs (pages)
            out[f[0]] = (int(f[1]), int(f[3]), int(f[14]) * int(f[5]) * 4096)
    return out


def meminfo(key):
    for line in open("/proc/meminfo"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def open_ws(port, i):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.bind((f"127.0.0.{1 + i % 4}", 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        if not b:
            raise RuntimeError(f"connection {i}: closed before the 101")
        head += b
    if not head.startswith(b"HTTP/1.1 101") or b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" not in head:
        raise RuntimeError(f"connection {i}: not the 101 expected: {head[:60]!r}")
    return s


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 19000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and n + 64 > hard:
        print(f"ws_kernel_mem: {n} connections need {n + 64} fds; the hard limit is {hard}", file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = subprocess.Popen([os.path.join(build, "tests/unit/websocket/ws_idlebench"), "--serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    conns = []
    try:
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", server.stdout.readline())
        if not m:
            print("ws_kernel_mem: the server did not start", file=sys.stderr)
            return 1
        port = int(m.group(1))
        warm = [open_ws(port, i) for i in range(200)]  # the server's pools and tables warm
        time.sleep(1.5)  # a measuring program: let the warm-up connections hibernate
        s0, k0, slab0, rss0 = sockstat(), slabs(), meminfo("Slab"), rss(server.pid)
        t0 = time.monotonic()
        for i in range(n):
            conns.append(open_ws(port, i))
        open_s = time.monotonic() - t0
        time.sleep(1.5)  # idle: every connection hibernated (100 ms), nothing queued
        s1, k1, slab1, rss1 = sockstat(), slabs(), meminfo("Slab"), rss(server.pid)
        fields = {
            "connections": n,
            "open_s": round(open_s, 2),
            "sockets_used_delta": s1["sockets.used"] - s0["sockets.used"],
            "tcp_alloc_delta": s1["TCP.alloc"] - s0["TCP.alloc"],
            "tcp_mem_pages_delta": s1["TCP.mem"] - s0["TCP.mem"],
            "meminfo_slab_bytes_per_connection": round((slab1 - slab0) / n),
            "server_rss_bytes_per_connection": round((rss1 - rss0) / n),
        }
        if k0 and k1:
            end_bytes = 0.0  # one end's share of the socket caches
            server_bytes = 0.0
            for c in CACHES:
                objs = k1[c][0] - k0[c][0]
                per = objs * k1[c][1] / n
                fields[f"{c}_objs_delta"] = objs
                fields[f"{c}_bytes_per_connection"] = round(per)
                if c in SERVER_ONLY:
                    server_bytes += per
                else:
                    end_bytes += per / 2
            server_bytes += end_bytes
            fields["kernel_bytes_per_server_end"] = round(server_bytes)
            fields["tcp_buffer_bytes_per_end"] = round((s1["TCP.mem"] - s0["TCP.mem"]) * 4096 / (2 * n))
        else:
            fields["slabinfo"] = "unreadable (not root)"
        for name in ("tcp_rmem", "tcp_wmem", "tcp_mem"):
            fields[name] = open(f"/proc/sys/net/ipv4/{name}").read().split()
            fields[name] = "/".join(fields[name])
        print("RESULT ws_kernel_mem " + " ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
        for s in warm:
            s.close()
        return 0
    finally:
        for s in conns:
            s.close()
        server.stdin.close()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    sys.exit(main())
