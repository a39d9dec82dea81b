"""The quiche runner of the lab (docs/lab-protocol.md).

quiche is sans-IO: a Rust harness (``statemine/lab/quiche``) drives a client and a server
connection through the path model's third implementation (``src/pathmodel``, which passes
the shared test vectors: ``vectors/``) in virtual time, handed to quiche through the
instrument patch's clock (``quiche::statemine::set_virtual_time``,
instrument-patches/quiche/README.md). ``src/sim.rs`` documents the event loop, pacing
(``SendInfo::at``), the client profiles and the application protocol.

:func:`build` builds the harness with :func:`statemine.patch.quiche.build` (the quiche
patches' build cache: the patched tree in ``$STATEMINE_CACHE/quiche/<version>/src-<patch
sha>``, binaries under ``$STATEMINE_CACHE/cargo/quiche-<version>/<key>/`` where the key
hashes the patch, the harness's files and ``rustc -V``, and one Cargo target directory
shared with the patch tests, so BoringSSL is compiled once). The harness seeds quiche's
own random choices (packet-number skips) through the patch's ``set_random_seed``, so a
run repeats byte for byte.

The congestion controller is the config's ``cc`` (``reno``, ``cubic``, ``bbr2``; absent:
quiche's default, CUBIC), for both ends. Flow control: quiche has no default windows; the
harness uses those of quiche's example client and server (10 MB per connection, 1 MB per
stream) unless ``max_data_bytes`` / ``max_stream_data_bytes`` say otherwise. The
loss-detection knobs (``reordering_threshold``, ``time_threshold``) are the patch's
environment variables, read once per process, so they apply to both ends (the client, a
receiver, declares few losses).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from . import run_harness, runner_main

IMPL = "quiche"
#: The harness crate (a cargo program for statemine.patch.cargo) and the lab identity.
CRATE_DIR = Path(__file__).resolve().parents[1] / "quiche"
DATA_DIR = Path(__file__).resolve().parents[1] / "data"
BINARY = "statemine-quiche-harness"
#: The congestion controllers a config's ``cc`` may name.
CONTROLLERS = ("reno", "cubic", "bbr2")
#: Wall-clock limit of one run unless the config gives ``wall_limit_s``, s.
DEFAULT_WALL_LIMIT_S = 1800.0


@contextlib.contextmanager
def _cache_env(cache: str | os.PathLike | None) -> Iterator[None]:
    """``$STATEMINE_CACHE`` set to ``cache`` (when given) for the patch module's builds."""
    if cache is None:
        yield
        return
    old = os.environ.get("STATEMINE_CACHE")
    os.environ["STATEMINE_CACHE"] = str(cache)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("STATEMINE_CACHE", None)
        else:
            os.environ["STATEMINE_CACHE"] = old


def build(version: str, cache: str | os.PathLike | None = None) -> Path:
    """The harness binary for quiche ``version``, built once and cached (see the module
    text). Raises :class:`UsageError` for a version without a patch and
    :class:`StatemineError` when the build fails (a missing cargo, cmake or libclang is
    named with the package to install)."""
    from ...patch import quiche as patch_quiche

    # patch.cargo.build makes cargo recompile quiche when the shared target directory last
    # compiled another patched tree (forget_other_tree), so no stale quiche is linked
    with _cache_env(cache):
        return patch_quiche.build(version, CRATE_DIR, BINARY)


def run(
    config: dict,
    cache: str | os.PathLike | None = None,
    wall_limit_s: float | None = None,
    qlog_dir: str | os.PathLike | None = None,
) -> dict:
    """Run one config (docs/lab-protocol.md) in the harness subprocess.

    Writes the config beside ``result_path``, runs the harness and returns the result it
    wrote. A harness that fails without a result (bad config, crash, wall-clock limit)
    gives, and leaves in ``result_path``, ``{"ok": False, "error": ...}``. With
    ``qlog_dir`` each connection also writes a qlog there. Build failures raise
    :class:`StatemineError`.
    """
    binary = build(config["version"], cache)
    env = {k: v for k, v in os.environ.items() if k not in ("QLOGDIR", "STATEMINE_LOG")}
    env["STATEMINE_LAB_DATA"] = str(DATA_DIR)
    if qlog_dir is not None:
        env["QLOGDIR"] = str(qlog_dir)
    limit = wall_limit_s or float(config.get("wall_limit_s") or DEFAULT_WALL_LIMIT_S)
    return run_harness(binary, {"implementation": IMPL, **config}, env, limit, "quiche")


def main(argv: list[str] | None = None) -> int:
    """``python -m statemine.lab.runners.quiche CONFIG.json``: the runner protocol."""
    return runner_main("quiche", run, argv)


if __name__ == "__main__":
    sys.exit(main())
