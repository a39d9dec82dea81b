"""Reader for ftrace text of kernel TCP's congestion state machine (docs/tcp.md).

Reads the text of the tracepoints ``tcp:tcp_cong_state_set`` (the socket's new
``cong_state``) and ``tcp:tcp_probe`` (one line per incoming segment: ``snd_cwnd``,
``ssthresh`` in segments, ``srtt`` in microseconds, ``snd_nxt``/``snd_una`` sequence
numbers) as written by

* a tracefs ``trace`` or ``trace_pipe`` file:
  ``TASK-PID [CPU] FLAGS TIMESTAMP: tcp_probe: family=AF_INET src=... ...``
  (with or without the flags column or a TGID column);
* ``trace-cmd report``: the same, optionally prefixed by the instance name, and the
  event name padded with spaces;
* ``perf script``: ``COMM TID [CPU] TIMESTAMP: tcp:tcp_probe: ...``.

Every line is one of: an event line (the shape above; events other than the two are
counted and ignored, with a warning), a header or comment (``#...``, trace-cmd's
``cpus=N`` / ``version = N`` / ``CPU N is empty``), a blank line, or a report of lost
events: tracefs' ``CPU:N [LOST M EVENTS]``, trace-cmd's ``CPU:N [M EVENTS DROPPED]``,
perf's ``PERF_RECORD_LOST``, a ``##### CPU N buffer started ####`` line (the ring
buffer of CPU N overwrote its oldest events) or a header
``entries-in-buffer/entries-written: A/B`` with A < B (B - A events overwritten). Lost
events are always listed in ``meta["warnings"]`` and counted in ``meta["lost_events"]``
(a JSON object). Anything else is an :class:`InputError` naming the file and line,
unless ``ignore_nonmatching`` (the CLI's ``-i``): then the lines are skipped and counted
in a warning.

Traces: one per socket, keyed by its 4-tuple as that socket sees it
(``saddr:sport-daddr:dport``, IPv6 addresses in brackets). A 4-tuple that a later socket
reused within the file is split where ``tcp_probe``'s ``sock_cookie`` changes (the new
socket's ``Open`` at set-up goes with it): the later sockets' traces get ``~2``, ``~3``,
... after the key (:func:`_split_reused`); without cookies (older kernels) they stay one. States are the kernel's
``enum tcp_ca_state`` names :data:`STATES`; a socket is ``Open`` before its first
``tcp_cong_state_set`` and its trace starts at its first event of either kind and ends
(``end``) at its last. A state logged again while in it continues the visit (dropped)
unless ``keep_repeats``. A socket that never left Open and never had data in flight or
acknowledged (``snd_nxt == snd_una`` on every probe and ``snd_una`` never moved) is a
receiving socket (``role=receiver``), left out unless ``keep_receivers``.

Metrics (``TraceSet.metrics``, one row per ``tcp_probe`` line): ``cwnd_segments`` and
``ssthresh_segments`` as logged (segments; the kernel's "not yet set" ssthresh
2147483647 is ``inf``), ``srtt`` (seconds), ``inflight`` (bytes: ``snd_nxt - snd_una``
modulo 2**32), and ``cwnd``/``ssthresh`` in bytes (= segments x ``mss``) only when
``mss`` is given: the tracepoints do not log the MSS.

Lines are read in blocks of whole lines (:func:`statemine.parse.lines.iter_blocks`,
bounded line length) and matched block by block on RE2 (pyarrow's compute functions):
memory is the events' columns plus one block.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from ..escape import name_text
from .lines import DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, iter_blocks
from .timerange import first_implausible, time_problem

if TYPE_CHECKING:  # the traces module loads pandas; imported where the frames are built
    import pandas as pd

    from ..traces import TraceSet

#: ``cong_state`` 0..4 (the kernel's ``enum tcp_ca_state``), in statemine's names.
STATES = ("Open", "Disorder", "CWR", "Recovery", "Loss")
#: The two events read (as tracefs and trace-cmd name them; perf adds ``tcp:``).
EVENTS = ("tcp_cong_state_set", "tcp_probe")
#: Read where a recording has it (``statemine tcp record`` enables it; perf adds
#: ``sock:``): a socket's TCP state changes, the handshake that begins a socket.
HANDSHAKE_EVENT = "inet_sock_set_state"
#: ``newstate`` values that begin a socket (its handshake), and the one that ends it.
_BIRTH_STATES = ("TCP_SYN_SENT", "TCP_SYN_RECV", "TCP_ESTABLISHED")
#: Row ``state`` codes of the handshake marks (dropped once sockets are split).
_BIRTH, _CLOSE = -2, -3
#: ``ssthresh`` before it is first set (``TCP_INFINITE_SSTHRESH``): read as ``inf``.
INFINITE_SSTHRESH = 0x7FFFFFFF
#: pyarrow arrays and scalars (pyarrow ships no type information).
Arrow = Any
#: Warnings listing line numbers stop after this many lines.
MAX_LISTED = 5

# The shape of an event line: "[CPU] [FLAGS] SECONDS: EVENT: " after any task/pid/instance
# prefix (a DFA match: no captures, linear time).
_EVENT_SHAPE = (
    r"\[\d{1,6}\]\s+(?:\S{1,8}\s+)?\d{1,15}(?:\.\d{1,12})?:\s+[A-Za-z0-9_:]{1,200}:(?:\s|$)"
)
_IS_EVENT = {
    name: r"\d:\s+(?:tcp:|sock:)?" + name + r":(?:\s|$)" for name in (*EVENTS, HANDSHAKE_EVENT)
}
_TIMESTAMP = r"^\d{1,15}(?:\.\d{1,12})?:$"
_DECIMAL = r"^\d{1,10}$"
_HEX = r"^(?:0[xX])?[0-9a-fA-F]{1,8}$"
_ENDPOINT = r"^(?:[^\s\[\]]+|\[[^\s\[\]]+\]):\d{1,5}$"
_ADDRESS = r"^[^\s\[\]]+$"
#: The fields read from each event's ``key=value`` text (any order), and their shapes.
_FIELDS = {
    "tcp_cong_state_set": {
        "family": r"^AF_INET6?$",
        "sport": _DECIMAL,
        "dport": _DECIMAL,
        "saddr": _ADDRESS,
        "daddr": _ADDRESS,
        "saddrv6": _ADDRESS,
        "daddrv6": _ADDRESS,
        "cong_state": r"^\d{1,3}$",
    },
    "tcp_probe": {
        "src": _ENDPOINT,
        "dest": _ENDPOINT,
        "snd_nxt": _HEX,
        "snd_una": _HEX,
        "snd_cwnd": _DECIMAL,
        "ssthresh": _DECIMAL,
        "srtt": _DECIMAL,
    },
    HANDSHAKE_EVENT: {
        "family": r"^AF_INET6?$",
        "protocol": r"^\S{1,40}$",
        "sport": _DECIMAL,
        "dport": _DECIMAL,
        "saddr": _ADDRESS,
        "daddr": _ADDRESS,
        "saddrv6": _ADDRESS,
        "daddrv6": _ADDRESS,
        "newstate": r"^TCP_[A-Z0-9_]{1,20}$",
    },
}
#: Fields read when present: tcp_probe's ``sock_cookie`` (hex, unique per socket for the
#: kernel's uptime) splits a 4-tuple that a later socket reused (older kernels lack it).
_OPTIONAL = {"tcp_probe": {"sock_cookie": r"^(?:0[xX])?[0-9a-fA-F]{1,16}$"}}
# Lines that are not events but are understood (checked in this order).
_ENTRIES = r"^#\s*entries-in-buffer/entries-written:\s*(?P<a>\d{1,19})/(?P<b>\d{1,19})"
_BUFFER_STARTED = r"^#{5}\s*CPU\s+(?P<cpu>\d{1,6})\s+buffer started\s*#{4}"
_LOST = (
    r"(?:CPU:?\s*(?P<cpu>\d{1,6})\s+)?\[(?:LOST\s+(?P<n>\d{1,19})\s+EVENTS"
    r"|(?P<m>\d{1,19})?\s*EVENTS DROPPED)\]"
)
_PERF_LOST = r"PERF_RECORD_LOST\S*.*?\blost\s+(?P<n>\d{1,19})"
_HARMLESS = (
    r"^\s*(?:#.*|cpus=\d+|version\s*=\s*\S+|CPU\s*\d+ is empty|CPU\d+ data recorded at .*"
    r"|Buffer:\s*\S*|\s*)\r?$"
)
_SNIFF = (
    rb"(?m)(?:^# tracer: |\]\s+(?:\S{1,8}\s+)?\d+\.\d+:\s+(?:tcp:)?(?:tcp_cong_state_set|"
    rb"tcp_probe):\s)"
)


def sniff_ftrace(head: bytes) -> bool:
    """Whether the first bytes of a file look like ftrace text of the TCP events (or a
    tracefs ``trace`` file header)."""
    import re

    return re.search(_SNIFF, head) is not None


@dataclass
class _Columns:
    """Event rows gathered block by block (file order)."""

    line: list = field(default_factory=list)
    time: list = field(default_factory=list)
    socket: list = field(default_factory=list)
    state: list = field(default_factory=list)  # cong_state, -1 for a probe
    cwnd: list = field(default_factory=list)
    ssthresh: list = field(default_factory=list)
    srtt: list = field(default_factory=list)
    nxt: list = field(default_factory=list)
    una: list = field(default_factory=list)
    cookie: list = field(default_factory=list)  # sock_cookie, 0 when not logged

    def joined(self) -> dict[str, np.ndarray]:
        """The columns as arrays; the blocks are let go one column at a time (memory:
        one column twice at most)."""
        out = {}
        for name in list(vars(self)):
            parts = getattr(self, name)
            setattr(self, name, [])
            out[name] = np.concatenate(parts) if parts else np.zeros(0)
            del parts
        return out


@dataclass
class _Losses:
    """Reports of lost or overwritten events, and other notes, with their lines."""

    overwritten: int = 0
    lost: int = 0
    drops_unknown: int = 0
    wrapped_cpus: set = field(default_factory=set)
    notes: list = field(default_factory=list)
    other_events: int = 0
    skipped: list = field(default_factory=list)  # line numbers (lenient mode)
    n_skipped: int = 0

    def any(self) -> bool:
        return bool(self.overwritten or self.lost or self.drops_unknown or self.wrapped_cpus)

    def summary(self) -> dict:
        return {
            "overwritten": self.overwritten,
            "lost": self.lost,
            "drop_reports_without_count": self.drops_unknown,
            "wrapped_cpus": sorted(self.wrapped_cpus),
        }


def read_ftrace(
    path: str | Path,
    *,
    source: str | None = None,
    keep_repeats: bool = False,
    keep_receivers: bool = False,
    mss: int | None = None,
    ignore_nonmatching: bool = False,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> TraceSet:
    """Read one ftrace text file into a :class:`~statemine.traces.TraceSet` (module
    docstring for the formats and rules).

    Trace ids are ``"<source>#<saddr:sport-daddr:dport>"`` (``source`` defaults to the
    file name); the traces frame has ``conn`` (the 4-tuple), ``saddr``, ``sport``,
    ``daddr``, ``dport``, ``role`` (``sender``/``receiver``), ``incarnation`` (1, 2, ...
    for sockets that reused the 4-tuple), ``cookie`` (its ``sock_cookie``, hex, "" when
    not logged), ``bytes_acked`` (bytes
    acknowledged during the trace, from ``snd_una``), ``probes`` and ``state_events``
    (lines of each event). ``mss`` (bytes) adds ``cwnd``/``ssthresh`` in bytes to the
    metrics. Raises :class:`InputError` (file, line, reason) for a line that is none of
    the known kinds (unless ``ignore_nonmatching``), a timestamp that is not in seconds,
    a ``cong_state`` outside 0..4, or a file without any of the two events.
    """
    if mss is not None and mss <= 0:
        raise InputError(path, None, f"mss must be a positive number of bytes, not {mss}")
    path = Path(path)
    cols, losses, sockets = _scan(
        path, ignore_nonmatching, chunk_bytes, max_line_bytes, on_progress
    )
    data = cols.joined()
    if not len(data["time"]):
        raise _no_events(path)
    ts, n_sockets = _build(
        path,
        source or name_text(path.name),
        data,
        sockets,
        losses,
        keep_repeats,
        keep_receivers,
        mss,
    )
    if ts is None:
        raise _only_receivers(path, n_sockets)
    return ts


def _no_events(path: Path) -> InputError:
    return InputError(
        path, None, "no tcp_cong_state_set or tcp_probe lines found; is this the right --format?"
    )


def _only_receivers(path: Path, n_sockets: int) -> InputError:
    return InputError(
        path,
        None,
        f"only receiving sockets ({n_sockets}: never left Open, no data sent); "
        "keep_receivers (--keep-receivers) reads them",
    )


def _scan(
    path: Path,
    lenient: bool,
    chunk_bytes: int,
    max_line_bytes: int,
    on_progress: Callable[[int], None] | None,
) -> tuple[_Columns, _Losses, dict[bytes, int]]:
    """All blocks of the file: the event columns, the loss reports, the socket keys."""
    cols, losses = _Columns(), _Losses()
    sockets: dict[bytes, int] = {}
    for _ in _blocks(
        path, lenient, chunk_bytes, max_line_bytes, on_progress, cols, losses, sockets
    ):
        pass
    return cols, losses, sockets


def _blocks(
    path: Path,
    lenient: bool,
    chunk_bytes: int,
    max_line_bytes: int,
    on_progress: Callable[[int], None] | None,
    cols: _Columns,
    losses: _Losses,
    sockets: dict[bytes, int],
) -> Iterator[None]:
    """Scan the file block by block, appending each block's events to ``cols`` and its
    reports to ``losses`` (socket keys numbered in ``sockets``); yields after each block."""
    import pyarrow as pa
    import pyarrow.compute as pc

    done = [0]  # lines before the current block
    for block in iter_blocks(
        path,
        chunk_bytes=chunk_bytes,
        max_line_bytes=max_line_bytes,
        on_progress=on_progress,
        line_number=lambda: done[0] + 1,
    ):
        lines = pc.split_pattern(pa.array([bytes(block)], pa.binary()), "\n").flatten()
        if len(lines) and block[-1:] == b"\n":
            lines = lines.slice(0, len(lines) - 1)  # after the last newline: nothing
        _check_lengths(path, lines, done[0], max_line_bytes)
        _scan_block(path, lines, done[0], lenient, cols, losses, sockets)
        done[0] += len(lines)
        yield


def read_ftrace_batches(
    path: str | Path,
    folder: Path,
    *,
    batch_rows: int,
    source: str | None = None,
    keep_repeats: bool = False,
    keep_receivers: bool = False,
    mss: int | None = None,
    ignore_nonmatching: bool = False,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[TraceSet]:
    """:func:`read_ftrace`'s trace set as consecutive pieces of whole traces, in bounded
    memory: each block's rows are sorted by (4-tuple, time) and spilled to raw column
    files in ``folder`` (:func:`statemine.store_stream.spill_columns`); then the 4-tuples
    are taken in order in batches of at most ``batch_rows`` lines (a busier 4-tuple
    alone), gathered from the spill and built as :func:`read_ftrace` builds the whole
    file. Joined, the pieces are that trace set (same traces, order, events, metrics;
    ``meta`` on every piece). Memory: one block while spilling, one batch after; disk
    about 90 bytes per event line. Raises what :func:`read_ftrace` raises (the errors of
    the whole file before the first piece)."""
    from .spill import batches, gather_columns, spill_columns

    if mss is not None and mss <= 0:
        raise InputError(path, None, f"mss must be a positive number of bytes, not {mss}")
    path = Path(path)
    cols, losses = _Columns(), _Losses()
    sockets: dict[bytes, int] = {}
    counts = np.zeros(0, np.int64)

    def blocks() -> Iterator[dict[str, np.ndarray]]:
        nonlocal counts
        scan = _blocks(
            path, ignore_nonmatching, chunk_bytes, max_line_bytes, None, cols, losses, sockets
        )
        for _ in scan:
            data = cols.joined()
            data = {"socket": data.pop("socket"), **data}
            if len(data["time"]):
                found = np.bincount(data["socket"], minlength=len(sockets))
                counts = np.r_[counts, np.zeros(len(found) - len(counts), np.int64)] + found
                yield data

    sizes = spill_columns(blocks(), folder, _SPILL, _by_socket)
    if not sum(sizes):
        raise _no_events(path)
    n_sockets, made = 0, False
    for first, stop in batches(counts, batch_rows):
        for data in gather_columns(folder, sizes, _SPILL, first, stop, None, _by_socket):
            ts, n = _build(
                path,
                source or name_text(path.name),
                data,
                sockets,
                losses,
                keep_repeats,
                keep_receivers,
                mss,
            )
            n_sockets += n
            if ts is not None:
                made = True
                yield ts
    if not made:
        raise _only_receivers(path, n_sockets)


#: The spilled columns of :func:`read_ftrace_batches` (the grouping code first).
_SPILL = {
    "socket": np.int32,
    "line": np.int64,
    "time": np.float64,
    "state": np.int8,
    "cwnd": np.float64,
    "ssthresh": np.float64,
    "srtt": np.float64,
    "nxt": np.uint32,
    "una": np.uint32,
    "cookie": np.uint64,
}


def _by_socket(columns: dict[str, np.ndarray]) -> np.ndarray:
    """Rows by 4-tuple, then time (stable: file order among ties), as :func:`_build`."""
    return np.lexsort((columns["time"], columns["socket"]))


def _check_lengths(path: Path, lines: Arrow, base: int, max_line_bytes: int) -> None:
    """An error at the first line longer than ``max_line_bytes``."""
    import pyarrow.compute as pc

    long = pc.greater(pc.binary_length(lines), max_line_bytes).to_numpy(zero_copy_only=False)
    if long.any():
        raise InputError(
            path, base + 1 + int(np.argmax(long)), f"line longer than {max_line_bytes} bytes"
        )


def _scan_block(
    path: Path,
    lines: Arrow,
    base: int,
    lenient: bool,
    cols: _Columns,
    losses: _Losses,
    sockets: dict[bytes, int],
) -> None:
    """Classify one block's lines; append its events to ``cols``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    numbers = np.arange(base + 1, base + 1 + len(lines), dtype=np.int64)
    shape = _mask(pc.match_substring_regex(lines, _EVENT_SHAPE))
    if not shape.all():
        _other_lines(path, lines.filter(pa.array(~shape)), numbers[~shape], lenient, losses)
    if not shape.any():
        return
    lines, numbers = lines.filter(pa.array(shape)), numbers[shape]
    tokens = _Tokens(lines)
    name = tokens.token(tokens.event)
    kinds = {
        event: _mask(pc.is_in(name, pa.array([f"{event}:", f"tcp:{event}:", f"sock:{event}:"])))
        for event in (*EVENTS, HANDSHAKE_EVENT)
    }
    other = ~(kinds["tcp_cong_state_set"] | kinds["tcp_probe"] | kinds[HANDSHAKE_EVENT])
    if other.any():
        _check_other_events(path, lines.filter(pa.array(other)), numbers[other])
        losses.other_events += int(other.sum())
    for event, rows in (
        ("tcp_cong_state_set", _cong_rows),
        ("tcp_probe", _probe_rows),
        (HANDSHAKE_EVENT, _handshake_rows),
    ):
        at = np.flatnonzero(kinds[event])
        if len(at):
            rows(path, tokens.fields(path, numbers[at], event, at), numbers[at], cols, sockets)


