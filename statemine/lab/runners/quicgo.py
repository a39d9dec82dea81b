"""The quic-go runner of the lab (docs/lab-protocol.md).

quic-go runs in virtual time through a small Go harness (``statemine/lab/quicgo``): an
in-memory ``net.PacketConn`` pair on the Go twin of the path model, inside a
``testing/synctest`` bubble. synctest only runs in tests, so the harness is that
package's test binary (``go test -c``), started as ``harness CONFIG.json``.

:func:`build` fetches quic-go ``version`` from the Go module proxy, applies the
instrument patch (:mod:`statemine.patch`), and builds the harness against it through a
``replace`` directive in a temporary copy of the harness module. Both steps are cached
under ``$STATEMINE_CACHE/quic-go`` (default ``~/.cache/statemine``); the binary's name
carries a hash of the patch, the harness sources, the lab certificate and the Go
version, so a change of any of them rebuilds it. Go's module downloads go to
``$STATEMINE_CACHE/gomod`` (as for ``statemine patch fetch``); the build cache is Go's own.

:func:`run` runs one config in a subprocess and returns the run result.

Client profiles: ``desktop`` reads stream data as it arrives and closes the connection
when it has read everything. ``mobile`` is the protocol's phone with two threads: the
*network goroutine* (quic-go's read loop on the client's in-memory socket) takes each
datagram from a socket buffer (``socket_buffer_bytes``, default 212992; overflow is
dropped and counted in ``packets_dropped``) and spends ``per_packet_cpu_s`` of virtual
time on it before quic-go sees it (quic-go's connection goroutine still runs its timers
meanwhile); the *application goroutines* (one per stream) read at ``read_rate_bps``, all
streams together, on their own. quic-go returns flow-control credit as the application
reads, so unread data holds the sender back. A connection tracer counts the distinct
STREAM bytes the client's transport received; when it has every byte the client closes
the connection, and ``plt_s`` adds the time the application still needs to consume what
it has not read yet. ``max_data_bytes`` / ``max_stream_data_bytes`` set the client's
initial flow-control windows (default quic-go's, 768 KiB / 512 KiB; auto-tuning may grow
them up to 15 MiB / 6 MiB, or the value if larger). The tracer code depends on quic-go's
tracing API: one harness file per API, chosen by build tag (:func:`qlog_tag`).

Determinism: the harness seeds crypto/rand (``testing/cryptotest.SetGlobalRandom``: TLS,
connection IDs, packet-number skipping) and the path model (math/rand/v2 PCG) from the
config's seed, uses a fixed RSA certificate, runs on one thread (GOMAXPROCS=1) and
collects garbage only near a memory limit (GOGC=off, GOMEMLIMIT=1GiB: GC pacing is
wall-clock driven and reorders goroutines). What no setting reaches is Go's runtime: the
choice among ready ``select`` cases, map iteration order and time-sliced preemption. Runs
with a few streams repeat byte for byte (10 of 10 repeats for every version with 4
objects); with 200 concurrent streams about 1 repeat in 10 differs. The mobile profile
repeats byte for byte with one stream on every version and with 4 streams on v0.63.0 and
v0.65.0; with 4 streams v0.37.5 and v0.48.2 gave 2-3 distinct logs in 8 repeats (v0.37.5
does so on the desktop profile too, with 1% loss).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ... import patch as sm_patch
from ...errors import StatemineError
from ...patch import cache_dir  # $STATEMINE_CACHE or ~/.cache/statemine
from . import config_path_for as config_path_for  # re-exported (tests, callers)
from . import run_harness, runner_main

IMPL = "quic-go"
#: The Go harness module (sources) and the lab's test TLS identity.
HARNESS_DIR = Path(__file__).resolve().parents[1] / "quicgo"
CERT_DIR = Path(__file__).resolve().parents[1] / "data"
#: The path model's test vectors (shared with tests/test_lab_vectors.py), in data/.
VECTORS = "path-vectors.json"
#: quic-go versions before this one have no qlog.DefaultConnectionTracer (and a
#: logging.ConnectionTracer interface, not a struct of callbacks).
_QLOG_DEFAULT_SINCE = (0, 48, 0)
#: quic-go versions from this one on trace through qlogwriter, not the logging package.
_QLOGWRITER_SINCE = (0, 55, 0)
#: The harness file holding each tracer API's code (one per build tag, None = no tag).
_TRACER_FILES = {
    "quicgo_legacy_qlog": "qlog_legacy.go",
    "quicgo_logging_qlog": "qlog_logging.go",
    None: "qlog.go",
}


def parse_version(version: str) -> tuple[int, int, int]:
    """``"v0.48.2"`` -> ``(0, 48, 2)``; :class:`StatemineError` for anything else.

    >>> parse_version("v0.65.0")
    (0, 65, 0)
    """
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", version)
    if not m:
        raise StatemineError(f"quic-go version must look like v0.48.2, not {version!r}")
    return int(m[1]), int(m[2]), int(m[3])


def qlog_tag(version: str) -> str | None:
    """The harness build tag for ``version``'s tracer API (None: the qlogwriter file).

    >>> qlog_tag("v0.37.5"), qlog_tag("v0.48.2"), qlog_tag("v0.65.0")
    ('quicgo_legacy_qlog', 'quicgo_logging_qlog', None)
    """
    v = parse_version(version)
    if v < _QLOG_DEFAULT_SINCE:
        return "quicgo_legacy_qlog"
    return "quicgo_logging_qlog" if v < _QLOGWRITER_SINCE else None


def go_env(cache: Path) -> dict[str, str]:
    """The environment of the ``go`` commands: module cache under ``cache``, no
    workspace, the installed toolchain only."""
    return {
        **os.environ,
        "GOMODCACHE": str(cache / "gomod"),
        "GOFLAGS": "-modcacherw",
        "GOWORK": "off",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
    }


def _go(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    try:
        proc = subprocess.run(
            ["go", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
        )
    except FileNotFoundError:
        raise StatemineError("`go` not found: the quic-go runner needs Go >= 1.25") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-12:])
        raise StatemineError(f"`go {' '.join(args)}` failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def harness_files() -> list[Path]:
    """The files the harness binary is built from (sources, go.mod, the certificate)."""
    files = sorted(p for p in HARNESS_DIR.iterdir() if p.suffix == ".go" or p.name == "go.mod")
    return [*files, CERT_DIR / "cert.pem", CERT_DIR / "key.pem", CERT_DIR / VECTORS]


def build_key(version: str, patch_file: Path, env: dict[str, str]) -> str:
    """A hash of everything the harness binary of ``version`` depends on."""
    h = hashlib.sha256()
    h.update(version.encode())
    h.update(patch_file.read_bytes())
    for f in harness_files():
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(_go(["env", "GOVERSION"], HARNESS_DIR, env).encode())
    return h.hexdigest()[:16]


def patched_source(version: str, cache: Path) -> Path:
    """The fetched and patched quic-go tree of ``version`` (cached, keyed by the patch)."""
    psha = hashlib.sha256(sm_patch.patch_path(IMPL, version).read_bytes()).hexdigest()[:16]
    dest = cache / "quic-go" / version / f"src-{psha}"
    if (dest / ".statemine-patch.json").is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=dest.parent))
    try:
        sm_patch.fetch(IMPL, version, tmp / "src")
        sm_patch.apply(IMPL, version, tmp / "src")
        try:
            os.replace(tmp / "src", dest)
        except OSError:  # built concurrently by another process
            if not (dest / ".statemine-patch.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def prepare_module(version: str, src: Path, dest: Path, env: dict[str, str]) -> list[str]:
    """Copy the harness module into the empty directory ``dest`` with the lab certificate,
    point it at the quic-go tree ``src`` and tidy it; returns the ``go`` build flags
    (tags) that ``version`` needs."""
    tag = qlog_tag(version)
    unused = set(_TRACER_FILES.values()) - {_TRACER_FILES[tag]}  # `go mod tidy` ignores tags
    for f in harness_files():
        if f.parent == HARNESS_DIR and f.name not in unused:
            shutil.copy2(f, dest / f.name)
    (dest / "testdata").mkdir()
    for name in ("cert.pem", "key.pem", VECTORS):
        shutil.copy2(CERT_DIR / name, dest / "testdata" / name)
    _go(["mod", "edit", f"-replace=github.com/quic-go/quic-go={src}"], dest, env)
    _go(["mod", "tidy"], dest, env)
    return ["-tags", tag] if tag else []


def build(version: str, cache: str | os.PathLike | None = None) -> Path:
    """The harness binary for quic-go ``version``, built once and cached.

    Fetches and patches quic-go (see :func:`patched_source`), copies the harness module
    to a temporary directory with the lab certificate, points its ``replace`` directive at
    the patched tree and runs ``go test -c -trimpath``. Raises :class:`StatemineError`
    when a step fails (quoting Go's message).
    """
    cache = Path(cache or cache_dir())
    env = go_env(cache)
    key = build_key(version, sm_patch.patch_path(IMPL, version), env)
    binary = cache / "quic-go" / version / f"harness-{key}"
    if binary.is_file():
        return binary
    src = patched_source(version, cache)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=binary.parent))
    try:
        mod = work / "harness"
        mod.mkdir()
        tags = prepare_module(version, src, mod, env)
        _go(["test", "-c", "-trimpath", *tags, "-o", str(work / "harness.bin")], mod, env)
        os.replace(work / "harness.bin", binary)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return binary


def run(
    config: dict,
    cache: str | os.PathLike | None = None,
    wall_limit_s: float | None = None,
    qlog_dir: str | os.PathLike | None = None,
) -> dict:
    """Run one config (docs/lab-protocol.md) in the harness subprocess.

    Writes the config beside ``result_path``, runs the harness, and returns the result
    dict the harness wrote to ``result_path``. A harness that fails without a result
    (bad config, crash, wall-clock limit ``wall_limit_s``) gives, and leaves in
    ``result_path``, ``{"ok": False, "error": ...}``. With ``qlog_dir``, quic-go also
    writes a qlog per connection there. Build failures raise :class:`StatemineError`.
    """
    binary = build(config["version"], cache)
    env = {k: v for k, v in os.environ.items() if k != "QLOGDIR"}
    if qlog_dir is not None:
        env["QLOGDIR"] = str(qlog_dir)
    return run_harness(binary, {"implementation": IMPL, **config}, env, wall_limit_s, "quic-go")


def main(argv: list[str] | None = None) -> int:
    """``python -m statemine.lab.runners.quicgo CONFIG.json``: the runner protocol."""
    return runner_main("quicgo", run, argv)


if __name__ == "__main__":
    sys.exit(main())
