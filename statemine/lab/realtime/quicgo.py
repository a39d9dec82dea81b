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

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ...fileio import write_json
from . import netns
from .emulator import Emulator
from .run import run_and_write

#: The server's UDP port inside its namespace.
SERVER_PORT = 4433


def _env(config: dict, config_path: Path, fds: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("STATEMINE_") and k not in ("GOGC", "GOMEMLIMIT")
    }
    env.update(
        STATEMINE_LOG=config["log_path"],
        STATEMINE_RUN_CONFIG=str(config_path),
        STATEMINE_REALNET_FDS=fds,
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
    config_path = Path(config["result_path"]).with_name("realnet.config.json")
    write_json(config_path, config)
    Path(config["log_path"]).write_bytes(b"")
    limit = float(config.get("time_limit_s") or 120.0) + 30.0
    with netns.signals_raise(), netns.Topology() as topo:
        emu = Emulator(
            topo.client_fd,
            topo.server_fd,
            config["path"],
            int(config["seed"]),
            config.get("client"),
        ).start()
        try:
            srv = netns.udp_socket(topo.server_ns, netns.SERVER_ADDR, SERVER_PORT)
            cli = netns.udp_socket(topo.client_ns, netns.CLIENT_ADDR, 0)
            with srv, cli:
                fds = f"{srv.fileno()},{cli.fileno()}"
                proc = subprocess.run(
                    [str(binary), "-test.run=^TestRealNet$", "-test.count=1"],
                    env=_env(config, config_path, fds),
                    pass_fds=(srv.fileno(), cli.fileno()),
                    capture_output=True,
                    text=True,
                    timeout=limit,
                )
        finally:
            emu.stop()
    config_path.unlink(missing_ok=True)
    if emu.error is not None:
        raise RuntimeError(f"emulator failed: {emu.error!r}")
    try:
        result = json.loads(Path(config["result_path"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        result = {"ok": False, "error": f"harness exited with {proc.returncode}: {tail}"}
    result.update(emu.stats())
    return result, emu


def run_config_file(path: str) -> int:
    """``python -m statemine.lab.realtime.quicgo CONFIG.json``: one run, result written."""
    return run_and_write(
        path, simulate, (netns.SetupError, OSError, RuntimeError, subprocess.SubprocessError)
    )


if __name__ == "__main__":
    import sys

    sys.exit(run_config_file(sys.argv[1]))
