"""Runners: one module per QUIC implementation, each speaking docs/lab-protocol.md.

A runner module has ``build(version, cache_dir)`` (fetch, patch and build the version
once; cached) and ``run(config) -> dict`` (one run in a subprocess; the run result).
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from ...errors import StatemineError
from ...fileio import write_json

#: Implementation name (as scenarios spell it) -> runner module under this package.
MODULES = {
    "aioquic": "aioquic",
    "quic-go": "quicgo",
    "quiche": "quiche",
    "tcp": "tcp",
    "quic-go-rt": "quicgo_rt",
    "aioquic-rt": "aioquic_rt",
    "quiche-rt": "quiche_rt",
}


def runner_for(impl: str) -> ModuleType:
    """The runner module of ``impl`` (``"aioquic"``, ``"quic-go"``, ``"quiche"`` or ``"tcp"``)."""
    try:
        name = MODULES[impl]
    except KeyError:
        raise ValueError(f"no runner for {impl!r} (known: {', '.join(MODULES)})") from None
    return importlib.import_module(f"{__name__}.{name}")


def config_path_for(result_path: Path) -> Path:
    """Where a harness runner writes the config: beside the result, ``X.config.json``."""
    return result_path.with_name(result_path.name.replace(".result.json", "") + ".config.json")


def run_harness(
    binary: Path, config: dict, env: dict[str, str], wall_limit_s: float | None, name: str
) -> dict:
    """Run a compiled harness (``binary CONFIG.json``, docs/lab-protocol.md) on ``config``.

    Writes the config beside ``result_path`` and returns the result dict the harness
    wrote there. A harness that fails without a result (bad config, crash, the
    wall-clock limit ``wall_limit_s``) gives, and leaves in ``result_path``,
    ``{"ok": False, "error": ...}`` naming the harness (``name``) and its last lines.
    """
    result_path = Path(config["result_path"])
    config_path = config_path_for(result_path)
    write_json(config_path, config)
    result_path.unlink(missing_ok=True)
    base = {"implementation": config.get("implementation"), "version": config["version"]}
    try:
        proc = subprocess.run(
            [str(binary), str(config_path)],
            capture_output=True,
            text=True,
            timeout=wall_limit_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        result = {"ok": False, "error": f"wall-clock limit reached ({wall_limit_s} s)", **base}
        write_json(result_path, result)
        return result
    if proc.returncode != 0 or not result_path.exists():
        tail = " | ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-3:])
        result = {
            "ok": False,
            "error": f"{name} harness exited with status {proc.returncode}: {tail}",
            **base,
        }
        write_json(result_path, result)
        return result
    with open(result_path, encoding="utf-8") as f:
        return json.load(f)


def runner_main(module: str, run: Callable[[dict], dict], argv: list[str] | None) -> int:
    """``python -m statemine.lab.runners.MODULE CONFIG.json``: one run (the protocol);
    exit 2 with one line for a wrong call or a build that fails."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(f"usage: python -m statemine.lab.runners.{module} CONFIG.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        config = json.load(f)
    try:
        run(config)
    except StatemineError as exc:
        print(f"statemine: error: {exc}", file=sys.stderr)
        return 2
    return 0
