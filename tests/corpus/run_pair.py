"""Run one corpus program between a relay's two ports (loopback) and wait for it.

``python3 run_pair.py OUT_DIR RATE_BPS DELAY_S QUEUE_BYTES LOSS SEED -- PROGRAM...``:
picks two free loopback ports, starts relay.py between them and runs PROGRAM with
``{listen}`` and ``{connect}`` in its arguments replaced by the server's and the relay's
port (``{out}`` by OUT_DIR); stops the relay when PROGRAM ends (at most 120 s).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str]) -> int:
    split = argv.index("--")
    out, shape, program = argv[0], argv[1:split], argv[split + 1 :]
    os.makedirs(out, exist_ok=True)
    listen, front = free_port(), free_port()
    relay = os.path.join(os.path.dirname(os.path.abspath(__file__)), "relay.py")
    proxy = subprocess.Popen(
        [sys.executable, relay, str(front), str(listen), *shape], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
        args = [a.format(listen=listen, connect=front, out=out) for a in program]
        return subprocess.run(args, timeout=120, check=False).returncode
    finally:
        proxy.kill()
        proxy.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
