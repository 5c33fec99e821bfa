"""Minimal HTTP/1.1 and WebSocket (RFC 6455) clients for contract_test.py.

Standard library only, on purpose: the contract test sends malformed frames,
fragments and odd requests that a full client library would refuse to send.
127.0.0.1 only.
"""
import base64
import hashlib
import os
import socket
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WsClosed(Exception):
    pass


class Http:
    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("connection closed")
        self.buf += data

    def request(self, method, path, body=None, headers=None):
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        for k, v in (headers or {}).items():
            lines.append(f"{k}: {v}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
        try:
            return self.response()
        except ConnectionError:
            return 0, {}, b""

    def response(self):
        """(status, lower-cased headers, body) of the next response."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    self._fill()
                size_line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                while len(self.buf) < size + 2:
                    self._fill()
                body += self.buf[:size]
                self.buf = self.buf[size + 2:]
                if size == 0:
                    return status, headers, body
        while len(self.buf) < n:
            self._fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def read_all(self, timeout=10):
        """Everything until the server closes (or timeout)."""
        self.sock.settimeout(timeout)
        out = self.buf
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                out += data
        except (socket.timeout, ConnectionResetError):
            pass
        return out


class Ws:
    def __init__(self, port, user, rcvbuf=None, timeout=10):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
        self.sock = s
        key = base64.b64encode(os.urandom(16))
        s.sendall(b"GET /ws?user=" + user.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                  b"Sec-WebSocket-Key: " + key + b"\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = s.recv(4096)
            if not data:
                raise ConnectionError("closed during the handshake")
            buf += data
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        if not head.startswith(b"HTTP/1.1 101") or accept not in head:
            raise ConnectionError(f"upgrade refused: {head[:80]!r}")

    def send_frame(self, opcode, payload, fin=True):
        mask = os.urandom(4)
        n = len(payload)
        hdr = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            hdr += bytes([0x80 | n])
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            hdr += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        body = bytes(b ^ mask[i & 3] for i, b in enumerate(payload))
        self.sock.sendall(hdr + mask + body)

    def send_text(self, text):
        self.send_frame(1, text.encode())

    def _need(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError() from None
            except ConnectionResetError as e:
                raise WsClosed(str(e)) from None
            if not data:
                raise WsClosed("end of stream")
            self.buf += data

    def recv(self, timeout=10, auto_pong=True):
        """Next frame as (opcode, payload); answers pings unless auto_pong is off."""
        deadline = time.monotonic() + timeout
        while True:
            self._need(2, deadline)
            b0, b1 = self.buf[0], self.buf[1]
            n, off = b1 & 0x7F, 2
            if n == 126:
                self._need(4, deadline)
                n, off = int.from_bytes(self.buf[2:4], "big"), 4
            elif n == 127:
                self._need(10, deadline)
                n, off = int.from_bytes(self.buf[2:10], "big"), 10
            self._need(off + n, deadline)
            op, data = b0 & 0x0F, self.buf[off:off + n]
            self.buf = self.buf[off + n:]
            if op == 9 and auto_pong:
                self.send_frame(10, data)
                continue
            return op, data

    def recv_text(self, timeout=10):
        while True:
            op, data = self.recv(timeout)
            if op == 1:
                return data.decode()
            if op == 8:
                raise WsClosed(f"close {int.from_bytes(data[:2], 'big') if len(data) >= 2 else None}")
