#!/usr/bin/env python3
"""A deliberately faulty push gateway, so that pushbench's checks are seen to
fail: it answers every push as delivered but drops every 7th user-push frame
and swaps every 11th with the one after it. Just enough of protocol v1 for
pushbench (upgrade, join, keep-alive POST /push/...); threads, 127.0.0.1.

    faulty_gateway.py --port 0     (prints `listening on 127.0.0.1:PORT`)
"""
import base64
import hashlib
import socket
import sys
import threading

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
users, rooms, lock = {}, {}, threading.Lock()
count = [0]
held = {}  # connection -> a frame held back to be sent after the next one


def frame(text):
    data = text.encode()
    n = len(data)
    hdr = bytes([0x81, n]) if n < 126 else bytes([0x81, 126]) + n.to_bytes(2, "big")
    return hdr + data


def recv_exact(conn, buf, n):
    while len(buf) < n:
        data = conn.recv(65536)
        if not data:
            raise ConnectionError
        buf += data
    return buf[:n], buf[n:]


def websocket(conn, head, rest):
    user = head.split(b"user=", 1)[1].split()[0].decode()
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key:")][0]
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    with lock:
        users[user] = conn
    buf = rest
    while True:
        hdr, buf = recv_exact(conn, buf, 2)
        n = hdr[1] & 0x7F
        if n == 126:
            ext, buf = recv_exact(conn, buf, 2)
            n = int.from_bytes(ext, "big")
        mask, buf = recv_exact(conn, buf, 4)
        payload, buf = recv_exact(conn, buf, n)
        text = bytes(b ^ mask[i & 3] for i, b in enumerate(payload)).decode()
        if hdr[0] & 0x0F == 1 and text.startswith("join "):
            with lock:
                rooms.setdefault(text[5:], []).append(conn)
                conn.sendall(frame("ok " + text))


def deliver(conn, text):
    count[0] += 1
    if count[0] % 7 == 0:
        return  # lost
    if count[0] % 11 == 0 and conn not in held:
        held[conn] = text  # goes out after the next frame to this connection
        return
    conn.sendall(frame(text))
    if conn in held:
        conn.sendall(frame(held.pop(conn)))


def serve(conn):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
            head, buf = buf.split(b"\r\n\r\n", 1)
            if head.startswith(b"GET /ws"):
                return websocket(conn, head, buf)
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body, buf = recv_exact(conn, buf, length)
            path = head.split()[1].decode()
            with lock:
                targets = [users.get(path[11:])] if path.startswith("/push/user/") else rooms.get(path[11:], [])
                targets = [t for t in targets if t]
                for t in targets:
                    deliver(t, body.decode())
            reply = b'{"delivered":%d}' % len(targets)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(reply), reply))
    except (ConnectionError, OSError):
        pass


def main():
    if sys.argv[1:] != ["--port", "0"]:
        sys.exit(__doc__)
    ls = socket.create_server(("127.0.0.1", 0), backlog=1024)
    print(f"listening on 127.0.0.1:{ls.getsockname()[1]}", flush=True)
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
