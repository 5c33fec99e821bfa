#!/usr/bin/env python3
"""Conformance against herd's echo WebSocket server with Python's `websockets`
(Debian python3-websockets): text, binary, large, fragmented, ping, and the
close handshake both ways. Usage: python_client.py PORT. Exit 0 when every case
passes; prints one line per case. Bounded: every wait has a timeout."""
import asyncio
import sys

import websockets


async def main(port: int) -> int:
    url = f"ws://127.0.0.1:{port}/ws"
    failures = []

    def check(name, ok):
        print(("ok " if ok else "FAIL ") + name, flush=True)
        if not ok:
            failures.append(name)

    async with websockets.connect(url, max_size=1 << 21, open_timeout=10, close_timeout=10) as ws:
        await ws.send("hello")
        check("text", await asyncio.wait_for(ws.recv(), 10) == "hello")
        blob = bytes(range(256)) * 400
        await ws.send(blob)
        check("binary 100 KiB", await asyncio.wait_for(ws.recv(), 10) == blob)
        text = "κόσμε " * 30000
        await ws.send(text)
        check("large UTF-8 text", await asyncio.wait_for(ws.recv(), 10) == text)
        # An iterable is sent as one fragmented message (one frame per item),
        # here with a multi-byte character split between two fragments.
        await ws.send(["frag", "ment", "ed κ", "όσμε"])
        check("fragmented", await asyncio.wait_for(ws.recv(), 10) == "fragmented κόσμε")
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 10)
        check("ping answered", True)
        await ws.close(code=1000, reason="bye")
        check("close 1000 echoed", ws.close_code == 1000)

    async with websockets.connect(url, open_timeout=10, close_timeout=10) as ws:
        await ws.send("close 4001")
        try:
            await asyncio.wait_for(ws.recv(), 10)
            check("server close 4001", False)
        except websockets.ConnectionClosed as e:
            check("server close 4001", e.rcvd is not None and e.rcvd.code == 4001)

    try:
        async with websockets.connect(url, open_timeout=10, close_timeout=10) as ws:
            await ws.send(b"\x00" * ((1 << 20) + 1))
            await asyncio.wait_for(ws.recv(), 10)
            check("over max_message: 1009", False)
    except websockets.ConnectionClosed as e:
        check("over max_message: 1009", e.rcvd is not None and e.rcvd.code == 1009)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(asyncio.wait_for(main(int(sys.argv[1])), 60)))
