#!/usr/bin/env python3
"""Runs tools/pushbench/contract_test.py against a peer gateway, building it
first (and, for Go, tests/examples/push_gateway_test.py's head-timer case). Exit 77 (skipped) when the peer's toolchain is missing.

    peer_contract_test.py PEERS_BUILD_DIR go|node
"""
import os
import subprocess
import sys

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tools/pushbench")
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples")
sys.path.insert(0, TOOLS)
import peers  # noqa: E402


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("go", "node"):
        sys.exit(__doc__)
    build_dir, peer = sys.argv[1], sys.argv[2]
    try:
        if peer == "go":
            cmd, env = peers.build_go(build_dir), {}
        else:
            cmd, env = peers.build_node(build_dir)
            env = {"NODE_PATH": env["NODE_PATH"]}
    except peers.Unavailable as e:
        print(f"skipped: {e}")
        return 77
    envargs = [a for k, v in env.items() for a in ("--env", f"{k}={v}")]
    rc = subprocess.run([sys.executable, os.path.join(TOOLS, "contract_test.py"), *envargs, "--", *cmd],
                        timeout=100).returncode
    if rc == 0 and peer == "go":
        # The head timer runs from the head's first byte, as herd's gateway
        # times it (docs/push-gateway.md); the Go peer must agree so that
        # the two are compared on the same contract.
        rc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "push_gateway_test.py"), "head-timer", cmd[0]],
                            timeout=60).returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
