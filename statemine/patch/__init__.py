"""Instrument patches: fetch a QUIC implementation's source, apply/check/revert/port the
statemine logging patch (``instrument-patches/<impl>/<version>/statemine.patch``).

The lab calls ``fetch(impl, version, dest)`` then ``apply(impl, version, dest)``; the
patched package is importable from ``dest/<python_path>`` (aioquic: ``dest/src``).
Each ``statemine patch`` command is one call: :func:`list_patches`, :func:`fetch_source`,
:func:`apply`, :func:`check`, :func:`revert`, :func:`port_tree`.
"""

from __future__ import annotations

from .apply import Outcome, apply, check, revert
from .commands import Fetched, fetch_source, port_tree
from .fetch import cache_dir, fetch, pristine
from .port import PortFailed, PortReport, port
from .registry import implementations, list_patches, load_impl, patch_path, versions

__all__ = [
    "Fetched",
    "Outcome",
    "PortFailed",
    "PortReport",
    "apply",
    "cache_dir",
    "check",
    "fetch",
    "fetch_source",
    "implementations",
    "list_patches",
    "load_impl",
    "patch_path",
    "port",
    "port_tree",
    "pristine",
    "revert",
    "versions",
]
