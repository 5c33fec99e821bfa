#!/usr/bin/env python3
"""Text from the node never reaches the terminal raw: a fake node that
appends escape sequences and other control characters to every string it
sends (fake_node.py --mode hostile), and one that answers with raw bytes
that are neither JSON nor UTF-8 (hostile_raw). Every view, error line and
trace line must come out as valid UTF-8 without a control character, the
node's text still there, escaped; --json must stay valid JSON that decodes
to exactly what the node sent.

    escapes_test.py HERD_OBSERVER
"""
import json
import subprocess
import sys

from fake_node import HOSTILE
from support import FakeNode, expect, run_checks

# How HOSTILE reads once escaped (terminal_text.hpp).
ESCAPED = "caf\u00e9 \u2713 \U0001f600\\x1b[2J\\x07\\u009b31m\\x7f\\x1b]0;owned\\x07\\u202e\\x0d\\x0a"

VIEWS = [["overview"], ["processes"], ["processes", "--sort", "mailbox"], ["process", "6.0"], ["process", "9.0"],
         ["tree"], ["listeners"], ["modules"], ["trace", "5.0"], ["kill", "6.0"],
         ["set_max_connections", "echo_server", "10"]]
ERRORS = [["process", "99.0"], ["kill", "99.0"], ["load", "/srv/modules/nothing.so"]]


def run_bytes(cli, *args):
    try:
        return subprocess.run([cli, *args], capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("herd-observer %s did not finish within 20 s" % " ".join(args))


def expect_terminal_safe(data, what):
    """data (bytes) is UTF-8 without C0 (but newline), DEL, C1, or bidi overrides."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("%s: not valid UTF-8 (%s)" % (what, e), data)
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"]
    expect(not bad, "%s: raw control characters %r reach the terminal" % (what, bad), text)
    return text


def run_safe(cli, node, args, code, stream, prefix=""):
    """Runs the CLI against node; checks its exit code and that the chosen
    stream ("stdout" or "stderr") holds no raw control character. Returns
    (what, that stream's text)."""
    what = prefix + " ".join(args)
    r = run_bytes(cli, "--socket", node.socket, *args)
    expect(r.returncode == code, "%s: exit %d" % (what, r.returncode), r.stderr)
    return what, expect_terminal_safe(getattr(r, stream), what)


def every_view_is_escaped(cli):
    with FakeNode("hostile") as node:
        for args in VIEWS:
            what, out = run_safe(cli, node, args, 0, "stdout")
            expect(ESCAPED in out, what + ": the node's text is shown, escaped", out)


def every_error_line_is_escaped(cli):
    with FakeNode("hostile") as node:
        for args in ERRORS:
            what, err = run_safe(cli, node, args, 1, "stderr")
            expect(err.startswith("herd-observer: the node answered ") and ESCAPED in err,
                   what + ": the node's code and message, escaped", err)
            expect(len(err.splitlines()) == 1, what + ": one line", err)
    with FakeNode("hostile_raw") as node:
        for args in (["overview"], ["processes"], ["trace", "5.0"]):
            what, err = run_safe(cli, node, args, 1, "stderr", "raw bytes, ")
            expect("not JSON: not json \\x1b[2J\\x07\\u009b31m\\x7f\\xff\\xfe\\x0d\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x9c{" in err,
                   what + ": the line, escaped",
                   err)
            expect(len(err.splitlines()) == 1, what + ": one line", err)


def json_output_is_valid_and_exact(cli):
    with FakeNode("hostile") as node:
        for args in VIEWS:
            what = " ".join(args) + " --json"
            r = run_bytes(cli, "--socket", node.socket, *args, "--json")
            expect(r.returncode == 0, "%s: exit %d" % (what, r.returncode), r.stderr)
            out = expect_terminal_safe(r.stdout, what)
            docs = [json.loads(line) for line in out.splitlines()]
            flat = json.dumps(docs, ensure_ascii=False)
            expect(json.dumps(HOSTILE, ensure_ascii=False)[1:-1] in flat, what + ": decodes to the node's text", out)
        r = run_bytes(cli, "--socket", node.socket, "processes", "--json")
        names = [p["name"] for p in json.loads(r.stdout)["processes"] if p["name"] is not None]
        expect(names and all(n.endswith(HOSTILE) for n in names), "processes --json: names exact", names)


run_checks([every_view_is_escaped, every_error_line_is_escaped, json_output_is_valid_and_exact], sys.argv[1])
