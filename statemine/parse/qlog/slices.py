"""A connection spilled to disk (pass 1, :func:`statemine.parse.qlog.connections._extract`)
built in slices (pass 2): its rows in one forward walk over the spill files, appended part
by part, so memory does not grow with the connection.

What the rows need decided over the whole connection is in its :class:`_Summary` (the
first item that makes a state row, the raw state names, whether it has state events and
logs PTO counts) or in its own fields (first and last event time, event count, labels), so
each slice comes out as the same rows of :func:`statemine.parse.qlog.read_qlog`'s frame.
A connection whose states are derived from its metrics (and packets: RFC 9002 recovery
periods) takes a few more forward walks (:mod:`.derivation`: its losses, its packets for
the periods, then its states chunk by chunk); picoquic's numeric states are named by a
controller table chosen from the summary (its distinct state values and one cc_param
hint). Connections whose events (or, with derived states, packets) go back in time are
read back, sorted and built whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...traces import TRACE_COLUMNS, TracePart
from ..statenames import detect_by_names, implementation_key
from .common import _Report
from .connections import _Connection
from .derivation import _derived_frames
from .metrics import _metrics_table, _MetricsCursor
from .rows import (
    _picoquic_table,
    _renamed,
    _row_frames,
    _start_state,
    _trace_id,
    _trace_row,
    _warn_unknown,
    _with_trace,
)


def _sliceable(conn: _Connection, derive: bool) -> bool:
    """Whether a connection is built in slices (from its spill files): one that was
    spilled, in time order, with state events (picoquic's table chosen from its summary),
    or without (left out, or with ``derive`` states derived from its metrics, and packets
    where it has them, also in time order). Sets the implementation detected from its
    state names, as a whole read does."""
    summary = conn.summary
    if conn.spill is None or conn.unordered:
        return False
    if not summary.has_states:  # RFC 9002 periods (with packets) need them in time order
        return not (derive and conn.has("sent") and conn.has("acks") and summary.packets_unordered)
    if summary.has_states and conn.labels["implementation"] is None:
        names = set(summary.names)
        old = _start_state(summary.first_state, conn.start)
        if old is not None:
            names.add(old)
        conn.labels["implementation"] = detect_by_names(names)
    return True


def _sliced_parts(
    conn: _Connection,
    path: Path,
    source: str,
    overrides: Mapping[str, str] | None,
    report: _Report,
    slice_rows: int,
    derive: bool = False,
) -> Iterator[TracePart]:
    """The parts of a :func:`_sliceable` connection: its events, then its metrics updates,
    at most ``slice_rows`` rows each (none when it is left out, with the warning a whole
    read gives; with ``derive``, states derived where it has none)."""
    summary = conn.summary
    trace_id = _trace_id(source, conn)
    if not summary.n_items and not summary.n_metrics:
        report.warn(None, f"trace {trace_id}: no congestion events at all; left out")
        return
    cursor = _MetricsCursor(conn.metric_chunks(slice_rows))
    frames = _row_frames(
        conn.stored_items(),
        cursor,
        summary.first_state,
        conn.start,
        trace_id,
        report,
        slice_rows,
    )
    if not summary.has_states and derive:
        parts = _derived_frames(conn, slice_rows, frames, trace_id, overrides, report)
        yield from _derived_parts(conn, parts, path, trace_id, slice_rows)
        return
    if not summary.has_states:
        for _ in frames:  # its warnings, as a whole read gives them
            pass
        report.warn(
            None,
            f"trace {trace_id}: no congestion_state_updated events (only {summary.n_metrics} "
            "metrics updates); left out. Pass derive_states=True to derive states from "
            "cwnd/ssthresh",
        )
        return
    if implementation_key(conn.labels["implementation"]) == "picoquic":
        conn.labels["implementation"] = _picoquic_table(conn, trace_id, report)
    implementation = conn.labels["implementation"]
    traces = _part_traces(path, trace_id, conn, derived=False)
    unknown: Counter = Counter()
    seq, first = 0, True
    for frame in frames:
        frame, names = _renamed(frame, implementation, overrides)
        unknown.update(names)
        frame = frame.drop(columns="mark")
        frame["seq"] = np.arange(seq, seq + len(frame))
        seq += len(frame)
        frame.insert(0, "trace", trace_id)
        yield TracePart(traces, first, events=frame)
        first = False
    _warn_unknown(unknown, implementation, trace_id, report)
    yield from _metric_parts(conn, traces, trace_id, slice_rows)


def _metric_parts(
    conn: _Connection, traces: pd.DataFrame, trace_id: str, slice_rows: int
) -> Iterator[TracePart]:
    """The parts of a connection's metrics table, at most ``slice_rows`` rows each."""
    for chunk, _ in conn.metric_chunks(slice_rows):
        table = _metrics_table(chunk, False, line=False)
        yield TracePart(traces, False, metrics=_with_trace(table, trace_id))


def _part_traces(path: Path, trace_id: str, conn: _Connection, derived: bool) -> pd.DataFrame:
    """The one-row traces frame of a connection's parts (columns in the traces frame's
    order: :data:`~statemine.traces.TRACE_COLUMNS` first)."""
    traces = pd.DataFrame([_trace_row(path, trace_id, conn, derived)])
    return traces[list(TRACE_COLUMNS) + [c for c in traces.columns if c not in TRACE_COLUMNS]]


def _derived_parts(
    conn: _Connection,
    frames: Iterator[pd.DataFrame],
    path: Path,
    trace_id: str,
    slice_rows: int,
) -> Iterator[TracePart]:
    """The parts of a connection whose states are derived (``frames``: its events,
    :func:`._derived_frames`), at most ``slice_rows`` rows each; none when it has none."""
    traces = _part_traces(path, trace_id, conn, derived=True)
    seq, first = 0, True
    for whole in frames:
        for at in range(0, len(whole), slice_rows):
            frame = whole.iloc[at : at + slice_rows].reset_index(drop=True)
            frame["seq"] = np.arange(seq, seq + len(frame))
            seq += len(frame)
            frame.insert(0, "trace", trace_id)
            yield TracePart(traces, first, events=frame)
            first = False
    if not first:
        yield from _metric_parts(conn, traces, trace_id, slice_rows)