def _check_other_events(path: Path, lines: Arrow, numbers: np.ndarray) -> None:
    """Lines of other events must not be lines of ours whose fields did not split (a field
    without ``=`` after the event name)."""
    import pyarrow.compute as pc

    for event, pattern in _IS_EVENT.items():
        ours = _mask(pc.match_substring_regex(lines, pattern))
        _first_bad(path, numbers, ~ours, f"{event} line with a field without '='")


def _mask(arr: Arrow) -> np.ndarray:
    """A pyarrow boolean array (nulls as False) as a numpy bool array."""
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


class _Tokens:
    """The whitespace-separated tokens of event lines: the event is the last token without
    ``=`` (so a task name may hold spaces), the timestamp the one before, the fields the
    ``key=value`` tokens after it."""

    def __init__(self, lines: Arrow) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        text = pc.cast(lines, options=pc.CastOptions(pa.string(), allow_invalid_utf8=True))
        lists = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(text))
        self.values = lists.flatten()
        offsets = lists.offsets.to_numpy()
        self.start, self.stop = offsets[:-1], offsets[1:]
        index = np.arange(len(self.values))
        self._plain = ~_mask(pc.match_substring(self.values, "="))
        self.event = np.maximum.reduceat(np.where(self._plain, index, -1), self.start)

    def token(self, at: np.ndarray) -> Arrow:
        import pyarrow as pa

        return self.values.take(pa.array(at))

    def fields(self, path: Path, numbers: np.ndarray, event: str, rows: np.ndarray) -> dict:
        """``{"time": seconds, key: text values}`` of the event's :data:`_FIELDS` for the
        lines ``rows``; an :class:`InputError` at the first line that lacks one or has one
        malformed."""
        import pyarrow.compute as pc

        ev = self.event[rows]
        stamp = self.token(np.maximum(ev - 1, 0))
        ok = _mask(pc.match_substring_regex(stamp, _TIMESTAMP))
        _first_bad(path, numbers, ok, f"{event} line without a timestamp before the event")
        out: dict[str, Any] = {
            "time": _seconds(path, pc.utf8_slice_codeunits(stamp, 0, -1), numbers)
        }
        for key, shape in _FIELDS[event].items():
            at = self._find(key, rows)
            _first_bad(path, numbers, at > ev, f"{event} line without {key}=")
            value = pc.utf8_slice_codeunits(self.token(at), len(key) + 1)
            ok = _mask(pc.match_substring_regex(value, shape))
            _first_bad(path, numbers, ok, f"{event} line with a malformed {key}=", value)
            out[key] = value
        for key, shape in _OPTIONAL.get(event, {}).items():
            at = self._find(key, rows)
            has = at > ev
            value = pc.utf8_slice_codeunits(self.token(np.where(has, at, ev)), len(key) + 1)
            ok = _mask(pc.match_substring_regex(value, shape)) | ~has
            _first_bad(path, numbers, ok, f"{event} line with a malformed {key}=", value)
            out[key] = (value, has)
        return out

    def _find(self, key: str, rows: np.ndarray) -> np.ndarray:
        """Index of the token ``key=...`` after the event in each of ``rows`` (-1 where
        there is none): at the first row's place after the event when every row has it
        there (one check per row), else searched in every token."""
        import pyarrow.compute as pc

        ev, stop = self.event[rows], self.stop[rows]
        first = self.values[int(ev[0]) : int(stop[0])].to_pylist()
        place = next((i for i, t in enumerate(first) if t.startswith(key + "=")), None)
        if place is not None:
            at = np.minimum(ev + place, stop - 1)
            if _mask(pc.starts_with(self.token(at), key + "=")).all():
                return at
        has = _mask(pc.starts_with(self.values, key + "="))
        index = np.arange(len(self.values))
        return np.maximum.reduceat(np.where(has, index, -1), self.start)[rows]


