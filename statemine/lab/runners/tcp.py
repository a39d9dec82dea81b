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
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ...errors import StatemineError
from ...fileio import write_json
from ...tcp import cleanup
from ..realtime.run import CONGESTION_CONTROLS, ONE_AT_A_TIME, _env

IMPL = "tcp"
#: The ``format`` the grid parses this runner's log with.
LOG_FORMAT = "ftrace"
#: Seconds a run gets beyond its time limit (set-up, tear-down) before it is stopped.
GRACE_S = 30.0
_ONE_AT_A_TIME = ONE_AT_A_TIME


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
    """Run one config in a subprocess (one at a time); its result dict. A subprocess that
    overruns ``time_limit_s`` + :data:`GRACE_S` gets SIGTERM (it then removes its
    namespaces), SIGKILL 10 s later, and its leftovers are removed."""
    result_path = Path(config["result_path"])
    config_path = result_path.with_name("tcp.config.json")
    write_json(config_path, config)
    result_path.unlink(missing_ok=True)
    limit = float(config.get("time_limit_s") or 120.0) + GRACE_S
    with _ONE_AT_A_TIME:
        proc = subprocess.Popen(
            [sys.executable, "-m", "statemine.lab.realtime.run", str(config_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        try:
            _, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                cleanup()
    config_path.unlink(missing_ok=True)
    if not result_path.exists():
        tail = " | ".join((err or "").strip().splitlines()[-3:])
        result = {"ok": False, "error": f"tcp run exited with status {proc.returncode}: {tail}"}
        write_json(result_path, result)
        return result
    import json

    with open(result_path, encoding="utf-8") as f:
        return json.load(f)
