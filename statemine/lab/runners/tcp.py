"""The kernel-TCP runner: one real-time run per subprocess
(:mod:`statemine.lab.realtime.run`), speaking docs/lab-protocol.md.

``version`` is the congestion control (``reno``, ``cubic``, ``bbr``); there is nothing to
build, :func:`build` checks the kernel offers it. The run's log is the kernel's ftrace text
(:data:`LOG_FORMAT`), parsed by statemine's ftrace reader. Real-time runs take the machine's
time and compete for its cores, so this runner runs one at a time whatever ``--jobs`` says
(a lock), and needs root (namespaces, TUN devices, tracefs).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ...errors import StatemineError
from ..realtime.run import CONGESTION_CONTROLS, run_subprocess

IMPL = "tcp"
#: The ``format`` the grid parses this runner's log with.
LOG_FORMAT = "ftrace"
#: Seconds a run gets beyond its time limit (set-up, tear-down) before it is stopped.
GRACE_S = 30.0


def available() -> list[str]:
    """The congestion controls this kernel offers (empty when it cannot tell)."""
    try:
        text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        return []
    return text.split()


def build(version: str, cache_dir: object = None) -> None:
    """Nothing to build: checks ``version`` is a congestion control the kernel has and
    that this process may make namespaces (root)."""
    if version not in CONGESTION_CONTROLS:
        raise StatemineError(
            f"tcp@{version}: unknown congestion control (known: {', '.join(CONGESTION_CONTROLS)})"
        )
    if os.geteuid() != 0:
        raise StatemineError("tcp runs need root (network namespaces, TUN devices, tracefs)")
    if version not in available():
        raise StatemineError(f"this kernel does not offer {version} (modprobe tcp_{version}?)")


def trace_roles(traces: pd.DataFrame, result: dict) -> list[str]:
    """The ``role`` of each trace of a run (the ftrace reader's ``traces`` frame): ``server``
    for the socket on the run's server port (the data sender), ``client`` otherwise."""
    port = str(result.get("server_port"))
    return ["server" if str(p) == port else "client" for p in traces["sport"]]


def run(config: dict, cache_dir: object = None) -> dict:
    """Run one config in a subprocess, one at a time (see
    :func:`statemine.lab.realtime.run.run_subprocess`); its result dict."""
    return run_subprocess(config, "statemine.lab.realtime.run", "tcp", GRACE_S)
