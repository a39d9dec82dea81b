"""quiche specifics of the instrument patches: the congestion controllers each patched
version knows, the patched source tree (cached) and builds against it.

The lab runner (``statemine/lab/quiche``) and the tests build their cargo programs with
:func:`build`; see instrument-patches/quiche/README.md for the clock hook and the log line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import StatemineError, UsageError
from . import cargo
from .apply import apply
from .fetch import fetch
from .registry import cache_dir, patch_path, versions

IMPL = "quiche"

#: The names ``quiche::Config::set_cc_algorithm_name`` accepts, per patched version
#: (``CongestionControlAlgorithm::from_str`` in src/recovery/mod.rs or
#: src/recovery/congestion/mod.rs), and which controller each selects.
CONTROLLERS: dict[str, dict[str, str]] = {
    "0.22.0": {"reno": "reno", "cubic": "cubic", "bbr": "bbr", "bbr2": "bbr2-native"},
    "0.25.0": {
        "reno": "reno",
        "cubic": "cubic",
        "bbr": "bbr2-gcongestion",
        "bbr2": "bbr2-gcongestion",
        "bbr2_gcongestion": "bbr2-gcongestion",
    },
    "0.30.0": {
        "reno": "reno",
        "cubic": "cubic",
        "bbr": "bbr2-gcongestion",
        "bbr2": "bbr2-gcongestion",
        "bbr2_gcongestion": "bbr2-gcongestion",
    },
}


def controller(version: str, name: str) -> str:
    """The controller quiche ``version`` runs for the congestion-control ``name``
    (``reno``, ``cubic``, ``bbr2-gcongestion``, ...); :class:`UsageError` naming the known
    names when ``version`` has no patch or does not know ``name``.

    >>> controller("0.30.0", "bbr2")
    'bbr2-gcongestion'
    """
    known = CONTROLLERS.get(version)
    if known is None:
        have = ", ".join(versions(IMPL)) or "none"
        raise UsageError(f"no patch for quiche {version} (patched versions: {have})")
    if name not in known:
        raise UsageError(
            f"quiche {version} has no congestion controller {name!r} "
            f"(known: {', '.join(sorted(known))})"
        )
    return known[name]


def mark_package_version(src: Path, version: str, tag: str) -> None:
    """Give the package in ``src`` the version ``<version>+statemine.<tag>`` (semver build
    metadata: dependents still match it) so that cargo, in a target directory shared with
    other patched trees of the same version, gives its artifacts names of their own."""
    manifest = src / "Cargo.toml"
    text = manifest.read_text(encoding="utf-8")
    old = f'\nversion = "{version}"\n'
    if text.count(old) != 1:
        raise StatemineError(f"{manifest}: no single package version {version!r}")
    manifest.write_text(text.replace(old, f'\nversion = "{version}+statemine.{tag}"\n'))


def patched_source(version: str) -> Path:
    """The fetched and patched quiche tree of ``version``, cached under
    ``$STATEMINE_CACHE/quiche/<version>/src-<patch sha>`` (its package version carries the
    patch's hash, :func:`mark_package_version`)."""
    psha = hashlib.sha256(patch_path(IMPL, version).read_bytes()).hexdigest()[:16]
    dest = cache_dir() / IMPL / version / f"src-{psha}"
    if (dest / ".statemine-patch.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=dest.parent))
    try:
        fetch(IMPL, version, tmp / "src")
        apply(IMPL, version, tmp / "src")
        mark_package_version(tmp / "src", version, psha)
        try:
            os.replace(tmp / "src", dest)
        except OSError:  # made concurrently by another process
            if not (dest / ".statemine-patch.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def build(version: str, program: Path, binary: str, features: tuple[str, ...] = ()) -> Path:
    """The release binary ``binary`` of the cargo ``program`` built against patched quiche
    ``version`` (see :func:`statemine.patch.cargo.build`)."""
    if version not in CONTROLLERS:
        controller(version, "")  # raises the no-patch message
    return cargo.build(IMPL, version, patched_source(version), program, binary, features)
