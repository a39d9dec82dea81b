"""Metrics updates: their values, the full-resolution table and the count seen before each row."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from .connections import _Connection
from .vocabulary import _METRIC_COLUMNS, _METRIC_STRIDE


def _metrics_frame(conn: _Connection, *, line: bool = True, copy: bool = True) -> pd.DataFrame:
    """The connection's metrics updates, time-ordered (log order among equal times):
    ``time``, ``line`` (with ``line``) and the metric columns. ``copy=False`` gives columns
    that are views of the connection's flat rows (no copy: the caller must own them, and
    nothing may extend ``conn.metrics`` any more); a 1 GB JSON-SEQ file's 912,000 updates
    then cost 72 bytes each, not 144 at the peak."""
    return _metrics_table(conn.metric_rows(), conn.unordered, line=line, copy=copy)


def _metrics_table(
    metrics: np.ndarray, unordered: bool, *, line: bool = True, copy: bool = True
) -> pd.DataFrame:
    """Flat metrics rows (time, seq, line, then :data:`_METRIC_COLUMNS`) as a frame of
    ``time``, ``line`` (with ``line``) and the metric columns, sorted by (time, seq) when
    ``unordered`` (see :func:`_metrics_frame`)."""
    if unordered:
        metrics = metrics[np.lexsort((metrics[:, 1], metrics[:, 0]))]
    columns: dict[str, np.ndarray] = {"time": metrics[:, 0]}
    if line:
        columns["line"] = metrics[:, 2].astype("int64")
    columns.update({name: metrics[:, 3 + k] for k, name in enumerate(_METRIC_COLUMNS)})
    return pd.DataFrame(columns, copy=copy)


def _ffill_columns(before: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`statemine.parse.derive.ffill_from` of each column of ``values`` (rows,
    columns) at once, each continuing from its value in ``before``: the same values (a
    selection, no arithmetic), one numpy call per step instead of one per column."""
    series = np.vstack([before, values])
    index = np.where(np.isnan(series), -1, np.arange(len(series))[:, None])
    np.maximum.accumulate(index, axis=0, out=index)
    filled = np.take_along_axis(series, np.maximum(index, 0), axis=0)
    filled[index < 0] = np.nan
    return filled[1:]


class _MetricsCursor:
    """A connection's metrics updates walked forward in (time, seq) order, chunk by chunk:
    each chunk is ``(rows, ends)``, rows of :data:`_METRIC_STRIDE` floats (time, seq, line,
    then :data:`_METRIC_COLUMNS`) sorted by (time, seq), and whether each update can end a
    fired PTO. Only the current chunk (and the previous one's last values) is held."""

    def __init__(self, chunks: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
        self._chunks = chunks
        self._rows = np.empty((0, _METRIC_STRIDE))
        self._filled = np.empty((0, len(_METRIC_COLUMNS)))
        self._ends = np.empty(0, bool)
        self._pos = 0  # next update of the chunk not yet passed
        self._last = np.full(len(_METRIC_COLUMNS), np.nan)  # latest values before the chunk
        self._done = False

    def _next_chunk(self) -> bool:
        """Load the next non-empty chunk (False at the end)."""
        if len(self._filled):
            self._last = self._filled[-1]
        for rows, ends in self._chunks:
            if len(rows):
                self._filled = _ffill_columns(self._last, rows[:, 3:])
                self._rows, self._ends, self._pos = rows, ends, 0
                return True
        self._done = True
        return False

    def advance(self, time: float, seq: float, until_end: bool = False) -> np.ndarray | None:
        """Pass every update at or before (time, seq); with ``until_end``, stop right after
        the first one that can end a PTO and return its row (time, seq, line, ...), else
        None."""
        while not self._done:
            if self._pos == len(self._rows) and not self._next_chunk():
                break
            m_time = self._rows[:, 0]
            lo = int(np.searchsorted(m_time, time, side="left"))
            hi = int(np.searchsorted(m_time, time, side="right"))
            stop = max(
                lo + int(np.searchsorted(self._rows[lo:hi, 1], seq, side="right")), self._pos
            )
            if until_end:
                found = np.flatnonzero(self._ends[self._pos : stop])
                if found.size:
                    self._pos += int(found[0]) + 1
                    return self._rows[self._pos - 1]
            self._pos = stop
            if stop < len(self._rows):
                break
        return None

    def values(self) -> np.ndarray:
        """The latest value of each metric column logged up to the current position (NaN
        where none yet; a view: copy what is kept)."""
        return self._filled[self._pos - 1] if self._pos else self._last


#: Metrics updates of a connection held whole up to which :class:`_SmallCursor` walks them
#: (numpy's calls cost more than Python's steps on a few dozen rows).
SMALL_CURSOR_ROWS = 128


class _SmallCursor:
    """:class:`_MetricsCursor` over one chunk of a few rows, in plain Python (bisect; each
    row's latest logging row per column worked out once): the same positions, rows and
    values, without numpy's cost per call. ``rows`` and ``ends`` as one chunk of :class:`_MetricsCursor`."""

    def __init__(self, rows: np.ndarray, ends: np.ndarray) -> None:
        self._rows: list[list[float]] = rows.tolist()
        columns = list(zip(*self._rows)) or [()] * _METRIC_STRIDE
        self._times, self._seqs = columns[0], columns[1]
        self._ends: list[bool] = ends.tolist()
        self._columns = columns[3:]  # per metric column: its values
        # per row, per metric column: the latest row at or before it that logs the column
        # (-1: none), in one pass over all columns
        logged = np.where(np.isnan(rows[:, 3:]), -1, np.arange(len(rows))[:, None])
        self._latest: list[list[int]] = np.maximum.accumulate(logged, axis=0).tolist()
        self._pos = 0

    def advance(self, time: float, seq: float, until_end: bool = False) -> np.ndarray | None:
        """See :meth:`_MetricsCursor.advance`."""
        times = self._times
        lo = bisect.bisect_left(times, time)
        hi = bisect.bisect_right(times, time, lo)
        stop = max(bisect.bisect_right(self._seqs, seq, lo, hi), self._pos)
        if until_end:
            try:
                found = self._ends.index(True, self._pos, stop)
            except ValueError:
                pass
            else:
                self._pos = found + 1
                return np.array(self._rows[found])
        self._pos = stop
        return None

    def values(self) -> list[float]:
        """See :meth:`_MetricsCursor.values`."""
        if not self._pos:
            return [math.nan] * len(self._columns)
        latest = self._latest[self._pos - 1]  # among the rows before the position
        return [
            col[r] if r >= 0 else math.nan for col, r in zip(self._columns, latest, strict=True)
        ]
