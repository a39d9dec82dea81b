"""Runners: one module per QUIC implementation, each speaking docs/lab-protocol.md.

A runner module has ``build(version, cache_dir)`` (fetch, patch and build the version
once; cached) and ``run(config) -> dict`` (one run in a subprocess; the run result).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Implementation name (as scenarios spell it) -> runner module under this package.
MODULES = {
    "aioquic": "aioquic",
    "quic-go": "quicgo",
    "quiche": "quiche",
    "tcp": "tcp",
    "quic-go-rt": "quicgo_rt",
}


def runner_for(impl: str) -> ModuleType:
    """The runner module of ``impl`` (``"aioquic"``, ``"quic-go"``, ``"quiche"`` or ``"tcp"``)."""
    try:
        name = MODULES[impl]
    except KeyError:
        raise ValueError(f"no runner for {impl!r} (known: {', '.join(MODULES)})") from None
    return importlib.import_module(f"{__name__}.{name}")
