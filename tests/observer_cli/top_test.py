#!/usr/bin/env python3
"""`herd-observer top` in a real terminal: tmux (a private server, an 80x24
window) runs it against the fake node; capture-pane reads the screen and
send-keys types. Checks the header and the known processes, sorting,
selection, the process view, kill with confirmation, resizing, and that q,
Ctrl-C, SIGTERM and a vanished node all leave the terminal as it was
(alternate screen off, cursor on, same stty settings).

    top_test.py HERD_OBSERVER
"""
import os
import shlex
import shutil
import signal
import subprocess
import sys

from support import SKIP, FakeNode, expect, run_checks, wait_for

TMUX_SERVER = "herd-observer-test-%d" % os.getpid()


class Pane:
    """One tmux session running `herd-observer top` under sh, killed by name."""

    def __init__(self, cli, node, name, cols=80, rows=24):
        self.name, self.node = name, node
        d = node.dir
        script = ('stty -g > {d}/stty.before; trap "echo INTERRUPTED" INT; '
                  '{cli} top --socket {sock}; echo EXITED $?; stty -g > {d}/stty.after; sleep 60').format(
            d=d, cli=shlex.quote(cli), sock=shlex.quote(node.socket))
        self.tmux("new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), "sh -c " + shlex.quote(script))
        self.rows, self.cols = rows, cols

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", TMUX_SERVER, "-f", "/dev/null", *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout

    def screen(self):
        return self.tmux("capture-pane", "-p", "-J", "-t", self.name).split("\n")[: self.rows]

    def text(self):
        return "\n".join(self.screen())

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def flag(self, fmt):
        return self.tmux("display-message", "-p", "-t", self.name, fmt).strip()

    def wait_text(self, needle, timeout=6, what=None):
        ok = wait_for(lambda: needle in self.text(), timeout)
        expect(ok, (what or "the screen shows %r" % needle) + " (waited %d s)" % timeout, self.text())

    def first_row(self):
        s = self.screen()
        for i, line in enumerate(s):
            if line.startswith("PID ") and i + 1 < len(s):
                return s[i + 1]
        return ""

    def expect_restored(self, exit_line):
        self.wait_text(exit_line, what="the shell went on after herd-observer (%s)" % exit_line)
        t = self.text()
        expect("herd top" not in t and "r:reductions" not in t and "S0 [" not in t, "no UI left on the screen", t)
        expect(self.flag("#{alternate_on}") == "0", "the alternate screen was left")
        expect(self.flag("#{cursor_flag}") == "1", "the cursor is visible again")
        before = os.path.join(self.node.dir, "stty.before")
        after = os.path.join(self.node.dir, "stty.after")
        expect(wait_for(lambda: os.path.exists(after) and open(after).read(), 5), "stty -g ran after exit")
        expect(open(before).read() == open(after).read(), "the terminal's settings are back",
               open(before).read(), open(after).read())

    def observer_pid(self):
        """herd-observer's PID: the child of the pane's sh."""
        sh = self.flag("#{pane_pid}")
        out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", sh], capture_output=True, text=True).stdout
        pids = [int(l.split()[0]) for l in out.splitlines() if "herd-observer" in l]
        expect(len(pids) == 1, "one herd-observer under the pane's shell", out)
        return pids[0]

    def kill(self):
        subprocess.run(["tmux", "-L", TMUX_SERVER, "kill-session", "-t", self.name], capture_output=True, timeout=10)


def started(cli, node, name, **size):
    pane = Pane(cli, node, name, **size)
    try:
        pane.wait_text("os pid 4242", what="top's header appears")
    except Exception:
        pane.kill()
        raise
    return pane


def kills(node):
    return [r["pid"] for r in node.requests() if r.get("req") == "kill"]


def header_list_sort_select_kill_resize_quit(cli):
    with FakeNode() as node:
        pane = started(cli, node, "main")
        try:
            expect(pane.flag("#{alternate_on}") == "1", "top runs in the alternate screen")
            expect(pane.flag("#{cursor_flag}") == "0", "top hides the cursor")
            pane.wait_text("hungry_cruncher")
            s = pane.screen()
            expect(s[0].startswith("herd top  os pid 4242  up ") and "9 actors" in s[0], "title line", s[0])
            expect(s[1].startswith("S0 [|||") and s[1].rstrip().endswith("93% rq 4"), "scheduler 0 bar", s[1])
            expect(s[2].startswith("S1 [|||") and s[2].rstrip().endswith("12% rq 0"), "scheduler 1 bar", s[2])
            expect(s[1].count("|") > 4 * s[2].count("|"), "the bars' lengths follow utilization", s[1], s[2])
            expect(s[3] == "mem rss 39 MiB  mimalloc 8.6 MiB / 64 MiB  stacks 9/64", "memory line", s[3])
            expect(s[4] == "msgs 120k/s  switches 240k/s  spawns 0/s", "rates line", s[4])
            for name in ("echo_server_sup", "echo_server_acceptors_sup", "echo_server_acceptor_1",
                         "echo_server_acceptor_2", "echo_server_conns_sup", "flooded_logger", "hungry_cruncher",
                         "big_cache"):
                expect(name in pane.text(), "the list shows " + name, pane.text())
            expect(all(len(l) <= 80 for l in s), "no line is wider than 80", s)
            expect(s[23].startswith("r:reductions m:memory b:mailbox"), "the footer shows the keys", s[23])
            expect("*REDS" in pane.text(), "the sort column is marked")
            expect(pane.first_row().startswith("<7.0>") and "hungry_cruncher" in pane.first_row(),
                   "sorted by reductions first", pane.first_row())
            # REDS/S is the node's figure over the last interval (the fake's
            # cruncher does 120,000 a second), not its running total.
            expect(wait_for(lambda: " 120000 " in pane.first_row(), 5), "REDS/S shows the rate", pane.first_row())
            expect(node.requests()[1].get("sort") == "reductions_rate", "top asks for reductions_rate",
                   node.requests()[:3])

            pane.keys("b")
            expect(wait_for(lambda: "flooded_logger" in pane.first_row(), 5), "b sorts by mailbox", pane.text())
            expect(any(r.get("sort") == "mailbox" for r in node.requests()), "asked the node for mailbox order")
            pane.keys("m")
            expect(wait_for(lambda: "big_cache" in pane.first_row(), 5), "m sorts by memory", pane.text())
            pane.keys("r")
            expect(wait_for(lambda: "hungry_cruncher" in pane.first_row(), 5), "r sorts by reductions", pane.text())
            pane.keys("m")
            expect(wait_for(lambda: "big_cache" in pane.first_row(), 5), "m again", pane.text())

            # Memory order: big_cache, flooded_logger, hungry_cruncher.
            pane.keys("Down", "j", "Enter")
            pane.wait_text("process <7.0>", what="Enter opens the selected process")
            pane.wait_text("links         <1.0>")
            expect("name          hungry_cruncher" in pane.text(), "the process view shows its name", pane.text())
            expect("esc/backspace:back" in pane.screen()[23], "the process view's footer", pane.screen()[23])
            pane.keys("Escape")
            expect(wait_for(lambda: pane.first_row().startswith("<9.0>"), 5), "Esc goes back to the list",
                   pane.text())

            pane.keys("k")
            pane.wait_text("kill <7.0>? y/n", what="k asks before killing the selected process")
            pane.keys("n")
            pane.wait_text("kill cancelled")
            expect(kills(node) == [], "n kills nothing", kills(node))
            pane.keys("k")
            pane.wait_text("kill <7.0>? y/n")
            pane.keys("y")
            expect(wait_for(lambda: kills(node) == ["<7.0>"], 5), "y sends one kill for <7.0>", node.requests())
            pane.wait_text("killed <7.0> (reason: kill)")
            expect(wait_for(lambda: "hungry_cruncher" not in pane.text(), 5), "the killed process left the list",
                   pane.text())

            pane.tmux("resize-window", "-t", "main", "-x", "60", "-y", "20")
            pane.rows = 20
            expect(wait_for(lambda: pane.screen()[19].startswith("r:reductions"), 5), "the footer follows a resize",
                   pane.text())
            expect(all(len(l) <= 60 for l in pane.screen()), "no line wider than 60 after the resize", pane.text())
            expect(any("flooded_l" in l and l.rstrip().endswith("25000") for l in pane.screen()),
                   "at 60 columns the name is cut, not the numbers", pane.text())
            expect(wait_for(lambda: [r for r in node.requests() if r.get("req") == "processes"][-1]["limit"] == 11,
                            5), "it asks for as many rows as now fit (20 - 6 header - 3)", node.requests()[-3:])

            pane.keys("q")
            pane.expect_restored("EXITED 0")
        finally:
            pane.kill()


def ctrl_c_restores_the_terminal(cli):
    with FakeNode() as node:
        pane = started(cli, node, "ctrlc")
        try:
            pane.keys("C-c")
            pane.expect_restored("EXITED 130")
            expect("INTERRUPTED" in pane.text(), "the shell saw the SIGINT too", pane.text())
        finally:
            pane.kill()


def sigterm_restores_the_terminal(cli):
    with FakeNode() as node:
        pane = started(cli, node, "term")
        try:
            os.kill(pane.observer_pid(), signal.SIGTERM)
            pane.expect_restored("EXITED 143")
        finally:
            pane.kill()


def a_vanished_node_restores_and_says_so(cli):
    with FakeNode() as node:
        pane = started(cli, node, "gone")
        try:
            node.p.kill()
            node.p.wait()
            pane.expect_restored("EXITED 1")
            lines = [l for l in pane.screen() if l.strip()]
            expect(len(lines) == 2 and lines[0].startswith("herd-observer: the node at %s " % node.socket),
                   "one error line naming the node", pane.text())
        finally:
            pane.kill()


if __name__ == "__main__":
    if shutil.which("tmux") is None:
        print("SKIP: tmux is not installed")
        sys.exit(SKIP)
    run_checks([header_list_sort_select_kill_resize_quit, ctrl_c_restores_the_terminal, sigterm_restores_the_terminal,
                a_vanished_node_restores_and_says_so], sys.argv[1])
