"""Parser for statemine log lines (docs/log-format.md).

``STATEMINE t=<s> conn=<id> [role=<r>] state=<Name>|event=<Name> [key=value ...]``
found anywhere in a line, after any prefix. Each ``(conn, role)`` of a file is one trace.

The file is read in blocks of whole lines (bounded memory) and each block is tokenized by
the compiled :mod:`statemine.parse._linescan` scanner into integer-coded columns. The
scanner keeps, across blocks, the codes of traces and names and each trace's last time,
so it checks time order while streaming. :class:`LogScan` gives the blocks (for streaming
statistics, :mod:`statemine.stats.stream`); :func:`read_statemine_log` joins them into a
:class:`TraceSet`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..errors import InputError
from ._linescan import Scanner
from .lines import DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES, iter_blocks, read_ahead
from .timerange import MAX_TIME_S, time_problem

if TYPE_CHECKING:
    from ..traces import TraceSet

#: ``kind`` codes of :class:`ScannedBlock` and the names they stand for.
KINDS = ("state", "event")
#: Error codes of the scanner (statemine/parse/_linescan.c).
(
    _E_NOMEM,
    _E_LONG_LINE,
    _E_NOT_UTF8,
    _E_MALFORMED,
    _E_NUMBER,
    _E_TIME_FINITE,
    _E_BACKWARDS,
    _E_TWICE,
    _E_OUT_OF_PLACE,
    _E_NOT_KV,
) = range(1, 11)
#: The numeric fields in the scanner's order (= ``traces.NUMERIC_FIELDS``, which loads pandas).
NUMERIC_KEYS = ("cwnd", "inflight", "ssthresh", "srtt")


class ScannedBlock(NamedTuple):
    """The statemine lines of one block, as columns (one entry per line, file order).

    ``line``: 1-based line number; ``time``: seconds; ``trace``: trace code (index of
    :meth:`LogScan.traces`); ``kind``: index into :data:`KINDS`; ``name``: index into
    :meth:`LogScan.names`; ``numeric``: ``cwnd``, ``inflight``, ``ssthresh`` (bytes),
    ``srtt`` (seconds), NaN where absent; ``extra_rows``/``extra_text``: the rows that carry
    other ``key=value`` pairs and those pairs, space separated; ``names``: the file's names
    so far (codes never change, new names are appended).
    """

    line: np.ndarray
    time: np.ndarray
    trace: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    numeric: dict[str, np.ndarray]
    extra_rows: np.ndarray
    extra_text: list[str]
    names: list[str]


class TraceTable(NamedTuple):
    """Per trace code: ``conn``, ``role`` (None when the lines had none), ``last_time``
    (seconds of its last line), ``close_time`` (of its ``event=Close`` line, NaN if none),
    ``n_events`` (lines)."""

    conn: list[str]
    role: list[str | None]
    last_time: np.ndarray
    close_time: np.ndarray
    n_events: np.ndarray


class LogScan:
    """One pass over a statemine log: iterate it for :class:`ScannedBlock` s (in file order,
    each block's arrays are new), then ask for the names and traces seen.

    Raises :class:`InputError` naming the line for a malformed statemine line, a
    non-numeric number, time going backwards within a connection, a line over
    ``max_line_bytes`` or a line that is not UTF-8.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self._scanner = Scanner(max_time=MAX_TIME_S)
        self._chunk_bytes = chunk_bytes
        self._max_line_bytes = max_line_bytes
        self._on_progress = on_progress

    def __iter__(self) -> Iterator[ScannedBlock]:
        blocks = iter_blocks(
            self.path,
            chunk_bytes=self._chunk_bytes,
            max_line_bytes=self._max_line_bytes,
            on_progress=self._on_progress,
            line_number=lambda: self._scanner.next_line,
        )
        for block in blocks:
            out = self._scanner.scan(block, self._max_line_bytes)
            if "error" in out:
                raise _input_error(self.path, out, self._max_line_bytes)
            yield ScannedBlock(
                line=np.frombuffer(out["line"], np.int64),
                time=np.frombuffer(out["time"], np.float64),
                trace=np.frombuffer(out["trace"], np.int32),
                kind=np.frombuffer(out["kind"], np.uint8),
                name=np.frombuffer(out["name"], np.int32),
                numeric={k: np.frombuffer(out[k], np.float64) for k in NUMERIC_KEYS},
                extra_rows=np.frombuffer(out["extra_row"], np.int64),
                extra_text=out["extra_text"],
                names=self._scanner.names(),
            )

    def names(self) -> list[str]:
        """State and event names, indexed by the blocks' ``name`` codes."""
        return self._scanner.names()

    def traces(self) -> TraceTable:
        """The traces seen so far, indexed by the blocks' ``trace`` codes."""
        conns, roles, info = self._scanner.traces()
        packed = np.frombuffer(
            info, np.dtype([("last", "f8"), ("close", "f8"), ("line", "i8"), ("n", "i8")])
        )
        return TraceTable(
            conns, roles, packed["last"].copy(), packed["close"].copy(), packed["n"].copy()
        )


def read_statemine_log(
    path: str | Path,
    *,
    source: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    on_progress: Callable[[int], None] | None = None,
) -> TraceSet:
    """Read one log file of statemine lines into a :class:`~statemine.traces.TraceSet`.

    ``source`` names the file in trace ids (default: the file name). Trace ids are
    ``"<source>#<conn>"``, with ``"/<role>"`` appended when the line has a role. The
    traces frame gets ``conn``, ``role`` and ``end`` (the time of an ``event=Close``
    line, NaN when there is none). Errors as for :class:`LogScan`, and a file with no
    statemine line.
    """
    scan = LogScan(
        path, chunk_bytes=chunk_bytes, max_line_bytes=max_line_bytes, on_progress=on_progress
    )
    columns: dict[str, list[np.ndarray]] = {
        c: [] for c in ("trace", "time", "kind", "name", "line")
    }
    numeric: dict[str, list[np.ndarray | None]] = {k: [] for k in NUMERIC_KEYS}
    fields: list[tuple[np.ndarray, list[str]]] = []
    n = 0
    for b in scan:  # keep each block's columns compactly: line as int32, no all-NaN metrics
        columns["trace"].append(b.trace)
        columns["time"].append(b.time)
        columns["kind"].append(b.kind)
        columns["name"].append(b.name)
        columns["line"].append(_int32_lines(path, b.line))
        for k in NUMERIC_KEYS:
            numeric[k].append(None if np.isnan(b.numeric[k]).all() else b.numeric[k])
        if b.extra_text:
            fields.append((b.extra_rows + n, b.extra_text))
        n += len(b.time)
    if not n:
        raise no_lines_error(path)
    return _to_traceset(
        Path(path), source or Path(path).name, columns, numeric, fields, scan.names(), scan.traces()
    )


def _int32_lines(path: str | Path, line: np.ndarray) -> np.ndarray:
    """Line numbers as int32 (the TraceSet's dtype), or an error past 2^31 - 1 lines."""
    if len(line) and line[-1] > np.iinfo(np.int32).max:
        raise InputError(path, None, "more than 2^31 - 1 lines: use statemine store add")
    return line.astype(np.int32)


def no_lines_error(path: str | Path) -> InputError:
    """The error for a file without a single statemine line."""
    return InputError(
        path, None, "no statemine lines ('STATEMINE t=...') found; is this the right --format?"
    )


class FileEnd(NamedTuple):
    """End of one file in :func:`scan_files`: its traces."""

    path: Path
    traces: TraceTable


def scan_files(
    files: Sequence[Path],
    on_progress: Callable[[int], None] | None = None,
    depth: int = 4,
) -> Iterator[tuple[int, ScannedBlock | FileEnd]]:
    """``(file index, block)`` for each block of each file, then ``(index, FileEnd)``.

    The files are scanned ahead on a background thread (the tokenizer runs without the
    GIL), at most ``depth`` blocks ahead, so scanning overlaps whatever the caller does
    with the blocks (or imports) and memory stays bounded. It starts at once.
    """

    def produce() -> Iterator[tuple[int, ScannedBlock | FileEnd]]:
        for i, path in enumerate(files):
            scan = LogScan(path, on_progress=on_progress)
            for block in scan:
                yield i, block
            yield i, FileEnd(Path(path), scan.traces())

    return read_ahead(produce(), depth)


def trace_ids(source: str, table: TraceTable) -> list[str]:
    """``"<source>#<conn>"`` plus ``"/<role>"`` when there is one, per trace code."""
    return [
        f"{source}#{c}" + (f"/{r}" if r is not None else "") for c, r in zip(table.conn, table.role)
    ]


def _to_traceset(
    path: Path,
    source: str,
    columns: dict[str, list[np.ndarray]],
    numeric: dict[str, list[np.ndarray | None]],
    fields: list[tuple[np.ndarray, list[str]]],
    names: list[str],
    table: TraceTable,
) -> TraceSet:
    """Group the rows (per column, one array per block) by trace (stable: log order within
    a trace) into a TraceSet. Each column's blocks are joined, reordered and released one
    column at a time, so the peak is the finished columns plus one column's copies."""
    import pandas as pd

    from ..traces import TraceSet, group_order

    def take(blocks: list) -> np.ndarray:
        joined = np.concatenate(blocks)
        blocks.clear()
        return joined[order]

    ids = trace_ids(source, table)
    sizes = [len(b) for b in columns["trace"]]
    codes = np.concatenate(columns["trace"])
    columns["trace"].clear()
    order = group_order(codes)
    codes = codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    seq = (np.arange(len(codes)) - np.repeat(starts, np.diff(np.r_[starts, len(codes)]))).astype(
        np.int32
    )
    events = pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(codes, categories=pd.Index(ids, dtype=str)),
            "seq": seq,
            "time": take(columns["time"]),
            "kind": pd.Categorical.from_codes(
                take(columns["kind"]), categories=pd.Index(KINDS, dtype=str)
            ),
            "state": pd.Categorical.from_codes(
                take(columns["name"]), categories=pd.Index(names, dtype=str)
            ),
            "line": take(columns["line"]),
        },
        copy=False,
    )
    for k in NUMERIC_KEYS:
        blocks = numeric[k]
        if any(b is not None for b in blocks):
            events[k] = take(
                [np.full(m, np.nan) if b is None else b for b, m in zip(blocks, sizes)]
            )
        blocks.clear()
    if fields:
        text = np.full(len(codes), None, dtype=object)
        for rows, values in fields:
            text[rows] = values
        events["fields"] = text[order]
    traces = pd.DataFrame(
        {
            "trace": pd.Series(ids, dtype=str),
            "source": str(path),
            "end": table.close_time,
            "conn": pd.Series(table.conn, dtype=str),
            "role": pd.Series(table.role, dtype=object),
        }
    )
    return TraceSet.from_events(events, traces, {"format": "statemine"})


