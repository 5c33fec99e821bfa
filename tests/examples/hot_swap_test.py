#!/usr/bin/env python3
"""The hot-swap example under load, checked line by line by its own client.

    hot_swap_test.py SERVER HANDLER_V1 HANDLER_V2 [--connections N]
    hot_swap_test.py --failures SERVER HANDLER_V1
    hot_swap_test.py --options SERVER ECHO_SERVER ECHO_V1
    hot_swap_test.py --purge SERVER HANDLER_V1 HANDLER_V2
    hot_swap_test.py --overwrite SERVER HANDLER_V1 HANDLER_V2

1,000 connections each keep one line outstanding. After 2 s handler_v2.so is
renamed into the module directory and the server gets SIGHUP. Checks: no
connection is dropped; on every connection the answers' version goes from v1
to v2 at most once and never back, and n goes on without a gap or repeat; a
connection opened after the load is answered by v2 from its first line; v1
leaves /proc/PID/maps once no connection runs it; SIGTERM drains, exit 0.
--failures: bad options (exit 2), a directory without a module or with a
broken one (exit 1, saying why), and a broken module loaded by SIGHUP while
v1 runs (refused, v1 goes on answering).
--options: --help lists the server's own options (exit code as echo_server
--help's); a directory whose module is not the one connections run (no
--module given) is refused at start (exit 1, saying which); bad --purge.
--overwrite: the loaded file overwritten in place (same name and inode) is
loaded again at SIGHUP (it used to say "nothing newer" and keep the old
code); a SIGHUP with nothing changed says "nothing newer".
--purge: a connection left on v2 by a downgrade to v1 holds v2 when v2 is
deployed again: refused by default (the message names --purge kill), loaded
with --purge kill, which ends that connection; new connections get the new v2.
Prints HOTSWAP lines with the figures. Bounded in time; every process it
starts is stopped by its PID.
"""
import asyncio
import os
import shutil
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RUN_BEFORE_S = 2.0
RUN_AFTER_S = 3.0


def kill_and_clean(p, moddir):
    """A test's end, passed or not: its server stopped by PID, its module directory gone."""
    if p and p.poll() is None:
        p.kill()
        p.wait()
    shutil.rmtree(moddir, ignore_errors=True)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def mapped(pid, what):
    with open(f"/proc/{pid}/maps") as f:
        return any(what in line for line in f)


class Conn:
    def __init__(self, idx):
        self.idx = idx
        self.versions = []  # (first n, version) runs
        self.n = 0
        self.error = None


async def drive(conn, port, stop):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as e:
        conn.error = f"connect: {e}"
        return
    try:
        while not stop.is_set():
            payload = f"c{conn.idx} {conn.n + 1}"
            writer.write(payload.encode() + b"\n")
            line = await asyncio.wait_for(reader.readline(), 30)
            if not line:
                conn.error = f"disconnected after {conn.n} lines"
                return
            version, n, rest = line.decode().rstrip("\n").split(" ", 2)
            if int(n) != conn.n + 1 or rest != payload:
                conn.error = f"line {conn.n + 1}: got {line!r}"
                return
            conn.n += 1
            if not conn.versions or conn.versions[-1][1] != version:
                conn.versions.append((conn.n, version))
        writer.close()
    except (OSError, asyncio.TimeoutError, ValueError) as e:
        conn.error = f"after {conn.n} lines: {type(e).__name__} {e}"


async def until(cond, what, bound_s=60):
    """Waits for cond() (checked every 20 ms), failing after bound_s: the
    workload's phases end on what happened, not on a clock, so a busy machine
    only makes them longer."""
    deadline = time.monotonic() + bound_s
    while not cond():
        if time.monotonic() > deadline:
            fail(f"{what} within {bound_s} s")
        await asyncio.sleep(0.02)


async def first_answer(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"fresh\n")
    line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return line.decode()


