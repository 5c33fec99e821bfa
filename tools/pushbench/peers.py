"""Builds the push gateway peers into a build directory (offline, from
Debian's packages and the npm lock file) and says how to run them.

    python3 tools/pushbench/peers.py BUILD_DIR    # builds both, prints the commands

Used by compare.py and by the tests in tests/load/pushbench.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOPATH = "/usr/share/gocode"  # golang-github-gorilla-websocket-dev


class Unavailable(Exception):
    """A peer's toolchain or package is missing (tools/setup.sh --peers installs them)."""


def build_go(build_dir):
    """Returns the command line of the Go peer, building it when out of date."""
    build_dir = os.path.abspath(build_dir)
    src = os.path.join(HERE, "peers", "go")
    out = os.path.join(build_dir, "gateway_go")
    newest = max(os.path.getmtime(os.path.join(src, f)) for f in os.listdir(src) if f.endswith(".go"))
    if not shutil.which("go"):
        raise Unavailable("go is not installed (golang-go)")
    if not os.path.isdir(os.path.join(GOPATH, "src", "github.com", "gorilla", "websocket")):
        raise Unavailable("gorilla/websocket is not installed (golang-github-gorilla-websocket-dev)")
    if not os.path.exists(out) or os.path.getmtime(out) < newest:
        os.makedirs(build_dir, exist_ok=True)
        env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOFLAGS="")
        if "HOME" not in env and "GOCACHE" not in env:
            env["GOCACHE"] = os.path.join(build_dir, "gocache")
        subprocess.run(["go", "build", "-o", out, "."], check=True, env=env, cwd=src)
    return [out]


def build_node(build_dir):
    """Returns (command line, environment) of the Node peer; `npm ci` puts ws
    into BUILD_DIR/node, never into the source tree."""
    node_dir = os.path.join(os.path.abspath(build_dir), "node")
    if not shutil.which("node") or not shutil.which("npm"):
        raise Unavailable("node and npm are not installed (nodejs, npm)")
    lock = os.path.join(HERE, "peers", "node", "package-lock.json")
    stamp = os.path.join(node_dir, "node_modules", ".package-lock.json")
    if not os.path.exists(stamp) or os.path.getmtime(stamp) < os.path.getmtime(lock):
        os.makedirs(node_dir, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, "peers", "node", f), node_dir)
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=node_dir,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise Unavailable(f"npm ci failed: {r.stderr.strip()[-300:]}")
    env = dict(os.environ, NODE_PATH=os.path.join(node_dir, "node_modules"))
    return ["node", os.path.join(HERE, "peers", "node", "gateway.js")], env


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("go:", " ".join(build_go(sys.argv[1])))
    cmd, env = build_node(sys.argv[1])
    print(f"node: NODE_PATH={env['NODE_PATH']}", " ".join(cmd))
