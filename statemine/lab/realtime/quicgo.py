"""quic-go in real time: the lab's quic-go harness (statemine/lab/quicgo, its ``TestRealNet``
entry) over two real UDP sockets, one in each namespace, joined by the real-time path.

The sockets are made here, each inside its namespace (``setns`` on this thread, then
back), and handed to the harness as inherited file descriptors; the harness runs its
usual transfer (``Transfer``) on them with the real clock, so the instrumented quic-go
writes its statemine log with real timestamps. Same config as the virtual-time lab
(docs/lab-protocol.md); ``reordering_threshold`` / ``time_threshold`` reach the patch as
in the virtual lab.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from . import netns
from .emulator import Emulator
from .run import over_sockets, run_and_write


def _env(config: dict) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("STATEMINE_") and k not in ("GOGC", "GOMEMLIMIT")
    }
    env.update(
        STATEMINE_LOG=config["log_path"],
        QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING="true",
    )
    if config.get("reordering_threshold") is not None:
        env["STATEMINE_REORDERING_THRESHOLD"] = str(config["reordering_threshold"])
    if config.get("time_threshold") is not None:
        env["STATEMINE_TIME_THRESHOLD"] = str(config["time_threshold"])
    return env


def simulate(config: dict, cache_dir: Any = None) -> tuple[dict, Emulator]:
    """Run ``config`` (``implementation = "quic-go"``) in real time; writes the statemine
    log to ``log_path``; the harness's result plus the path's counters, and the emulator."""
    from ..runners import quicgo

    binary = quicgo.build(config["version"], cache_dir or config.get("cache_dir"))
    argv = [str(binary), "-test.run=^TestRealNet$", "-test.count=1"]
    return over_sockets(config, lambda _path: argv, _env(config), "quic-go-rt")


def run_config_file(path: str) -> int:
    """``python -m statemine.lab.realtime.quicgo CONFIG.json``: one run, result written."""
    return run_and_write(
        path, simulate, (netns.SetupError, OSError, RuntimeError, subprocess.SubprocessError)
    )


if __name__ == "__main__":
    import sys

    sys.exit(run_config_file(sys.argv[1]))
