"""quiche in real time: the lab's quiche harness (statemine/lab/quiche, its real-time mode
``src/realnet.rs``) over two real UDP sockets, one in each namespace, joined by the
real-time path (:func:`statemine.lab.realtime.run.over_sockets`).

The harness gets the sockets as inherited file descriptors and runs the virtual lab's
client, server and application protocol on them with the real clock (the instrument
patch's clock left real: ``t=`` is Unix time), desktop client only. Same config as the
virtual-time lab (docs/lab-protocol.md), including ``cc`` and the loss-detection knobs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from . import netns
from .emulator import Emulator
from .run import over_sockets, run_and_write


def simulate(config: dict, cache_dir: Any = None) -> tuple[dict, Emulator]:
    """Run ``config`` (``implementation = "quiche"``) in real time; writes the statemine
    log to ``log_path``; the harness's result plus the path's counters, and the emulator."""
    from ..runners import quiche

    binary = quiche.build(config["version"], cache_dir or config.get("cache_dir"))
    env = {k: v for k, v in os.environ.items() if k not in ("QLOGDIR", "STATEMINE_LOG")}
    env["STATEMINE_LAB_DATA"] = str(quiche.DATA_DIR)
    config = {**config, "implementation": quiche.IMPL}
    return over_sockets(config, lambda path: [str(binary), path], env, "quiche-rt")


def run_config_file(path: str) -> int:
    """``python -m statemine.lab.realtime.quiche CONFIG.json``: one run, result written."""
    return run_and_write(
        path, simulate, (netns.SetupError, OSError, RuntimeError, subprocess.SubprocessError)
    )


if __name__ == "__main__":
    sys.exit(run_config_file(sys.argv[1]))