def _input_error(path: Path, err: dict, max_line_bytes: int) -> InputError:
    """The scanner's error dict as an InputError with a readable reason."""
    code, token = err["error"], err["token"].decode("utf-8", "replace")
    if code == _E_LONG_LINE:
        return InputError(path, err["line"], f"line longer than {max_line_bytes} bytes")
    if code == _E_NOT_UTF8:
        return InputError(path, err["line"], "statemine line is not UTF-8 text")
    if code == _E_MALFORMED:
        return InputError(path, err["line"], f"malformed statemine line: {_show(token)}")
    if code == _E_NUMBER:
        what = "time t=" if err["key"] < 0 else f"{NUMERIC_KEYS[err['key']]}="
        return InputError(path, err["line"], f"{what} is not a number: {_show(token)}")
    if code == _E_TIME_FINITE:  # not finite, or beyond MAX_TIME_S
        reason = time_problem(float(token)) or "time out of range"
        return InputError(path, err["line"], f"t={_show(token)}: {reason}")
    if code == _E_BACKWARDS:
        return InputError(
            path,
            err["line"],
            f"time goes backwards within connection: t={err['time']!r} after "
            f"t={err['previous_time']!r} (line {err['previous_line']})",
        )
    if code == _E_TWICE:
        return InputError(path, err["line"], f"{token}= given twice")
    if code == _E_OUT_OF_PLACE:
        return InputError(path, err["line"], f"{token}= out of place or given twice")
    if code == _E_NOT_KV:
        return InputError(path, err["line"], f"expected key=value, found {_show(token)}")
    raise AssertionError(
        f"unknown scanner error {err}"
    )  # pragma: no cover - the C side's codes are all above


def _show(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")
