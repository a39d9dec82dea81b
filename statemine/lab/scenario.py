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

Random elements (each off when its key is 0 / "default"; all drawn from the run's seed):
``loss`` / ``gilbert`` (random loss), ``jitter_ms``, the phase of ``rate_schedule_mbps``,
``cross_load`` (cross traffic, Poisson or ON/OFF with ``cross_on_off_ms``),
``link_trace`` (a cellular link: the seed picks the start offset),
``per_packet_cpu_cv`` and ``read_rate_cv`` (the mobile client). ``link_trace`` /
``up_link_trace`` name a mahimahi trace file (relative to the scenario file) or a
synthetic profile ``"synthetic:<profile>"`` (:data:`statemine.lab.cellular.PROFILES`);
the trace then sets the rate of its direction and ``rate_mbps`` is ignored there.

Limits (documented in docs/lab.md): every value has a range (:data:`GRID_KEYS`), a scenario
has at most :data:`MAX_CELLS` cells, :data:`MAX_RUNS_PER_CELL` runs per cell and
:data:`MAX_RUNS` runs in all; the counts are computed before the grid is built.

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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import cellular
from .path import Gilbert, PathValueError, RateSchedule

#: The stacks `statemine lab` can run (not the qlog state-name tables: parse.statenames).
LAB_IMPLEMENTATIONS = (
    "aioquic",
    "quic-go",
    "quiche",
    "tcp",
    "quic-go-rt",
    "aioquic-rt",
    "quiche-rt",
)
#: Real-time twins of the QUIC stacks (docs/realtime.md): the same patched versions.
REALTIME_SUFFIX = "-rt"
#: The kernel-TCP "versions": congestion controls, run in real time (docs/realtime.md).
TCP_VERSIONS = ("reno", "cubic", "bbr")
#: Congestion controllers the ``cc`` key names (quiche's; the other stacks have one each).
CONTROLLERS = ("reno", "cubic", "bbr2")
PROFILES = ("desktop", "mobile")
#: Largest total transfer of one run (count x size), bytes: the server holds it in memory.
MAX_TRANSFER_BYTES = 256 * 2**20
#: Spelling of "the implementation's default" inside a list of thresholds.
DEFAULT = "default"
#: Most cells (grid points), runs per cell and runs of one scenario.
MAX_CELLS = 10_000
MAX_RUNS_PER_CELL = 10_000
MAX_RUNS = 200_000
#: Longest virtual-time limit of a run, s.
MAX_TIME_LIMIT_S = 3600.0
#: Prefix of a synthetic link-trace profile in ``link_trace`` values.
SYNTHETIC = "synthetic:"
#: Length of a synthetic link trace (it loops), s; and the generator's seed.
SYNTHETIC_DURATION_S = 120.0
#: How often the mobile application's read rate is redrawn (``read_rate_cv`` > 0), s.
READ_RATE_INTERVAL_S = 0.1
SYNTHETIC_SEED = 1
#: Where a run config's relative link-trace file points from its run folder.
LINK_TRACES_DIR = "link-traces"


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


def _within(
    lo: float, hi: float, unit: str = "", strict_lo: bool = False
) -> Callable[[Any], float]:
    """A check: a finite number in ``[lo, hi]`` (``(lo, hi]`` with ``strict_lo``)."""
    opening = "(" if strict_lo else "["

    def check(v: Any) -> float:
        v = _num(v)
        if v > hi or v < lo or (strict_lo and v == lo):
            raise _Bad(f"must be in {opening}{lo:g}, {hi:g}]{unit}, not {v:g}")
        return v

    return check


_positive = _at_least(0, strict=True)
_nonneg = _at_least(0)
_rate = _within(0.001, 100_000, " Mbit/s")
_ms = _within(0, 10_000, " ms")
_cv = _within(0, 10)
_time_threshold = _within(1, 32, " (a multiple of the RTT)")


def _load(v: Any) -> float:
    v = _num(v)
    if not 0 <= v < 1:
        raise _Bad(f"is a fraction of the link rate and must be in [0, 1), not {v:g}")
    return v


def _whole(lo: int, hi: int, unit: str = "") -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise _Bad(f"must be a whole number in [{lo}, {hi}]{unit}, not {v!r}")
        return v

    return check


def _prob(v: Any) -> float:
    v = _num(v)
    if not 0 <= v <= 1:
        raise _Bad(f"is a probability and must be in [0, 1], not {v:g}")
    return v


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise _Bad(f"must be a whole number >= 1, not {v!r}")
    return v


_bytes = _whole(0, 2**30, " bytes")
_window = _whole(1, 2**40, " bytes")


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


def _on_off(v: Any) -> tuple[float, float]:
    if not (isinstance(v, list) and len(v) == 2):
        raise _Bad(f"must be a pair [mean_on, mean_off] of durations in ms, not {v!r}")
    check = _within(0, 1e6, " ms", strict_lo=True)
    return (check(v[0]), check(v[1]))


def _link_trace(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise _Bad(f"must be a trace file name or 'synthetic:PROFILE', not {v!r}")
    if v.startswith(SYNTHETIC) and v[len(SYNTHETIC) :] not in cellular.PROFILES:
        raise _Bad(
            f"unknown synthetic profile {v[len(SYNTHETIC) :]!r} (known: {', '.join(cellular.PROFILES)})"
        )
    return v


def _schedule(v: Any) -> tuple[float, float]:
    if not (isinstance(v, list) and len(v) == 2):
        raise _Bad(f"must be a pair [lo, hi] of rates in Mbps, not {v!r}")
    lo, hi = _rate(v[0]), _rate(v[1])
    try:
        RateSchedule(lo * 1e6, hi * 1e6)
    except PathValueError as exc:
        raise _Bad(exc.reason) from None
    return (lo, hi)


def _cc(v: Any) -> str:
    if v not in CONTROLLERS:
        raise _Bad(f"unknown congestion controller {v!r} (known: {', '.join(CONTROLLERS)})")
    return v


def _stack(v: Any) -> str:
    if not isinstance(v, str) or "@" not in v:
        raise _Bad(f"must be 'IMPLEMENTATION@VERSION' (e.g. 'aioquic@1.7.2'), not {v!r}")
    impl, version = v.split("@", 1)
    if impl not in LAB_IMPLEMENTATIONS:
        raise _Bad(f"unknown implementation {impl!r} (known: {', '.join(LAB_IMPLEMENTATIONS)})")
    if impl == "tcp":
        if version not in TCP_VERSIONS:
            raise _Bad(
                f"tcp@{version}: unknown congestion control (known: {', '.join(TCP_VERSIONS)})"
            )
        return v
    # quic-go-rt, aioquic-rt, quiche-rt: the patched stack in real time (docs/realtime.md)
    base = impl.removesuffix(REALTIME_SUFFIX)
    known = patched_versions(base)
    if version not in known and not (base == "aioquic" and version == "installed"):
        raise _Bad(
            f"{impl} {version} has no instrument patch (patched versions: "
            f"{', '.join(sorted(known)) or 'none'})"
        )
    return v


@dataclass(frozen=True)
class Key:
    """A grid key: its check, its default (``None``: the runner's default) and its unit."""

    check: Callable[[Any], Any]
    default: Any
    doc: str
    list_valued: bool = False  # a single value is itself a list (rate_schedule_mbps)


GRID_KEYS: dict[str, Key] = {
    "stack": Key(
        _stack,
        "aioquic@1.7.2",
        "implementation@version, e.g. 'quic-go@v0.65.0'; 'tcp@cubic' (reno, bbr): kernel TCP in real time; 'quic-go-rt@v0.65.0', 'aioquic-rt@1.7.2', 'quiche-rt@0.30.0': the QUIC stack in real time",
    ),
    "rate_mbps": Key(_rate, 50.0, "bottleneck rate server->client, Mbit/s, in [0.001, 100000]"),
    "up_rate_mbps": Key(_optional(_rate), None, "client->server rate, Mbit/s (default: rate_mbps)"),
    "rtt_ms": Key(
        _ms, 36.0, "base round-trip propagation delay, ms (half each way), in [0, 10000]"
    ),
    "buffer_bytes": Key(
        _optional(_bytes),
        None,
        "bottleneck tail-drop buffer, bytes (default: one BDP, at least 30000), at most 2^30",
    ),
    "loss": Key(_prob, 0.0, "random loss probability server->client"),
    "up_loss": Key(_prob, 0.0, "random loss probability client->server"),
    "gilbert": Key(
        _optional(_gilbert),
        None,
        "Gilbert-Elliott loss server->client {p_gb, p_bg, loss_good, loss_bad} (replaces loss)",
    ),
    "jitter_ms": Key(
        _ms, 0.0, "netem jitter server->client: per-packet delay uniform in +-jitter, ms"
    ),
    "up_jitter_ms": Key(_ms, 0.0, "jitter client->server, ms"),
    "rate_schedule_mbps": Key(
        _optional(_schedule),
        None,
        "variable bandwidth server->client: [lo, hi] Mbit/s redrawn every second, seeded phase",
        True,
    ),
    "cross_load": Key(
        _load,
        0.0,
        "cross traffic at the server->client bottleneck, fraction of the rate in [0, 1) (0: none)",
    ),
    "cross_on_off_ms": Key(
        _optional(_on_off),
        None,
        "cross traffic ON/OFF: [mean ON, mean OFF] ms, exponential (default: Poisson)",
        True,
    ),
    "link_trace": Key(
        _optional(_link_trace),
        None,
        "server->client rate from a mahimahi trace file or 'synthetic:PROFILE' (seeded start offset)",
    ),
    "up_link_trace": Key(
        _optional(_link_trace),
        None,
        "client->server rate from a mahimahi trace file or 'synthetic:PROFILE'",
    ),
    "object_size_bytes": Key(_count, 1_000_000, "size of each object, bytes"),
    "object_count": Key(
        _whole(1, 10_000), 1, "objects per page (one stream each, requested at once)"
    ),
    "profile": Key(_profile, "desktop", "client profile: desktop or mobile"),
    "read_rate_mbps": Key(
        _optional(_rate), 20.0, "mobile: mean rate the application consumes stream data, Mbit/s"
    ),
    "read_rate_cv": Key(
        _cv,
        0.0,
        "mobile: coefficient of variation of the read rate, redrawn every 100 ms (0: constant)",
    ),
    "per_packet_cpu_ms": Key(
        _within(0, 1000, " ms"), 0.1, "mobile: mean CPU time per received packet, ms"
    ),
    "per_packet_cpu_cv": Key(
        _cv,
        0.0,
        "mobile: coefficient of variation of the per-packet CPU time, lognormal (0: constant)",
    ),
    "socket_buffer_bytes": Key(
        _optional(_whole(1, 2**30, " bytes")),
        None,
        "mobile: client socket receive buffer, bytes (default 212992)",
    ),
    "max_data_bytes": Key(
        _optional(_window),
        None,
        "client's initial connection flow-control window, bytes (default: the implementation's)",
    ),
    "max_stream_data_bytes": Key(
        _optional(_window),
        None,
        "client's initial stream flow-control window, bytes (default: the implementation's)",
    ),
    "reordering_threshold": Key(
        _optional(_whole(1, 65535, " packets")),
        None,
        "server's packet reordering threshold, packets (default: the implementation's)",
    ),
    "time_threshold": Key(
        _optional(_time_threshold),
        None,
        "server's time threshold, multiple of the RTT in [1, 32] (default: the implementation's)",
    ),
    "cc": Key(
        _optional(_cc),
        None,
        "congestion controller of both ends, quiche only: reno, cubic or bbr2 (default: quiche's, cubic)",
    ),
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
    link_traces: dict[str, TraceFile] = field(default_factory=dict)

    def runs_of(self, cell: dict) -> list[int]:
        """The seeds of a cell's runs (the same for every cell: paired comparisons)."""
        return [self.seed + i for i in range(self.runs)]


@dataclass(frozen=True)
class TraceFile:
    """A link trace a scenario names: its text (mahimahi), sha256 and mean rate (bits/s)."""

    name: str
    text: bytes
    sha256: str
    mean_rate_bps: float

    @property
    def file_name(self) -> str:
        """Its name under ``OUT/link-traces/`` (content-addressed)."""
        return f"{self.sha256[:16]}.trace"


def link_trace_file(value: str, base: Path) -> TraceFile:
    """Read (a file, relative to ``base``) or generate (``synthetic:PROFILE``) a link trace.

    Raises :class:`InputError` naming the trace file and line of a malformed trace.
    """
    if value.startswith(SYNTHETIC):
        profile = cellular.PROFILES[value[len(SYNTHETIC) :]]
        times = cellular.synthesize(profile, SYNTHETIC_DURATION_S, SYNTHETIC_SEED)
    else:
        times = cellular.read_times(base / value)
    text = cellular.format_trace(times).encode("ascii")
    trace = cellular.LinkTrace.from_times(times)
    return TraceFile(value, text, hashlib.sha256(text).hexdigest(), trace.mean_rate_bps)


def patched_versions(impl: str, root: Path | None = None) -> set[str]:
    """Versions of ``impl`` with an instrument patch (``<patches>/<impl>/<v>/statemine.patch``;
    the patches directory is ``$STATEMINE_PATCHES`` when set, as for ``statemine patch``)."""
    from ..patch import registry

    d = registry.patches_root(root) / impl
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
    if spec.list_valued and isinstance(raw, list) and raw and not isinstance(raw[0], list):
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
        raise bad(
            "scenario.name", f"must be a slug of letters, digits, '-', '_', '.', not {name!r}"
        )
    try:
        runs = _whole(1, MAX_RUNS_PER_CELL)(head.get("runs", 1))
    except _Bad as exc:
        raise bad("scenario.runs", str(exc)) from None
    seed = head.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**40:
        raise bad("scenario.seed", f"must be a whole number in [0, 2^40], not {seed!r}")
    try:
        limit = _within(0, MAX_TIME_LIMIT_S, " s", strict_lo=True)(head.get("time_limit_s", 120.0))
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
    n_cells = math.prod(len(v) for v in axes.values())
    if n_cells > MAX_CELLS:
        raise InputError(
            path,
            None,
            f"[grid]: {n_cells:g} cells (the product of the axes' lengths); "
            f"at most {MAX_CELLS} are allowed",
        )
    if n_cells * runs > MAX_RUNS:
        raise bad(
            "scenario.runs",
            f"{n_cells} cells x {runs} runs = {n_cells * runs} runs; at most {MAX_RUNS} are allowed",
        )
    traces: dict[str, TraceFile] = {}
    for key in ("link_trace", "up_link_trace"):
        for value in axes.get(key, []):
            if value is not None and value not in traces:
                traces[value] = link_trace_file(value, path.parent)
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
        if cell["cc"] is not None and not cell["stack"].startswith(("quiche@", "quiche-rt@")):
            raise bad(
                "grid.cc",
                f"only the quiche stack takes a congestion controller, not {cell['stack']}",
            )
        if cell["object_count"] * cell["object_size_bytes"] > MAX_TRANSFER_BYTES:
            raise bad(
                "grid.object_size_bytes",
                f"object_count x object_size_bytes must be <= {MAX_TRANSFER_BYTES} bytes",
            )
        cells.append({k: cell[k] for k in GRID_KEYS})
    return Scenario(name, description, runs, seed, limit, axes, cells, path, sha256, traces)


def link_config(
    rate_bps: float,
    buffer_bytes: int,
    delay_s: float,
    *,
    jitter_s: float = 0.0,
    loss: float = 0.0,
    gilbert: Mapping[str, float] | None = None,
    rate_schedule: Mapping[str, float] | None = None,
    cross_traffic: Mapping[str, float] | None = None,
    link_trace: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One direction of a run config's ``path`` (docs/lab-protocol.md), every key present.

    ``rate_bps``: the bottleneck rate, bits per second; ``buffer_bytes``: the queue before
    it, bytes (tail drop); ``delay_s``: one-way propagation delay, seconds; ``jitter_s``:
    the per-packet delay variation, seconds; ``loss``: random loss probability (0..1);
    ``gilbert`` (``p_gb``, ``p_bg``: per-packet transition probabilities), ``rate_schedule``
    (``lo_bps``, ``hi_bps``, ``interval_s``), ``cross_traffic`` (``load``, ``packet_bytes``,
    ``mean_on_s``, ``mean_off_s``) and ``link_trace`` (``file``, ``sha256``, ``offset_ms``):
    their tables, copied, or None (off). The values are checked where they are used
    (:meth:`statemine.lab.path.LinkConfig.from_dict`, and the Go and Rust harnesses).

    >>> link_config(20e6, 60_000, 0.015, loss=0.01)
    ... # doctest: +NORMALIZE_WHITESPACE
    {'rate_bps': 20000000.0, 'buffer_bytes': 60000, 'delay_s': 0.015, 'jitter_s': 0.0,
     'loss': 0.01, 'gilbert': None, 'rate_schedule': None, 'cross_traffic': None,
     'link_trace': None}
    """

    def table(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else dict(value)

    return {
        "rate_bps": rate_bps,
        "buffer_bytes": buffer_bytes,
        "delay_s": delay_s,
        "jitter_s": jitter_s,
        "loss": loss,
        "gilbert": table(gilbert),
        "rate_schedule": table(rate_schedule),
        "cross_traffic": table(cross_traffic),
        "link_trace": table(link_trace),
    }


def run_config(
    cell: dict, seed: int, time_limit_s: float, traces: dict[str, TraceFile] | None = None
) -> dict:
    """The runner-protocol config of one run of a cell (without ``log_path``/``result_path``).

    ``traces`` holds the link traces the cell names (:attr:`Scenario.link_traces`); a
    link trace is referred to by ``../../link-traces/<sha>.trace``, relative to the run's
    folder (:func:`statemine.lab.grid.resolve_link_traces`), and sets its direction's
    ``rate_bps`` to the trace's mean.

    >>> c = run_config({**{k: s.default for k, s in GRID_KEYS.items()}, "rtt_ms": 40.0}, 3, 60.0)
    >>> c["path"]["down"]["delay_s"], c["path"]["down"]["buffer_bytes"], c["version"]
    (0.02, 250000, '1.7.2')
    """
    impl, version = cell["stack"].split("@", 1)
    traces = traces or {}

    def trace_of(key: str) -> TraceFile | None:
        return traces[cell[key]] if cell.get(key) else None

    def bdp(rate_bps: float) -> int:  # one bandwidth-delay product, never below the paper's 30 KB
        return max(30_000, int(rate_bps * cell["rtt_ms"] / 1000.0 / 8))

    def ref(t: TraceFile) -> dict:
        return {
            "file": f"../../{LINK_TRACES_DIR}/{t.file_name}",
            "sha256": t.sha256,
            "offset_ms": None,
        }

    delay = cell["rtt_ms"] / 2000.0
    down_trace, up_trace = trace_of("link_trace"), trace_of("up_link_trace")
    rate = down_trace.mean_rate_bps if down_trace else cell["rate_mbps"] * 1e6
    buffer = cell["buffer_bytes"]
    if buffer is None:
        buffer = bdp(rate)
    gilbert = cell["gilbert"]
    sched = cell["rate_schedule_mbps"]
    on_off = cell["cross_on_off_ms"]
    cross = None
    if cell["cross_load"] > 0:
        cross = {
            "load": cell["cross_load"],
            "packet_bytes": 1500,
            "mean_on_s": on_off[0] / 1000.0 if on_off else 0.0,
            "mean_off_s": on_off[1] / 1000.0 if on_off else 0.0,
        }
    down = link_config(
        rate,
        buffer,
        delay,
        jitter_s=cell["jitter_ms"] / 1000.0,
        loss=cell["loss"],
        gilbert=gilbert or None,
        rate_schedule={"lo_bps": sched[0] * 1e6, "hi_bps": sched[1] * 1e6, "interval_s": 1.0}
        if sched
        else None,
        cross_traffic=cross,
        link_trace=ref(down_trace) if down_trace else None,
    )
    up_rate = (
        up_trace.mean_rate_bps if up_trace else (cell["up_rate_mbps"] or cell["rate_mbps"]) * 1e6
    )
    up = link_config(
        up_rate,
        bdp(up_rate),
        delay,
        jitter_s=cell["up_jitter_ms"] / 1000.0,
        loss=cell["up_loss"],
        link_trace=ref(up_trace) if up_trace else None,
    )
    mobile = cell["profile"] == "mobile"
    client = {
        "profile": cell["profile"],
        "read_rate_bps": cell["read_rate_mbps"] * 1e6
        if mobile and cell["read_rate_mbps"]
        else None,
        "per_packet_cpu_s": cell["per_packet_cpu_ms"] / 1000.0 if mobile else 0.0,
    }
    if mobile and cell["per_packet_cpu_cv"]:
        client["per_packet_cpu_cv"] = cell["per_packet_cpu_cv"]
    if mobile and cell["read_rate_cv"] and client["read_rate_bps"]:
        client["read_rate_cv"] = cell["read_rate_cv"]
        client["read_rate_interval_s"] = READ_RATE_INTERVAL_S
    if mobile and cell["socket_buffer_bytes"]:
        client["socket_buffer_bytes"] = cell["socket_buffer_bytes"]
    for key in ("max_data_bytes", "max_stream_data_bytes"):
        if cell[key]:
            client[key] = cell[key]
    extra = {"cc": cell["cc"]} if cell.get("cc") else {}  # absent: run ids stay as they were
    return {
        **extra,
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
