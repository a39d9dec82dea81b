"""Scenarios: a TOML file describing a grid of lab runs, validated into a list of cells.

A scenario has two tables::

    [scenario]
    name = "jitter"            # required, a short slug
    description = "..."        # optional
    runs = 3                   # runs per cell (seeds seed, seed+1, ...), default 1
    seed = 1                   # first seed, default 1
    time_limit_s = 120         # virtual-time limit of each run, default 120

    [grid]                     # every key: one value or a list of values (the grid axes)
    stack = ["aioquic@1.7.2", "quic-go@v0.65.0"]
    rate_mbps = 50
    rtt_ms = [36, 112]
    jitter_ms = [0, 10]

The grid is the cartesian product of the axes, in file order, with the last axis varying
fastest. Grid keys, their units and defaults are in :data:`GRID_KEYS`; values are
converted to the runner protocol's units (docs/lab-protocol.md) by :func:`run_config`.
Paths: the bottleneck (``rate_mbps``, ``buffer_bytes``, ``loss``, ``jitter_ms``, ``gilbert``,
``rate_schedule_mbps``) is on the server -> client (down) direction; the ``up_*`` keys set
the client -> server direction; ``rtt_ms`` is split evenly between both directions.

Any unknown key or impossible value raises :class:`statemine.errors.InputError` naming
the file, the line of the key and the reason.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError
from .path import Gilbert, PathValueError, RateSchedule

IMPLEMENTATIONS = ("aioquic", "quic-go")
PROFILES = ("desktop", "mobile")
#: Largest total transfer of one run (count x size), bytes: the server holds it in memory.
MAX_TRANSFER_BYTES = 256 * 2**20
#: Spelling of "the implementation's default" inside a list of thresholds.
DEFAULT = "default"


class _Bad(ValueError):
    """A value's problem (the caller adds file, line and key)."""


# -- value checks: each takes a TOML value and returns the checked Python value ----------
def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise _Bad(f"must be a finite number, not {v!r}")
    return float(v)


def _at_least(bound: float, strict: bool = False, what: str = "") -> Callable[[Any], float]:
    """A check: a finite number ``> bound`` (``strict``) or ``>= bound``."""
    op = ">" if strict else ">="

    def check(v: Any) -> float:
        v = _num(v)
        if v < bound or (strict and v == bound):
            raise _Bad(f"{what}must be {op} {bound:g}, not {v:g}")
        return v
    return check


_positive = _at_least(0, strict=True)
_nonneg = _at_least(0)
_time_threshold = _at_least(1, what="is a multiple of the RTT and ")


def _prob(v: Any) -> float:
    v = _num(v)
    if not 0 <= v <= 1:
        raise _Bad(f"is a probability and must be in [0, 1], not {v:g}")
    return v


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise _Bad(f"must be a whole number >= 1, not {v!r}")
    return v