def failures(server, v1):
    def run(*args):
        r = subprocess.run([server, "--port", "0", "--bind", "127.0.0.1", *args],
                           capture_output=True, text=True, timeout=20)
        return r.returncode, r.stderr

    code, err = run()
    if code != 2 or "--module-dir" not in err:
        fail(f"no --module-dir: exit {code}, stderr {err!r}")
    moddir = tempfile.mkdtemp(prefix="hot_swap_fail_")
    p = None
    try:
        code, err = run("--module-dir", moddir)
        if code != 1 or "no *.so" not in err:
            fail(f"empty module dir: exit {code}, stderr {err!r}")
        with open(os.path.join(moddir, "broken.so"), "wb") as f:
            f.write(b"this is not an ELF file\n")
        code, err = run("--module-dir", moddir)
        if code != 1 or "load failed" not in err:
            fail(f"only a broken module: exit {code}, stderr {err!r}")
        os.unlink(os.path.join(moddir, "broken.so"))
        shutil.copy(v1, os.path.join(moddir, "handler_v1.so"))
        p = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--module-dir", moddir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.stdout.readline()
        port = int(p.stdout.readline().strip().rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            f = s.makefile("rwb")
            f.write(b"one\n"); f.flush()
            if f.readline() != b"v1 1 one\n":
                fail("v1 did not answer")
            newer = os.path.join(moddir, "newer.so")
            with open(newer, "wb") as g:
                g.write(b"\x7fELF but not really\n")
            t = os.stat(os.path.join(moddir, "handler_v1.so")).st_mtime + 1  # newer than v1, without waiting
            os.utime(newer, (t, t))
            p.send_signal(signal.SIGHUP)
            # The load has been tried (and refused) once the server says so on
            # stderr. Raw reads of the descriptor: a buffered readline() could
            # pull the awaited line into Python's buffer with the one before
            # it, and select() would then wait out the deadline on an empty
            # pipe (this test took 61 s that way).
            seen, end = "", time.monotonic() + 60
            while "load failed" not in seen and time.monotonic() < end:
                if select.select([p.stderr], [], [], 1)[0]:
                    chunk = os.read(p.stderr.fileno(), 65536)
                    if not chunk:
                        break
                    seen += chunk.decode(errors="replace")
            f.write(b"two\n"); f.flush()
            if f.readline() != b"v1 2 two\n":
                fail("after a refused load the connection is no longer served by v1")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=15)
        err = seen + p.stderr.read()
        if "load failed" not in err or "newer.so" not in err:
            fail(f"the refused SIGHUP load was not reported: {err!r}")
        print("PASS", flush=True)
    finally:
        kill_and_clean(p, moddir)


