"""aioquic in real time (``stack = "aioquic-rt@VERSION"``): the patched aioquic on the real
clock over real UDP sockets in two namespaces joined by the real-time path
(:mod:`statemine.lab.realtime.aioquic`, docs/realtime.md). Builds (fetches and patches) as
the virtual-time runner (:mod:`statemine.lab.runners.aioquic`); runs one at a time, as root.
The log is the statemine log with monotonic-clock timestamps.
"""

from __future__ import annotations

from typing import Any

from ..realtime.run import run_subprocess
from . import aioquic

#: Seconds a run gets beyond its time limit (set-up, closing) before it is stopped.
GRACE_S = 30.0


def build(version: str, cache_dir: Any = None) -> Any:
    """The virtual-time runner's patched tree."""
    return aioquic.build(version, cache_dir)


def run(config: dict, cache_dir: Any = None) -> dict:
    """One real-time run in a subprocess, one at a time (see
    :func:`statemine.lab.realtime.run.run_subprocess`); its result dict."""
    config = dict(config, cache_dir=str(cache_dir) if cache_dir else None)
    return run_subprocess(config, "statemine.lab.realtime.aioquic", "aioquic-rt", GRACE_S)


__all__ = ["build", "run"]