def _first_bad(
    path: Path, numbers: np.ndarray, ok: np.ndarray, what: str, values: Arrow = None
) -> None:
    """Raise :class:`InputError` at the first row where ``ok`` is False."""
    if ok.all():
        return
    i = int(np.argmin(ok))
    shown = "" if values is None else f": {_show(values[i].as_py())}"
    raise InputError(path, int(numbers[i]), what + shown)


def _seconds(path: Path, text: Arrow, numbers: np.ndarray) -> np.ndarray:
    """The timestamps (seconds); an error for one without a fraction (a counter clock)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    whole = ~_mask(pc.match_substring(text, "."))
    if whole.any():
        i = int(np.argmax(whole))
        raise InputError(
            path,
            int(numbers[i]),
            f"timestamp {text[i].as_py()!r} is not in seconds (a counter trace clock such as "
            "'counter' or 'x86-tsc'); record with trace_clock mono, global or local",
        )
    seconds = np.asarray(text.cast(pa.float64()), np.float64)
    bad = first_implausible(seconds)
    if bad is not None:
        raise InputError(path, int(numbers[bad]), str(time_problem(float(seconds[bad]))))
    return seconds


def _number(values: Arrow) -> np.ndarray:
    import pyarrow as pa

    return np.array(values.cast(pa.float64()), np.float64)


def _binary(values: Arrow) -> Arrow:
    import pyarrow as pa

    return values.cast(pa.binary())


def _cong_rows(
    path: Path, f: dict, numbers: np.ndarray, cols: _Columns, sockets: dict[bytes, int]
) -> None:

    state = _number(f["cong_state"]).astype(np.int64)
    _first_bad(
        path,
        numbers,
        state < len(STATES),
        f"cong_state is not a TCP congestion state (0..{len(STATES) - 1})",
        f["cong_state"],
    )
    key = _tuple_key(f)
    n = len(numbers)
    nan = np.full(n, np.nan)
    zero = np.zeros(n, np.uint32)
    _append(
        cols,
        numbers,
        f["time"],
        _codes(key, sockets),
        state.astype(np.int8),
        nan,
        nan,
        nan,
        zero,
        zero,
        np.zeros(n, np.uint64),
    )


def _tuple_key(f: dict) -> Arrow:
    """The 4-tuple key ``saddr:sport-daddr:dport`` of events that log the addresses and
    ports apart (``tcp_cong_state_set``, ``inet_sock_set_state``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    v6 = pa.array(_mask(pc.equal(f["family"], "AF_INET6")))
    src = pc.if_else(v6, _bracket(_binary(f["saddrv6"])), _binary(f["saddr"]))
    dst = pc.if_else(v6, _bracket(_binary(f["daddrv6"])), _binary(f["daddr"]))
    sep = pa.scalar(b":", pa.binary())
    return pc.binary_join_element_wise(
        pc.binary_join_element_wise(src, _binary(f["sport"]), sep),
        pc.binary_join_element_wise(dst, _binary(f["dport"]), sep),
        pa.scalar(b"-", pa.binary()),
    )


def _handshake_rows(
    path: Path, f: dict, numbers: np.ndarray, cols: _Columns, sockets: dict[bytes, int]
) -> None:
    """``inet_sock_set_state`` lines of TCP sockets as marks: ``_BIRTH`` where the socket
    enters a handshake state or ESTABLISHED, ``_CLOSE`` where it enters TCP_CLOSE; other
    transitions and other protocols are not rows. Only TCP keys are numbered."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tcp = _mask(pc.equal(f["protocol"], "IPPROTO_TCP"))
    birth = _mask(pc.is_in(f["newstate"], pa.array(list(_BIRTH_STATES)))) & tcp
    close = _mask(pc.equal(f["newstate"], "TCP_CLOSE")) & tcp
    keep = birth | close
    if not keep.any():
        return
    at = pa.array(np.flatnonzero(keep))
    f = {k: v[keep] if isinstance(v, np.ndarray) else v.take(at) for k, v in f.items()}
    n = len(at)
    nan = np.full(n, np.nan)
    zero = np.zeros(n, np.uint32)
    _append(
        cols,
        numbers[keep],
        f["time"],
        _codes(_tuple_key(f), sockets),
        np.where(birth[keep], _BIRTH, _CLOSE).astype(np.int8),
        nan,
        nan,
        nan,
        zero,
        zero,
        np.zeros(n, np.uint64),
    )


def _probe_rows(
    path: Path, f: dict, numbers: np.ndarray, cols: _Columns, sockets: dict[bytes, int]
) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    key = pc.binary_join_element_wise(
        _binary(f["src"]), _binary(f["dest"]), pa.scalar(b"-", pa.binary())
    )
    ssthresh = _number(f["ssthresh"])
    ssthresh[ssthresh == INFINITE_SSTHRESH] = np.inf
    _append(
        cols,
        numbers,
        f["time"],
        _codes(key, sockets),
        np.full(len(numbers), -1, np.int8),
        _number(f["snd_cwnd"]),
        ssthresh,
        _number(f["srtt"]) * 1e-6,
        hex_u32(f["snd_nxt"]),
        hex_u32(f["snd_una"]),
        _cookies(*f["sock_cookie"]),
    )


def _append(cols: _Columns, *columns: Any) -> None:
    """Append one array per column of :class:`_Columns` (in its field order)."""
    for name, values in zip(vars(cols), columns, strict=True):
        getattr(cols, name).append(values)


def _bracket(addr: Arrow) -> Arrow:
    """``[addr]`` for each (binary) address."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = pa.scalar(b"", pa.binary())
    return pc.binary_join_element_wise(
        pa.scalar(b"[", pa.binary()), addr, pa.scalar(b"]", pa.binary()), empty
    )


def _codes(keys: Arrow, sockets: dict[bytes, int]) -> np.ndarray:
    """Socket codes of ``keys`` (binary array), new keys numbered in order of appearance."""
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(keys)
    local = np.array(
        [sockets.setdefault(k, len(sockets)) for k in enc.dictionary.to_pylist()], np.int64
    )
    return local.astype(np.int32)[enc.indices.to_numpy(zero_copy_only=False)]


_HEX_VALUE = np.zeros(256, np.uint64)
_HEX_VALUE[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_VALUE[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_VALUE[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)


def hex_u32(values: Arrow) -> np.ndarray:
    """Hexadecimal numbers of at most 8 digits (``0x`` prefix optional; a pyarrow binary
    or string array) as uint32, vectorized.

    >>> import pyarrow as pa
    >>> hex_u32(pa.array([b"0xa2900463", b"0", b"ff"])).tolist()
    [2727347299, 0, 255]
    """
    return _hex(values, 8).astype(np.uint32)


def _hex(values: Arrow, width: int) -> np.ndarray:
    """Hexadecimal numbers of at most ``width`` (<= 16) digits as uint64, vectorized."""
    import pyarrow as pa
    import pyarrow.compute as pc

    digits = pc.replace_substring_regex(values.cast(pa.string()), r"^0[xX]", "")
    padded = pc.utf8_lpad(digits, width, "0").cast(pa.large_string())
    padded = pa.concat_arrays([padded])  # offset 0, one buffer
    data = np.frombuffer(padded.buffers()[2], np.uint8)[: width * len(padded)]
    shifts = np.arange(4 * (width - 1), -1, -4, dtype=np.uint64)
    return (_HEX_VALUE[data.reshape(-1, width)] << shifts).sum(axis=1, dtype=np.uint64)


def _cookies(values: Arrow, has: np.ndarray) -> np.ndarray:
    """``sock_cookie`` values as uint64, 0 where the line has none (the kernel never
    hands out cookie 0)."""
    return np.where(has, _hex(values, 16), np.uint64(0)).astype(np.uint64)


def _other_lines(
    path: Path, lines: Arrow, numbers: np.ndarray, lenient: bool, losses: _Losses
) -> None:
    """Lines that are not events: headers, loss reports, or bad lines."""
    import pyarrow.compute as pc

    known = np.zeros(len(lines), bool)
    entries = pc.extract_regex(lines, _ENTRIES)
    for i in np.flatnonzero(_mask(entries.is_valid())):
        known[i] = True
        a, b = int(entries.field("a")[i].as_py()), int(entries.field("b")[i].as_py())
        if a < b:
            losses.overwritten += b - a
            losses.notes.append(
                f"{path}:{numbers[i]}: the ring buffer overwrote {b - a} of {b} events "
                f"(entries-in-buffer/entries-written: {a}/{b}); record with a larger buffer"
            )
    started = pc.extract_regex(lines, _BUFFER_STARTED)
    for i in np.flatnonzero(_mask(started.is_valid()) & ~known):
        known[i] = True
        cpu = int(started.field("cpu")[i].as_py())
        losses.wrapped_cpus.add(cpu)
        losses.notes.append(
            f"{path}:{numbers[i]}: the ring buffer of CPU {cpu} wrapped: its events before "
            "this line were overwritten"
        )
    for pattern in (_LOST, _PERF_LOST):
        lost = pc.extract_regex(lines, pattern)
        for i in np.flatnonzero(_mask(lost.is_valid()) & ~known):
            known[i] = True
            row = lost[i].as_py()
            count = next((int(row[k]) for k in ("n", "m") if row.get(k)), None)
            if count is None:
                losses.drops_unknown += 1
            else:
                losses.lost += count
            losses.notes.append(
                f"{path}:{numbers[i]}: events lost here "
                f"({'an unknown number' if count is None else count}): {_show(_text(lines[i]))}"
            )
    known |= _mask(pc.match_substring_regex(lines, _HARMLESS))
    if known.all():
        return
    bad = np.flatnonzero(~known)
    if not lenient:
        first = int(bad[0])
        raise InputError(
            path,
            int(numbers[first]),
            f"not an ftrace line of tcp_cong_state_set/tcp_probe: {_show(_text(lines[first]))} "
            "(-i skips such lines)",
        )
    losses.n_skipped += len(bad)
    room = MAX_LISTED - len(losses.skipped)
    losses.skipped.extend(int(numbers[i]) for i in bad[: max(room, 0)])


def _text(scalar: Arrow) -> str:
    return scalar.as_py().decode("utf-8", "replace")


def _show(value: str | bytes, limit: int = 80) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _build(
    path: Path,
    source: str,
    data: dict[str, np.ndarray],
    sockets: dict[bytes, int],
    losses: _Losses,
    keep_repeats: bool,
    keep_receivers: bool,
    mss: int | None,
) -> tuple[TraceSet | None, int]:
    """Group the rows by socket into a TraceSet (None when every socket is a receiver and
    ``keep_receivers`` is off), and the number of sockets."""
    import pandas as pd

    from ..traces import TraceSet

    order = np.lexsort((data["time"], data["socket"]))  # stable: file order among ties
    d = data
    for k in list(d):  # reordered one column at a time: one column twice at most
        d[k] = d[k][order]
    del order
    sock, tuple_of, incarnation = _split_reused(d["socket"], d)
    real = d["state"] >= -1  # the handshake marks have done their work
    if not real.all():
        sock = sock[real]
        for k in list(d):
            d[k] = d[k][real]
    is_probe = d["state"] < 0
    n_sock = len(tuple_of)
    first = np.r_[True, sock[1:] != sock[:-1]]
    starts = np.flatnonzero(first)
    role_sender = _senders(sock, d, is_probe, n_sock)
    bytes_acked = _bytes_acked(sock, d, is_probe, n_sock)
    keep = role_sender | keep_receivers
    if not keep.any():
        return None, n_sock

    states = _state_rows(sock, d, is_probe, starts, keep_repeats)
    states = {k: v[keep[states["socket"]]] for k, v in states.items()}
    tuples = [k.decode("utf-8", "replace") for k in sockets]
    keys = [tuples[t] for t in tuple_of]
    ids = [
        f"{source}#{k}" + (f"~{n + 1}" if n else "")
        for k, n in zip(keys, incarnation.tolist(), strict=True)
    ]
    kept = np.flatnonzero(keep)
    categories = pd.Index([ids[i] for i in kept], dtype=str)
    remap = np.full(n_sock, -1, np.int64)
    remap[kept] = np.arange(len(kept))
    events = pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(remap[states["socket"]], categories=categories),
            "time": states["time"],
            "kind": "state",
            "state": pd.Categorical.from_codes(
                states["state"], categories=pd.Index(STATES, dtype=str)
            ),
            "line": states["line"],
        }
    )
    last = np.r_[starts[1:], len(sock)] - 1
    end = np.full(n_sock, np.nan)
    end[sock[last]] = d["time"][last]
    parts = [_split_key(k) for k in keys]
    traces = pd.DataFrame(
        {
            "trace": pd.Series([ids[i] for i in kept], dtype=str),
            "source": name_text(str(path)),
            "end": end[kept],
            "conn": pd.Series([keys[i] for i in kept], dtype=str),
            "saddr": [parts[i][0] for i in kept],
            "sport": [parts[i][1] for i in kept],
            "daddr": [parts[i][2] for i in kept],
            "dport": [parts[i][3] for i in kept],
            "role": ["sender" if role_sender[i] else "receiver" for i in kept],
            "incarnation": incarnation[kept] + 1,
            "cookie": [f"{c:x}" if c else "" for c in _first_cookie(sock, d, n_sock)[kept]],
            "bytes_acked": bytes_acked[kept],
            "probes": np.bincount(sock[is_probe], minlength=n_sock)[kept],
            "state_events": np.bincount(sock[~is_probe], minlength=n_sock)[kept],
        }
    )
    metrics = _metrics(sock, d, is_probe, remap, categories, mss)
    meta = {
        "format": "ftrace",
        "warnings": json.dumps(_warnings(path, losses)),
        "lost_events": json.dumps(losses.summary()),
        "receivers_left_out": str(n_sock - len(kept)),
    }
    return TraceSet.from_events(events, traces, meta, metrics), n_sock


def _split_reused(sock: np.ndarray, d: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split the rows of a 4-tuple that several sockets used one after the other.

    Rows are grouped by 4-tuple (``sock``) and in time order; ``d["state"]`` marks probes
    (-1) and the handshake marks of ``inet_sock_set_state`` (``_BIRTH``, ``_CLOSE``). A new
    socket begins at the first birth mark of a tuple after a close mark (or its first
    birth): the kernel's own account of a socket's set-up, so every state event before it
    is the old socket's (a socket closed by FIN logs ``Recovery -> Open`` after its last
    ACK, past its last probe). Where the recording has no marks, a new socket begins at a
    ``tcp_probe`` that carries another ``sock_cookie`` than the tuple's previous probe;
    the state events between the two probes are the old socket's (a connecting socket
    logs no state at set-up; an old socket closed by RST logs its last ``Open`` with
    dport 0, another tuple). Returns the socket code of every row (marks included,
    grouped, numbered in row order; a socket with marks only gets no code of its own),
    and per socket its 4-tuple code and incarnation (0 for the first)."""
    state, cookie = d["state"], d["cookie"]
    n = len(sock)
    index = np.arange(n)
    first_row = np.r_[True, sock[1:] != sock[:-1]]
    mark = state <= _BIRTH
    # a birth right after a close mark or the tuple's start, among the tuple's marks
    at = np.flatnonzero(mark)
    prev_close = np.r_[True, (state[at[:-1]] == _CLOSE) | (sock[at[1:]] != sock[at[:-1]])]
    births = at[(state[at] == _BIRTH) & prev_close]
    new = first_row.copy()
    new[births] = True
    born = np.cumsum(np.isin(index, births))  # births at or before each row
    probes = np.flatnonzero((state == -1) & (cookie != 0))
    change = (sock[probes[1:]] == sock[probes[:-1]]) & (cookie[probes[1:]] != cookie[probes[:-1]])
    before, probe = probes[:-1][change], probes[1:][change]
    new[probe[born[probe] == born[before]]] = True  # no birth between: the cookie decides
    # each real row's socket: the latest "new" at or before it; a socket is numbered only
    # when it has a real row
    real = ~mark
    opened = np.maximum.accumulate(np.where(new, index, -1))
    owner = opened[real]
    starts_real = np.r_[True, owner[1:] != owner[:-1]] if owner.size else np.zeros(0, bool)
    code_real = np.cumsum(starts_real) - 1
    code = np.full(n, -1, np.int64)
    code[real] = code_real
    tuple_of = sock[real][starts_real]
    first_of_tuple = np.r_[True, tuple_of[1:] != tuple_of[:-1]] if tuple_of.size else tuple_of
    group = np.cumsum(first_of_tuple) - 1
    incarnation = np.arange(len(tuple_of)) - np.flatnonzero(first_of_tuple)[group]
    return code, tuple_of, incarnation


def _first_cookie(sock: np.ndarray, d: dict, n_sock: int) -> np.ndarray:
    """Per socket: the ``sock_cookie`` of its first probe that has one (0: none)."""
    out = np.zeros(n_sock, np.uint64)
    at = np.flatnonzero(d["cookie"] != 0)[::-1]  # the first row of a socket written last
    out[sock[at]] = d["cookie"][at]
    return out


def _senders(sock: np.ndarray, d: dict, is_probe: np.ndarray, n_sock: int) -> np.ndarray:
    """Per socket: whether it left Open, had data in flight or saw ``snd_una`` move."""
    left_open = np.zeros(n_sock, bool)
    left_open[sock[(~is_probe) & (d["state"] > 0)]] = True
    p_sock, nxt, una = sock[is_probe], d["nxt"][is_probe], d["una"][is_probe]
    in_flight = np.zeros(n_sock, bool)
    in_flight[p_sock[nxt != una]] = True
    moved = np.zeros(n_sock, bool)
    moved[p_sock[1:][(p_sock[1:] == p_sock[:-1]) & (una[1:] != una[:-1])]] = True
    return left_open | in_flight | moved


def _bytes_acked(sock: np.ndarray, d: dict, is_probe: np.ndarray, n_sock: int) -> np.ndarray:
    """Per socket: the sum of ``snd_una`` advances between its probes (modulo 2**32)."""
    p_sock, una = sock[is_probe], d["una"][is_probe].astype(np.int64)
    same = p_sock[1:] == p_sock[:-1]
    step = (una[1:] - una[:-1]) % (1 << 32)
    return np.bincount(p_sock[1:][same], weights=step[same], minlength=n_sock).astype(np.int64)


def _state_rows(
    sock: np.ndarray, d: dict, is_probe: np.ndarray, starts: np.ndarray, keep_repeats: bool
) -> dict[str, np.ndarray]:
    """State rows per socket (grouped, time order): an ``Open`` row at the socket's first
    event when that is a probe, then its ``tcp_cong_state_set`` rows; repeats of the
    current state dropped unless ``keep_repeats``."""
    lead = starts[is_probe[starts]]  # sockets whose first event is a probe
    rows = np.sort(np.r_[lead, np.flatnonzero(~is_probe)], kind="stable")
    state = np.where(is_probe[rows], 0, d["state"][rows]).astype(np.int8)
    socket = sock[rows]
    if not keep_repeats:
        repeat = np.r_[False, (socket[1:] == socket[:-1]) & (state[1:] == state[:-1])]
        rows, state, socket = rows[~repeat], state[~repeat], socket[~repeat]
    return {"socket": socket, "state": state, "time": d["time"][rows], "line": d["line"][rows]}


def _metrics(
    sock: np.ndarray,
    d: dict,
    is_probe: np.ndarray,
    remap: np.ndarray,
    categories: pd.Index,
    mss: int | None,
) -> pd.DataFrame | None:
    """The metrics table: one row per probe of a kept socket."""
    import pandas as pd

    rows = np.flatnonzero(is_probe & (remap[sock] >= 0))
    inflight = (d["nxt"][rows].astype(np.int64) - d["una"][rows].astype(np.int64)) % (1 << 32)
    table = pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(remap[sock[rows]], categories=categories),
            "time": d["time"][rows],
            "cwnd_segments": d["cwnd"][rows],
            "ssthresh_segments": d["ssthresh"][rows],
            "srtt": d["srtt"][rows],
            "inflight": inflight.astype(np.float64),
        }
    )
    if mss is not None:
        table["cwnd"] = table["cwnd_segments"] * mss
        table["ssthresh"] = table["ssthresh_segments"] * mss
    return table if len(table) else None


def _split_key(key: str) -> tuple[str, int, str, int]:
    """``"a:1-b:2"`` (IPv6 in brackets) as ``(a, 1, b, 2)``."""
    src, _, dst = key.partition("-")  # neither an IPv4 address nor [IPv6] has a "-"

    def one(end: str) -> tuple[str, int]:
        host, _, port = end.rpartition(":")
        return host.strip("[]"), int(port) if port.isdigit() else -1

    return (*one(src), *one(dst))


def _warnings(path: Path, losses: _Losses) -> list[str]:
    """The warnings of one file: lost events first (never silent), then the rest."""
    out = list(losses.notes)
    if losses.any():
        out.insert(
            0,
            f"{path}: events were lost or overwritten ({losses.overwritten} overwritten, "
            f"{losses.lost} lost"
            + (f", {losses.drops_unknown} drops of unknown size" if losses.drops_unknown else "")
            + (
                f", ring buffer wrapped on CPU {', '.join(map(str, sorted(losses.wrapped_cpus)))}"
                if losses.wrapped_cpus
                else ""
            )
            + "): state times near the gaps are unreliable",
        )
    if losses.other_events:
        out.append(f"{path}: {losses.other_events} lines of other events ignored")
    if losses.n_skipped:
        lines = ", ".join(map(str, losses.skipped))
        more = ", ..." if losses.n_skipped > len(losses.skipped) else ""
        out.append(
            f"{path}: {losses.n_skipped} lines that are not ftrace lines skipped (-i): "
            f"lines {lines}{more}"
        )
    return out
