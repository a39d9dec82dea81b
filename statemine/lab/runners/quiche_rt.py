"""quiche in real time (``stack = "quiche-rt@VERSION"``): the patched quiche's lab harness
in its real-time mode over real UDP sockets in two namespaces joined by the real-time path
(:mod:`statemine.lab.realtime.quiche`, docs/realtime.md). Builds exactly as the
virtual-time runner (:mod:`statemine.lab.runners.quiche`); runs one at a time, as root.
The log is the statemine log with real (Unix) timestamps.
"""

from __future__ import annotations

from typing import Any

from ..realtime.run import run_subprocess
from . import quiche

#: Seconds a run gets beyond its time limit (set-up, build check) before it is stopped.
GRACE_S = 60.0


def build(version: str, cache_dir: Any = None) -> Any:
    """The virtual-time runner's build (the harness binary has both modes)."""
    return quiche.build(version, cache_dir)


def run(config: dict, cache_dir: Any = None) -> dict:
    """One real-time run in a subprocess, one at a time (see
    :func:`statemine.lab.realtime.run.run_subprocess`); its result dict."""
    config = dict(config, cache_dir=str(cache_dir) if cache_dir else None)
    return run_subprocess(config, "statemine.lab.realtime.quiche", "quiche-rt", GRACE_S)


__all__ = ["build", "run"]