def options(server, echo_server, echo_v1):
    r = subprocess.run([server, "--help"], capture_output=True, text=True, timeout=20)
    e = subprocess.run([echo_server, "--help"], capture_output=True, text=True, timeout=20)
    for flag in ("--module-dir DIR", "--module NAME", "--purge soft|kill", "--purge-timeout-ms MS"):
        if flag not in r.stdout:
            fail(f"--help does not list {flag}: {r.stdout!r}")
    if "--port" not in r.stdout + r.stderr or r.returncode != e.returncode:
        fail(f"--help: exit {r.returncode} (echo_server's: {e.returncode}), shared options missing: {r.stderr!r}")
    moddir = tempfile.mkdtemp(prefix="hot_swap_opts_")
    try:
        shutil.copy(echo_v1, os.path.join(moddir, "echo_v1.so"))
        r = subprocess.run([server, "--port", "0", "--bind", "127.0.0.1", "--module-dir", moddir],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 1 or "holds module echo_handler, not line_handler" not in r.stderr \
                or "--module NAME" not in r.stderr or "listening on" in r.stdout:
            fail(f"a directory without the module connections run: exit {r.returncode}, "
                 f"stdout {r.stdout!r}, stderr {r.stderr!r}")
        r = subprocess.run([server, "--port", "0", "--module-dir", moddir, "--purge", "hard"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 2 or "--purge: 'hard' is not soft or kill" not in r.stderr:
            fail(f"--purge hard: exit {r.returncode}, stderr {r.stderr!r}")
        print("PASS", flush=True)
    finally:
        shutil.rmtree(moddir, ignore_errors=True)


def purge(server, v1, v2):
    stamp = [time.time()]

    def deploy(src, name):
        stamp[0] += 1  # a newer modification time than the last deploy's, without waiting
        tmp = os.path.join(moddir, "." + name + ".tmp")
        shutil.copy(src, tmp)
        os.utime(tmp, (stamp[0], stamp[0]))
        os.rename(tmp, os.path.join(moddir, name))

    def start(*extra):
        p = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--module-dir", moddir, *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        p.stdout.readline()
        return p, int(p.stdout.readline().strip().rsplit(":", 1)[1])

    def hup(p, want):
        p.send_signal(signal.SIGHUP)
        line = p.stdout.readline()
        if not line.startswith(want):
            fail(f"after SIGHUP expected {want!r}, got {line!r}; stderr so far: {p.stderr.read() if p.poll() is not None else ''!r}")

    def ask(f, text):
        f.write(text.encode() + b"\n")
        f.flush()
        return f.readline().decode()

    procs = []
    moddir = tempfile.mkdtemp(prefix="hot_swap_purge_")
    try:
        for mode in ("soft", "kill"):
            for name in os.listdir(moddir):
                os.unlink(os.path.join(moddir, name))
            deploy(v1, "a_v1.so")
            p, port = start(*(["--purge", "kill"] if mode == "kill" else []))
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                f = s.makefile("rwb")
                if ask(f, "one") != "v1 1 one\n":
                    fail("v1 did not answer")
                deploy(v2, "b_v2.so")
                hup(p, "loaded line_handler v2")
                if ask(f, "two") != "v2 2 two\n":
                    fail("the connection did not switch to v2")
                deploy(v1, "c_v1.so")  # a downgrade: v1 does not take v2's state, the connection stays on v2
                hup(p, "loaded line_handler v1")
                if ask(f, "three") != "v2 3 three\n":
                    fail("the connection left v2 at a downgrade")
                deploy(v2, "d_v2.so")
                if mode == "soft":
                    p.send_signal(signal.SIGHUP)
                    if ask(f, "four") != "v2 4 four\n":
                        fail("a refused load ended the connection")
                    if first_answer_sync(port) != "v1 1 fresh\n":
                        fail("after a refused load a new connection is not served by v1")
                else:
                    hup(p, "loaded line_handler v2")
                    f.write(b"four\n")
                    f.flush()
                    if f.readline() != b"":
                        fail("the connection on the purged version was not ended")
                    if first_answer_sync(port) != "v2 1 fresh\n":
                        fail("after the purge a new connection is not served by the new v2")
            p.send_signal(signal.SIGTERM)
            if p.wait(timeout=15) != 0:
                fail(f"{mode}: exit code {p.returncode}")
            err = p.stderr.read()
            if mode == "soft" and ("old version v2 is still in use" not in err or "--purge kill" not in err):
                fail(f"the soft refusal did not say why and what to do: {err!r}")
        print("PASS", flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(moddir, ignore_errors=True)


def overwrite(server, v1, v2):
    moddir = tempfile.mkdtemp(prefix="hot_swap_overwrite_")
    p = None
    try:
        target = os.path.join(moddir, "line.so")
        shutil.copy(v1, target)
        os.chmod(target, 0o644)
        p = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--module-dir", moddir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.stdout.readline()
        port = int(p.stdout.readline().strip().rsplit(":", 1)[1])
        if first_answer_sync(port) != "v1 1 fresh\n":
            fail("v1 did not answer")
        ino = os.stat(target).st_ino
        mtime = os.stat(target).st_mtime_ns
        with open(v2, "rb") as src, open(target, "r+b") as dst:  # in place: same inode
            dst.write(src.read())
            dst.truncate()
        os.utime(target, ns=(mtime, mtime))  # as cp -p would: the modification time alone says nothing
        if os.stat(target).st_ino != ino:
            fail("the overwrite made a new inode")
        p.send_signal(signal.SIGHUP)
        line = p.stdout.readline()
        if not line.startswith("loaded line_handler v2"):
            fail(f"the overwritten file was not loaded again: {line!r}")
        if first_answer_sync(port) != "v2 1 fresh\n":
            fail("a new connection is not served by the overwritten file's v2")
        p.send_signal(signal.SIGHUP)  # nothing changed since
        err = ""
        while "nothing newer than " + target not in err:  # bounded by the test's timeout
            line = p.stderr.readline()
            if not line:
                fail(f"an unchanged file was not recognised at SIGHUP: {err!r}")
            err += line
        p.send_signal(signal.SIGTERM)
        if p.wait(timeout=15) != 0:
            fail(f"exit code {p.returncode}")
        print("PASS", flush=True)
    finally:
        kill_and_clean(p, moddir)


def first_answer_sync(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        f = s.makefile("rwb")
        f.write(b"fresh\n")
        f.flush()
        return f.readline().decode()


def main():
    if sys.argv[1] == "--failures":
        return failures(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "--options":
        return options(*sys.argv[2:5])
    if sys.argv[1] == "--purge":
        return purge(*sys.argv[2:5])
    if sys.argv[1] == "--overwrite":
        return overwrite(*sys.argv[2:5])
    server, v1, v2 = sys.argv[1:4]
    n_conns = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--connections" else 1000
    moddir = tempfile.mkdtemp(prefix="hot_swap_test_")  # 0700: the loader refuses others' dirs
    shutil.copy(v1, os.path.join(moddir, "handler_v1.so"))
    p = subprocess.Popen([server, "--port", "0", "--bind", "127.0.0.1", "--module-dir", moddir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_lines = []
    try:
        line = p.stdout.readline()
        if not line.startswith("loaded line_handler v1"):
            fail(f"expected the v1 load line, got {line!r}")
        line = p.stdout.readline()
        if not line.startswith("listening on "):
            fail(f"no 'listening on' line, got {line!r}")
        port = int(line.strip().rsplit(":", 1)[1])
        reader_thread = threading.Thread(target=lambda: out_lines.extend(iter(p.stdout.readline, "")), daemon=True)
        reader_thread.start()

        async def scenario():
            stop = asyncio.Event()
            conns = [Conn(i) for i in range(n_conns)]
            tasks = [asyncio.create_task(drive(c, port, stop)) for c in conns]
            await asyncio.sleep(RUN_BEFORE_S)  # load before the swap: the workload
            # ... and at least until every connection has been answered by v1.
            await until(lambda: all(c.versions or c.error for c in conns),
                        "not every connection was answered by v1")
            if not mapped(p.pid, "handler_v1"):
                fail("v1 is not mapped while it runs")
            tmp = os.path.join(moddir, ".handler_v2.so.tmp")
            shutil.copy(v2, tmp)
            os.rename(tmp, os.path.join(moddir, "handler_v2.so"))  # deploy by rename
            t0 = time.monotonic()
            p.send_signal(signal.SIGHUP)
            # A new connection is answered by v2 as soon as the load is done.
            fresh = None
            while time.monotonic() - t0 < 10:
                fresh = await first_answer(port)
                if fresh.startswith("v2"):
                    break
            to_v2_ms = (time.monotonic() - t0) * 1000
            if not fresh or not fresh.startswith("v2 1 fresh"):
                fail(f"a connection opened after the load answered {fresh!r}")
            await asyncio.sleep(RUN_AFTER_S)  # load after it: the workload
            # ... and at least until every connection has been answered by v2.
            await until(lambda: all(c.error or (c.versions and c.versions[-1][1] == "v2") for c in conns),
                        "not every connection was answered by v2")
            fresh_after = await first_answer(port)
            stop.set()
            await asyncio.gather(*tasks)
            return conns, to_v2_ms, fresh_after

        conns, to_v2_ms, fresh_after = asyncio.run(asyncio.wait_for(scenario(), 180))
        if not fresh_after.startswith("v2 1 fresh"):
            fail(f"a later connection answered {fresh_after!r}")
        errors = [f"conn {c.idx}: {c.error}" for c in conns if c.error]
        if errors:
            fail(f"{len(errors)} connection(s) failed, first: {errors[:3]}")
        switched = sum(1 for c in conns if [v for _, v in c.versions] == ["v1", "v2"])
        bad = [c for c in conns if [v for _, v in c.versions] not in (["v1"], ["v1", "v2"], ["v2"])]
        if bad:
            fail(f"conn {bad[0].idx} went through versions {bad[0].versions}")
        if switched != n_conns:
            fail(f"only {switched} of {n_conns} connections switched from v1 to v2")
        total = sum(c.n for c in conns)
        # v1 is unloaded once nothing runs it: every connection switched at its next line.
        deadline = time.monotonic() + 5
        while mapped(p.pid, "handler_v1") and time.monotonic() < deadline:
            time.sleep(0.05)  # polls the maps
        if mapped(p.pid, "handler_v1"):
            fail("handler_v1 is still mapped after every connection left it")
        if not mapped(p.pid, "handler_v2"):
            fail("handler_v2 is not mapped")
        loads = [l for l in out_lines if l.startswith("loaded line_handler v2")]
        if not loads:
            fail(f"no v2 load line in {out_lines!r}")
        print(f"HOTSWAP connections={n_conns} lines={total} disconnects=0 switched={switched} "
              f"sighup_to_new_conn_v2_ms={to_v2_ms:.1f} load_line={loads[0].strip()!r}", flush=True)
        p.send_signal(signal.SIGTERM)
        code = p.wait(timeout=15)
        if code != 0:
            fail(f"exit code {code} after SIGTERM; stderr: {p.stderr.read()}")
        print("PASS", flush=True)
    finally:
        kill_and_clean(p, moddir)


if __name__ == "__main__":
    main()
