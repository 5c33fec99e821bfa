"""What the observer CLI's tests share: a fake node in a subprocess, running
herd-observer with a deadline, and a tiny runner for named checks."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


class FakeNode:
    """fake_node.py on a socket in a fresh 0700 directory; stopped by its PID."""

    def __init__(self, mode="ok"):
        self.dir = tempfile.mkdtemp(prefix="herd-observer-test-")
        self.socket = os.path.join(self.dir, "node.sock")
        self.log = os.path.join(self.dir, "requests.log")
        open(self.log, "w").close()
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_node.py"), self.socket, self.log,
                                   "--mode", mode], stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise AssertionError("the fake node did not start: %r" % line)

    def requests(self):
        """Every request line the node received so far, parsed."""
        with open(self.log) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_cli(cli, *args, timeout=20):
    """herd-observer ARGS -> CompletedProcess (text). A run past `timeout` fails the check."""
    try:
        return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("herd-observer %s did not finish within %d s" % (" ".join(args), timeout))


def expect(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n  " + str(c) for c in context))


def expect_ok(r, what):
    expect(r.returncode == 0, "%s: exit %d, expected 0" % (what, r.returncode), "stdout: " + r.stdout,
           "stderr: " + r.stderr)


def one_json_line(r, what):
    expect_ok(r, what)
    lines = r.stdout.splitlines()
    expect(len(lines) == 1, what + ": --json must print exactly one line", r.stdout)
    return json.loads(lines[0])


def wait_for(pred, timeout, interval=0.1):
    """Polls pred() until it returns something truthy or `timeout` s pass; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)  # the poll's interval


class Skipped(Exception):
    """A check that cannot run here (a missing tool, not root) raises this."""


def run_checks(checks, *args):
    """Runs each check(*args); prints PASS/FAIL/SKIP per check; exit 1 if any
    failed, else SKIP (ctest: Not Run) if any could not run here, else 0."""
    failed = skipped = 0
    for check in checks:
        start = time.monotonic()
        try:
            check(*args)
            print("PASS %s (%.1f s)" % (check.__name__, time.monotonic() - start), flush=True)
        except Skipped as why:
            skipped += 1
            print("SKIP %s: %s" % (check.__name__, why), flush=True)
        except Exception:
            failed += 1
            print("FAIL %s\n%s" % (check.__name__, traceback.format_exc()), flush=True)
    if failed:
        print("%d of %d checks failed" % (failed, len(checks)))
        sys.exit(1)
    if skipped:
        print("%d of %d checks could not run here (the others passed)" % (skipped, len(checks)))
        sys.exit(SKIP)
    print("all %d checks passed" % len(checks))
    sys.exit(0)
