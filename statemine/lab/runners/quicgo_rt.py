"""quic-go in real time (``stack = "quic-go-rt@VERSION"``): the patched quic-go's lab
harness over real UDP sockets in two namespaces joined by the real-time path
(:mod:`statemine.lab.realtime.quicgo`, docs/realtime.md). Builds exactly as the
virtual-time runner (:mod:`statemine.lab.runners.quicgo`); runs one at a time, as root.
The log is the statemine log with real timestamps.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ...fileio import write_json
from ...tcp import cleanup
from ..realtime.run import ONE_AT_A_TIME, _env
from . import quicgo

#: Seconds a run gets beyond its time limit (set-up, build check) before it is stopped.
GRACE_S = 60.0


def build(version: str, cache_dir: Any = None) -> Any:
    """The virtual-time runner's build (the harness binary has both entries)."""
    return quicgo.build(version, cache_dir)


def run(config: dict, cache_dir: Any = None) -> dict:
    """One real-time run in a subprocess, one at a time; its result dict."""
    result_path = Path(config["result_path"])
    config_path = result_path.with_name("quicgo-rt.config.json")
    write_json(config_path, dict(config, cache_dir=str(cache_dir) if cache_dir else None))
    result_path.unlink(missing_ok=True)
    limit = float(config.get("time_limit_s") or 120.0) + GRACE_S
    with ONE_AT_A_TIME:
        proc = subprocess.Popen(
            [sys.executable, "-m", "statemine.lab.realtime.quicgo", str(config_path)],
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
        result = {"ok": False, "error": f"quic-go-rt run exited with {proc.returncode}: {tail}"}
        write_json(result_path, result)
        return result
    with open(result_path, encoding="utf-8") as f:
        return dict(json.load(f))


__all__ = ["build", "run"]