def _bytes(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _Bad(f"must be a whole number of bytes >= 0, not {v!r}")
    return v


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def inner(v: Any) -> Any:
        return None if v == DEFAULT else check(v)
    return inner


def _profile(v: Any) -> str:
    if v not in PROFILES:
        raise _Bad(f"must be one of {', '.join(PROFILES)}, not {v!r}")
    return v


def _gilbert(v: Any) -> dict:
    try:
        return asdict(Gilbert.from_dict(v))
    except PathValueError as exc:
        raise _Bad(str(exc)) from None


def _schedule(v: Any) -> tuple[float, float]:
    if not (isinstance(v, list) and len(v) == 2):
        raise _Bad(f"must be a pair [lo, hi] of rates in Mbps, not {v!r}")
    lo, hi = _positive(v[0]), _positive(v[1])
    try:
        RateSchedule(lo * 1e6, hi * 1e6)
    except PathValueError as exc:
        raise _Bad(exc.reason) from None
    return (lo, hi)


def _stack(v: Any) -> str:
    if not isinstance(v, str) or "@" not in v:
        raise _Bad(f"must be 'IMPLEMENTATION@VERSION' (e.g. 'aioquic@1.7.2'), not {v!r}")
    impl, version = v.split("@", 1)
    if impl not in IMPLEMENTATIONS:
        raise _Bad(f"unknown implementation {impl!r} (known: {', '.join(IMPLEMENTATIONS)})")
    known = patched_versions(impl)
    if version not in known and not (impl == "aioquic" and version == "installed"):
        raise _Bad(f"{impl} {version} has no instrument patch (patched versions: "
                   f"{', '.join(sorted(known)) or 'none'})")
    return v


@dataclass(frozen=True)
class Key:
    """A grid key: its check, its default (``None``: the runner's default) and its unit."""

    check: Callable[[Any], Any]
    default: Any
    doc: str
    list_valued: bool = False  # a single value is itself a list (rate_schedule_mbps)


GRID_KEYS: dict[str, Key] = {
    "stack": Key(_stack, "aioquic@1.7.2", "implementation@version, e.g. 'quic-go@v0.65.0'"),
    "rate_mbps": Key(_positive, 50.0, "bottleneck rate server->client, Mbit/s"),
    "up_rate_mbps": Key(_optional(_positive), None, "client->server rate, Mbit/s (default: rate_mbps)"),
    "rtt_ms": Key(_nonneg, 36.0, "base round-trip propagation delay, ms (half each way)"),
    "buffer_bytes": Key(_optional(_bytes), None, "bottleneck tail-drop buffer, bytes (default: one BDP, at least 30000)"),
    "loss": Key(_prob, 0.0, "random loss probability server->client"),
    "up_loss": Key(_prob, 0.0, "random loss probability client->server"),
    "gilbert": Key(_optional(_gilbert), None, "Gilbert-Elliott loss server->client {p_gb, p_bg, loss_good, loss_bad} (replaces loss)"),
    "jitter_ms": Key(_nonneg, 0.0, "netem jitter server->client: per-packet delay uniform in +-jitter, ms"),
    "up_jitter_ms": Key(_nonneg, 0.0, "jitter client->server, ms"),
    "rate_schedule_mbps": Key(_optional(_schedule), None, "variable bandwidth server->client: [lo, hi] Mbit/s redrawn every second", True),
    "object_size_bytes": Key(_count, 1_000_000, "size of each object, bytes"),
    "object_count": Key(_count, 1, "objects per page (one stream each, requested at once)"),
    "profile": Key(_profile, "desktop", "client profile: desktop or mobile"),
    "read_rate_mbps": Key(_optional(_positive), 20.0, "mobile: rate the application consumes stream data, Mbit/s"),
    "per_packet_cpu_ms": Key(_nonneg, 0.1, "mobile: CPU time per received packet, ms"),
    "socket_buffer_bytes": Key(_optional(_count), None, "mobile: client socket receive buffer, bytes (default 212992)"),
    "max_data_bytes": Key(_optional(_count), None, "client's initial connection flow-control window, bytes (default: the implementation's)"),
    "max_stream_data_bytes": Key(_optional(_count), None, "client's initial stream flow-control window, bytes (default: the implementation's)"),
    "reordering_threshold": Key(_optional(_count), None, "server's packet reordering threshold, packets (default: the implementation's)"),
    "time_threshold": Key(_optional(_time_threshold), None, "server's time threshold, multiple of the RTT (default: the implementation's)"),
}

SCENARIO_KEYS = {"name", "description", "runs", "seed", "time_limit_s"}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: ``cells`` are dicts of every grid key (defaults filled)."""

    name: str
    description: str
    runs: int
    seed: int
    time_limit_s: float
    axes: dict[str, list]
    cells: list[dict]
    source: Path
    sha256: str

    def runs_of(self, cell: dict) -> list[int]:
        """The seeds of a cell's runs (the same for every cell: paired comparisons)."""
        return [self.seed + i for i in range(self.runs)]


def patched_versions(impl: str, root: Path | None = None) -> set[str]:
    """Versions of ``impl`` with an instrument patch (instrument-patches/<impl>/<v>/statemine.patch)."""
    root = root or Path(__file__).resolve().parents[2] / "instrument-patches"
    d = root / impl
    if not d.is_dir():
        return set()
    return {p.parent.name for p in d.glob("*/statemine.patch")}


def _line_of(text: str, key: str) -> int | None:
    """1-based line where ``key`` is assigned (best effort for messages), else None."""
    pat = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=', re.M)
    m = pat.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _values(key: str, raw: Any, spec: Key) -> list:
    """A grid key's TOML value as the list of its axis values."""
    if spec.list_valued:
        if isinstance(raw, list) and raw and not isinstance(raw[0], list):
            raw = [raw]
    if not isinstance(raw, list):
        raw = [raw]
    if not raw:
        raise _Bad("is an empty list (give at least one value)")
    return raw


def load(path: str | Path) -> Scenario:
    """Read and validate a scenario file.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    >>> _ = f.write('[scenario]\\nname = "x"\\n[grid]\\nstack = "aioquic@installed"\\nrtt_ms = [36, 112]\\n')
    >>> f.close()
    >>> [c["rtt_ms"] for c in load(f.name).cells]
    [36.0, 112.0]
    >>> os.unlink(f.name)
    """
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        raise InputError(path, None, f"cannot read the scenario: {exc.strerror}") from None
    text = raw_bytes.decode("utf-8", errors="replace")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(path, line, f"not valid TOML: {exc}") from None
    return from_dict(doc, path, text, hashlib.sha256(raw_bytes).hexdigest())


def from_dict(doc: dict, path: Path, text: str = "", sha256: str = "") -> Scenario:
    """Validate a parsed scenario (``text`` is the file's text, for line numbers)."""

    def bad(key: str, reason: str) -> InputError:
        return InputError(path, _line_of(text, key.split(".")[-1]), f"{key}: {reason}")

    for top in doc:
        if top not in ("scenario", "grid"):
            raise bad(top, "unknown table or key (a scenario has [scenario] and [grid])")
    head = doc.get("scenario")
    if not isinstance(head, dict):
        raise InputError(path, None, "missing the [scenario] table")
    for key in head:
        if key not in SCENARIO_KEYS:
            raise bad(f"scenario.{key}", f"unknown key (known: {', '.join(sorted(SCENARIO_KEYS))})")
    name = head.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise bad("scenario.name", f"must be a slug of letters, digits, '-', '_', '.', not {name!r}")
    try:
        runs = _count(head.get("runs", 1))
    except _Bad as exc:
        raise bad("scenario.runs", str(exc)) from None
    seed = head.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise bad("scenario.seed", f"must be a whole number >= 0, not {seed!r}")
    try:
        limit = _positive(head.get("time_limit_s", 120.0))
    except _Bad as exc:
        raise bad("scenario.time_limit_s", str(exc)) from None
    description = head.get("description", "")
    if not isinstance(description, str):
        raise bad("scenario.description", "must be a string")

    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise InputError(path, None, "[grid] must be a table")
    axes: dict[str, list] = {}
    for key, raw in grid.items():
        spec = GRID_KEYS.get(key)
        if spec is None:
            raise bad(f"grid.{key}", f"unknown key (known: {', '.join(GRID_KEYS)})")
        try:
            axes[key] = [spec.check(v) for v in _values(key, raw, spec)]
        except _Bad as exc:
            raise bad(f"grid.{key}", str(exc)) from None
    fixed = {k: spec.default for k, spec in GRID_KEYS.items() if k not in axes}
    if "stack" not in axes:
        try:
            fixed["stack"] = _stack(fixed["stack"])
        except _Bad as exc:
            raise bad("grid.stack", f"(default) {exc}") from None
    cells = []
    for combo in itertools.product(*axes.values()):
        cell = dict(fixed)
        cell.update(zip(axes.keys(), combo))
        if cell["object_count"] * cell["object_size_bytes"] > MAX_TRANSFER_BYTES:
            raise bad("grid.object_size_bytes",
                      f"object_count x object_size_bytes must be <= {MAX_TRANSFER_BYTES} bytes")
        cells.append({k: cell[k] for k in GRID_KEYS})
    return Scenario(name, description, runs, seed, limit, axes, cells, path, sha256)


def run_config(cell: dict, seed: int, time_limit_s: float) -> dict:
    """The runner-protocol config of one run of a cell (without ``log_path``/``result_path``).

    >>> c = run_config({**{k: s.default for k, s in GRID_KEYS.items()}, "rtt_ms": 40.0}, 3, 60.0)
    >>> c["path"]["down"]["delay_s"], c["path"]["down"]["buffer_bytes"], c["version"]
    (0.02, 250000, '1.7.2')
    """
    impl, version = cell["stack"].split("@", 1)
    rate = cell["rate_mbps"] * 1e6
    delay = cell["rtt_ms"] / 2000.0
    buffer = cell["buffer_bytes"]
    if buffer is None:  # one bandwidth-delay product, never below the paper's 30 KB
        buffer = max(30_000, int(rate * cell["rtt_ms"] / 1000.0 / 8))
    gilbert = cell["gilbert"]
    sched = cell["rate_schedule_mbps"]
    down = {
        "rate_bps": rate, "buffer_bytes": buffer, "delay_s": delay,
        "jitter_s": cell["jitter_ms"] / 1000.0, "loss": cell["loss"],
        "gilbert": dict(gilbert) if gilbert else None,
        "rate_schedule": {"lo_bps": sched[0] * 1e6, "hi_bps": sched[1] * 1e6, "interval_s": 1.0} if sched else None,
    }
    up_rate = (cell["up_rate_mbps"] or cell["rate_mbps"]) * 1e6
    up = {
        "rate_bps": up_rate, "buffer_bytes": max(30_000, int(up_rate * cell["rtt_ms"] / 1000.0 / 8)),
        "delay_s": delay, "jitter_s": cell["up_jitter_ms"] / 1000.0, "loss": cell["up_loss"],
        "gilbert": None, "rate_schedule": None,
    }
    mobile = cell["profile"] == "mobile"
    client = {
        "profile": cell["profile"],
        "read_rate_bps": cell["read_rate_mbps"] * 1e6 if mobile and cell["read_rate_mbps"] else None,
        "per_packet_cpu_s": cell["per_packet_cpu_ms"] / 1000.0 if mobile else 0.0,
    }
    if mobile and cell["socket_buffer_bytes"]:
        client["socket_buffer_bytes"] = cell["socket_buffer_bytes"]
    for key in ("max_data_bytes", "max_stream_data_bytes"):
        if cell[key]:
            client[key] = cell[key]
    return {
        "seed": seed,
        "implementation": impl,
        "version": version,
        "objects": {"count": cell["object_count"], "size_bytes": cell["object_size_bytes"]},
        "client": client,
        "path": {"down": down, "up": up},
        "reordering_threshold": cell["reordering_threshold"],
        "time_threshold": cell["time_threshold"],
        "time_limit_s": time_limit_s,
    }


def run_id(config: dict) -> str:
    """A stable id of a run: a hash of its config (paths excluded), prefixed by the stack.

    Resuming finds a finished run by this id, so editing a scenario never reuses a run
    whose config changed.
    """
    body = {k: v for k, v in config.items() if k not in ("log_path", "result_path")}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
    return f"{config['implementation']}-{config['version']}-s{config['seed']}-{digest}"
