"""Connections to statemine rows: state and event rows, metrics carried onto them, state names, the TraceSet of a file."""

from __future__ import annotations

import json
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import InputError
from ...escape import name_text
from ...traces import TracePart, TraceSet
from ..statenames import (
    PICOQUIC_BBR_PHASES,
    PICOQUIC_TABLES,
    detect_by_names,
    implementation_key,
    picoquic_bbr_fields,
    picoquic_controller,
    resolve_state,
)
from .common import NoCongestionData, _field, _Report, _token
from .connections import _SLICE_ROWS, _Connection
from .derivation import _derived_frames
from .metrics import SMALL_CURSOR_ROWS, _MetricsCursor, _SmallCursor
from .vocabulary import (
    _APP_LIMITED,
    _CHROMIUM_AL,
    _LOSS,
    _LOSS_RULES,
    _METRIC_COLUMNS,
    _MVFST,
    _SPURIOUS,
    _STATE,
    _TIMER,
    _app_limited,
    _item_state,
    _new_state,
    _packet_number,
    _pto_fired,
    _pto_state,
)


def _connection_rows(conn: _Connection, trace_id: str, report: _Report) -> pd.DataFrame:
    """Rows (state and event rows, ``mark`` for states the file marks outside
    congestion_state_updated) of one connection held whole, time-ordered (log order among
    equal times): :func:`_row_frames` over its sorted items and metrics updates."""
    items = sorted(conn.items, key=lambda it: (it[0], it[5]))
    metrics = conn.metric_rows()
    if conn.unordered:
        report.warn(None, f"trace {trace_id}: events are not in time order; sorted by time")
        metrics = metrics[
            np.lexsort((metrics[:, 1], metrics[:, 0]))
        ]  # else already in (time, seq) order
    counts = np.frombuffer(conn.pto_count, dtype=float).reshape(-1, 3)
    # where the updates log pto_count, only one logging it back at 0 ends a PTO
    ends = (
        np.isin(metrics[:, 1], counts[counts[:, 2] == 0, 1])
        if counts.size
        else np.ones(len(metrics), bool)
    )
    first = next((it for it in items if _item_state(it[1], it[2]) is not None), None)
    cursor = _MetricsCursor(iter([(metrics, ends)]))
    frame = next(_row_frames(items, cursor, first, conn.start, trace_id, report))
    order = np.lexsort((frame["seq"].to_numpy(float), frame["time"].to_numpy(float)))
    return frame.iloc[order].drop(columns="seq").reset_index(drop=True)


def _connection_columns(
    conn: _Connection, trace_id: str, report: _Report
) -> tuple[dict[str, list], np.ndarray]:
    """:func:`_connection_rows` as plain lists, without a frame and not yet sorted: the row
    lists (keys as :func:`_row_frames`' columns) and the carried metric values (rows,
    columns) in the order :func:`_row_frames` makes them (:func:`batch_order` sorts them);
    the same rows, warnings in the same order."""
    items = sorted(conn.items, key=lambda it: (it[0], it[5]))
    metrics = conn.metric_rows()
    if conn.unordered:
        report.warn(None, f"trace {trace_id}: events are not in time order; sorted by time")
        metrics = metrics[np.lexsort((metrics[:, 1], metrics[:, 0]))]
    counts = np.frombuffer(conn.pto_count, dtype=float).reshape(-1, 3)
    ends = (
        np.isin(metrics[:, 1], counts[counts[:, 2] == 0, 1])
        if counts.size
        else np.ones(len(metrics), bool)
    )
    first = next((it for it in items if _item_state(it[1], it[2]) is not None), None)
    cursor = (
        _SmallCursor(metrics, ends)
        if len(metrics) <= SMALL_CURSOR_ROWS
        else _MetricsCursor(iter([(metrics, ends)]))
    )
    rows, values = next(_row_frames(items, cursor, first, conn.start, trace_id, report, raw=True))
    return rows, values


def _start_state(first: tuple | None, start: float) -> str | None:
    """The raw state a connection is in from its first event (time ``start``) on, where the
    first item that makes a state row (``first``) is a congestion_state_updated after that
    event whose ``old`` names another state than its ``new`` (the ``start=old`` row);
    None otherwise."""
    if first is None or first[1] != _STATE or not start < first[0]:
        return None
    old = first[2].get("old")
    if old is None or isinstance(old, (dict, list)) or str(old) in ("", _new_state(first[2])):
        return None
    return str(old)


def _row_frames(
    items: Iterable[tuple],
    cursor: _MetricsCursor | _SmallCursor,
    first: tuple | None,
    start: float,
    trace_id: str,
    report: _Report,
    slice_rows: int | None = None,
    raw: bool = False,
) -> Iterator[Any]:
    """The rows of one connection from its congestion ``items`` ``(time s, code, data,
    line, index, seq)`` in (time, seq) order and its metrics updates (``cursor``), walked
    forward together: frames of columns time, seq, kind, state, line, fields, mark and the
    metric columns, in (time, seq) order after the ``start=old`` row, each at most
    ``slice_rows`` rows (None: one frame). ``first`` is the first item that makes a state
    row (:func:`_item_state`) and ``start`` the time of the connection's first event,
    both decided over the whole connection.

    Besides the logged states: the first state event's ``old`` is the state from the
    connection's first event on (``start=old`` in ``fields``); a fired PTO timer enters
    ``ProbeTimeout`` until the next metrics update or state event (quic-go logs metrics on
    each ACK, RFC 9002 section 6.2: a PTO lasts until an acknowledgement; where the
    metrics log ``pto_count``, the next update that logs it back at 0), then the
    controller's state again (``after=pto``). Each row carries the latest value of each
    metric logged at or before it (log order among equal times; an mvfst event's own
    metrics come before its state).
    """
    keys = ("time", "seq", "kind", "state", "line", "fields", "mark")
    rows: dict[str, list] = {k: [] for k in keys}
    carried = array("d")  # the metric values carried onto each row, flat
    made = False

    def add(time, seq, kind, name, line, fields, mark=False):
        rows["mark"].append(mark)  # a state the file marks outside congestion_state_updated
        rows["time"].append(time)
        rows["seq"].append(seq)
        rows["kind"].append(kind)
        rows["state"].append(name)
        rows["line"].append(line)
        rows["fields"].append(" ".join(f for f in fields if f))
        carried.extend(cursor.values())

    def frame(n: int | None = None) -> Any:
        """The first ``n`` rows held (None: all) as a frame, let go; ``raw`` (one frame,
        ``n`` None): the row lists and the carried metrics as a (rows, columns) array."""
        if raw:
            return rows, np.array(carried).reshape(-1, len(_METRIC_COLUMNS))
        out = pd.DataFrame({k: v[:n] for k, v in rows.items()})
        width = len(_METRIC_COLUMNS)
        values = np.array(carried[: None if n is None else n * width]).reshape(-1, width)
        for k, column in enumerate(_METRIC_COLUMNS):
            out[column] = values[:, k].copy()
        out["line"] = out["line"].astype("int64")
        out["mark"] = out["mark"].astype(bool)
        for held in rows.values():
            del held[:n]
        del carried[: None if n is None else n * width]
        return out

    def resume_after_pto(update: np.ndarray, state: str) -> None:
        """The controller's ``state`` again at metrics ``update`` (the ACK ending a PTO)."""
        fields = (f"raw={_token(state)}", "after=pto")
        add(update[0], update[1], "state", state, int(update[2]), fields, mark=True)

    old = _start_state(first, start)
    if old is not None and first is not None:
        _, _, _, line, index, _ = first
        add(start, -1, "state", old, line, (f"raw={_token(old)}", "start=old", f"ev={index}"))
    controller: str | None = None  # the controller's own last state (raw name)
    app_limited = False
    pto = False  # a fired PTO waits for the metrics update that ends it
    for time, code, data, line, index, seq in items:
        while slice_rows is not None and len(rows["time"]) >= slice_rows:
            made = True
            yield frame(slice_rows)
        ev = f"ev={index}"
        if pto:
            update = cursor.advance(time, seq, until_end=True)
            if update is not None:
                if controller is not None:
                    resume_after_pto(update, controller)
                pto = False
            elif code == _STATE:
                pto = False  # the controller's own state event ends it
        cursor.advance(time, seq)
        if code == _STATE:
            new = _new_state(data)
            if new is None:
                report.warn(
                    line,
                    f"trace {trace_id} event {index}: congestion_state_updated without 'new'; skipped",
                )
                continue
            old = data.get("old")
            if (
                controller is not None
                and old is not None
                and not isinstance(old, (dict, list))
                and str(old) not in ("", controller)
            ):
                report.warn(
                    line,
                    f"trace {trace_id} event {index}: 'old' is {str(old)!r} but the previous "
                    f"state event entered {controller!r}; kept the logged 'new'",
                    kind="old chain",
                )
            fields: tuple[str, ...] = (
                f"raw={_token(new)}",
                _field("old", old),
                _field("trigger", data.get("trigger")),
                _field("cc_param", data.get("cc_param")),
                ev,
            )
            add(time, seq, "state", new, line, fields)
            controller, app_limited = new, False
        elif code == _MVFST:
            state = data.get("state")
            if isinstance(state, str) and state and state != controller:
                fields = (
                    f"raw={_token(state)}",
                    _field("trigger", data.get("congestion_event")),
                    ev,
                )
                add(time, seq, "state", state, line, fields)
                controller, app_limited = state, False
        elif code in (_APP_LIMITED, _CHROMIUM_AL):
            limited = True if code == _CHROMIUM_AL else _app_limited(data.get("app_limited"))
            if limited is None:
                report.warn(
                    line,
                    f"trace {trace_id} event {index}: app_limited value {data.get('app_limited')!r} "
                    "not understood; skipped",
                    kind="app_limited value",
                )
            elif limited and not app_limited:
                add(time, seq, "state", "app_limited", line, ("raw=app_limited", ev), mark=True)
                app_limited = True
            elif not limited and app_limited:
                app_limited = False
                if controller is None:
                    report.warn(
                        line,
                        f"trace {trace_id}: app-limited period ends, but the state before it is unknown",
                        kind="app_limited end",
                    )
                else:
                    add(
                        time,
                        seq,
                        "state",
                        controller,
                        line,
                        (f"raw={_token(controller)}", "after=app_limited", ev),
                        mark=True,
                    )
        elif code == _LOSS:
            trigger = data.get("trigger")
            rule = None if trigger is None else _LOSS_RULES.get(str(trigger).lower(), trigger)
            add(
                time,
                seq,
                "event",
                "LossDetected",
                line,
                (_field("rule", rule), _field("pn", _packet_number(data)), ev),
            )
        elif code == _SPURIOUS:
            add(time, seq, "event", "SpuriousLoss", line, (_field("pn", _packet_number(data)), ev))
        elif code == _TIMER and _pto_fired(data):
            name = _pto_state(data)
            space = "space=handshake" if name == "Handshake" else ""
            add(time, seq, "state", name, line, ("raw=pto_expired", space, ev), mark=True)
            pto = True
    if pto and controller is not None:
        update = cursor.advance(math.inf, math.inf, until_end=True)
        if update is not None:
            resume_after_pto(update, controller)
    while slice_rows is not None and len(rows["time"]) > slice_rows:
        yield frame(slice_rows)
    if rows["time"] or not made:
        yield frame()


def _canonical_states(
    frame: pd.DataFrame,
    implementation: str | None,
    overrides: Mapping[str, str] | None,
    trace_id: str,
    report: _Report,
) -> pd.DataFrame:
    """Rename raw state names to statemine's (the raw name stays in ``fields`` as ``raw=``),
    with a warning for each unknown name."""
    frame, unknown = _renamed(frame, implementation, overrides)
    _warn_unknown(unknown, implementation, trace_id, report)
    return frame


def _renamed(
    frame: pd.DataFrame, implementation: str | None, overrides: Mapping[str, str] | None
) -> tuple[pd.DataFrame, Counter]:
    """``frame`` with raw state names renamed to statemine's, and how often each name no
    table knows is kept as is (in order of first appearance)."""
    is_state = frame["kind"] == "state"
    raw = frame.loc[is_state, "state"]
    mapping = {}
    unknown: Counter = Counter()
    for name in pd.unique(raw):
        canonical, known = resolve_state(name, implementation, overrides)
        mapping[name] = canonical
        if not known:
            unknown[name] = int((raw == name).sum())
    frame.loc[is_state, "state"] = raw.map(mapping)
    if implementation in PICOQUIC_BBR_PHASES:  # the phase and flags of a packed number
        extra = {name: picoquic_bbr_fields(name, implementation) for name in pd.unique(raw)}
        frame.loc[is_state, "fields"] = frame.loc[is_state, "fields"] + raw.map(extra)
    return frame, unknown


def _warn_unknown(
    unknown: Counter, implementation: str | None, trace_id: str, report: _Report
) -> None:
    """One warning per raw state name no table knows (``unknown``: name -> rows)."""
    table = (
        f"the {implementation} table" if implementation_key(implementation) else "the common names"
    )
    for name, times in unknown.items():
        report.warn(
            None,
            f"trace {trace_id}: state name {name!r} is in neither {table} nor the overrides; "
            f"kept as is ({times} times)"
            + (
                "; a number names a state only in its implementation's table: give "
                "--implementation (e.g. picoquic-newreno, picoquic-cubic) or --names FILE"
                if str(name).strip().isdigit()
                else ""
            ),
        )


def _connection_events(
    conn: _Connection,
    trace_id: str,
    overrides: Mapping[str, str] | None,
    derive: bool,
    report: _Report,
) -> tuple[pd.DataFrame | None, bool]:
    """The events frame of one connection and whether its states are derived; None if it has none."""
    if not conn.items and not conn.metrics:
        report.warn(None, f"trace {trace_id}: no congestion events at all; left out")
        return None, False
    frame = _connection_rows(conn, trace_id, report)
    has_states = ((frame["kind"] == "state") & ~frame["mark"]).any()
    if has_states:
        if (
            conn.labels["implementation"] is None
        ):  # no name in titles: the state vocabulary may tell
            conn.labels["implementation"] = detect_by_names(
                pd.unique(frame.loc[frame["kind"] == "state", "state"])
            )
        if implementation_key(conn.labels["implementation"]) == "picoquic":
            conn.labels["implementation"] = _picoquic_table(conn, trace_id, report)
        frame = _canonical_states(frame, conn.labels["implementation"], overrides, trace_id, report)
    elif derive:
        frames = list(
            _derived_frames(conn, _SLICE_ROWS, iter([frame]), trace_id, overrides, report)
        )
        if not frames:
            return None, False
        return pd.concat(frames, ignore_index=True), True
    else:
        n_metrics = len(conn.metric_rows())
        report.warn(
            None,
            f"trace {trace_id}: no congestion_state_updated events (only {n_metrics} metrics updates); "
            "left out. Pass derive_states=True to derive states from cwnd/ssthresh",
        )
        return None, False
    return frame.drop(columns="mark"), False


def _picoquic_table(conn: _Connection, trace_id: str, report: _Report) -> str:
    """The picoquic controller table for a connection (statenames.picoquic_controller), with
    a warning that says which one was chosen and why (and how to choose another). Chosen
    from its summary (the distinct state values, and whether a state-1 event's cc_param
    is the window logged after it, :class:`.connections._Summary`), so a spilled connection
    needs no second pass; the choice depends on nothing else."""
    summary = conn.summary
    changes: list[tuple[object, float, float]] = [
        (value, math.nan, math.nan) for value in sorted(summary.state_values)
    ]
    if summary.window_hint:  # a state-1 change whose cc_param is the window logged after it
        changes.append(("1", 1.0, 1.0))
    table, reason, ambiguous = picoquic_controller(changes)
    others = ", ".join(t for t in PICOQUIC_TABLES if t != table)
    if ambiguous:
        report.warn(
            None,
            f"trace {trace_id}: picoquic's state numbers depend on its congestion controller, "
            f"which the file does not name; the meaning is ambiguous ({reason}): read as {table}. "
            f"Choose with --implementation ({table}, {others})",
        )
    else:
        report.warn(
            None,
            f"trace {trace_id}: picoquic's controller read as {table} ({reason}); "
            f"another can be forced with --implementation ({others})",
        )
    return table


def _why_no_states(n_connections: int, n_metrics: int, derive: bool) -> str:
    """The reason a file gave no state row at all (of ``n_connections`` connections with
    ``n_metrics`` metrics updates in all), with what to do about it."""
    if not n_connections:
        return "no congestion state in any trace: the file has no qlog events"
    if n_metrics and not derive:
        return (
            f"no congestion state in any trace: no congestion_state_updated events, only {n_metrics} "
            "metrics updates. Pass derive_states=True (statemine --derive-states) to derive states "
            "from cwnd/ssthresh (marked derived)"
        )
    return (
        "no congestion state in any trace: no congestion_state_updated / CC_STATE_UPDATE / mvfst "
        "congestion_metric_update events" + (" and no cwnd to derive states from" if derive else "")
    )


def _trace_id(source: str, conn: _Connection) -> str:
    """``"<source>#<trace index>"``, with ``/<group_id>`` and ``/path<path_id>`` where the
    qlog trace mixes connections or paths."""
    return (
        f"{source}#{conn.trace_index}"
        + ("" if conn.group is None else f"/{conn.group}")
        + ("" if conn.path is None else f"/path{conn.path}")
    )


def _trace_row(path: Path, trace_id: str, conn: _Connection, derived: bool) -> dict:
    """The traces-frame row of a connection."""
    return {
        "trace": trace_id,
        "source": name_text(str(path)),
        "end": conn.end,
        **conn.labels,
        "file_events": conn.n_events,
        "derived": derived,
    }


def _with_trace(table: pd.DataFrame, trace_id: str) -> pd.DataFrame:
    """``table`` (a connection's metrics) with a first ``trace`` column (categorical)."""
    codes = np.zeros(len(table), np.int8)
    trace = pd.Categorical.from_codes(codes, categories=pd.Index([trace_id]))
    # pandas-stubs' insert() takes no ExtensionArray; pandas does
    table.insert(0, "trace", trace)  # type: ignore[arg-type]
    return table


#: Columns of a connection's events frame, in order (after ``trace``).
_EVENT_COLUMNS = ("time", "kind", "state", "line", "fields", *_METRIC_COLUMNS)


class _Batch:
    """The events of consecutive connections read by :func:`_fast_events`, gathered in
    plain lists and made into one frame (a frame per connection costs milliseconds)."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {k: [] for k in ("trace", *_EVENT_COLUMNS[:5])}
        self.values: list[np.ndarray] = []
        self.seq: list = []  # each row's seq (its order among equal times)
        self.sizes: list[int] = []  # each connection's rows, in order
        self.names: dict[tuple[str | None, str], tuple[str, bool]] = {}  # resolve_state cache

    def frame(self) -> pd.DataFrame | None:
        """The gathered rows as one frame (None: none), let go: each connection's rows in
        (time, seq) order, the connections in the order they were added (one sort for
        all, :func:`batch_order`)."""
        if not self.columns["time"]:
            return None
        out = pd.DataFrame(self.columns)
        out["time"] = out["time"].astype(float)
        out["line"] = out["line"].astype("int64")
        order = batch_order(out["time"].to_numpy(), np.array(self.seq, float), self.sizes)
        values = np.concatenate(self.values)[order]
        out = out.take(order).reset_index(drop=True)
        for k, column in enumerate(_METRIC_COLUMNS):
            out[column] = values[:, k].copy()
        self.columns = {k: [] for k in self.columns}
        self.values, self.seq, self.sizes = [], [], []
        return out


def batch_order(time: np.ndarray, seq: np.ndarray, sizes: list[int]) -> np.ndarray:
    """The row order that sorts each block of rows (``sizes``: the blocks' lengths, in
    order) by (``time`` s, ``seq``), ties in their order, the blocks kept in theirs: equal
    to a stable sort of each block on its own, the results concatenated."""
    block = np.repeat(np.arange(len(sizes)), sizes)
    return np.lexsort((seq, time, block))


def _makes_state(code: int, data: dict) -> bool:
    """Whether an item makes a logged (unmarked) state row: a congestion_state_updated with
    a ``new`` (:func:`_row_frames` skips one without), or mvfst's first state (the first
    always differs from the controller's none)."""
    if code == _STATE:
        return _new_state(data) is not None
    if code == _MVFST:
        state = data.get("state")
        return isinstance(state, str) and bool(state)
    return False


def _fast_events(
    conn: _Connection,
    trace_id: str,
    overrides: Mapping[str, str] | None,
    report: _Report,
    batch: _Batch,
) -> bool | None:
    """A connection with logged states added to ``batch`` as :func:`_connection_events`
    would make its frame: True; None (nothing read, nothing warned) where that path is
    needed: no logged state (left out or derived), or picoquic (its controller table)."""
    if not conn.items and not conn.metrics:
        return None
    if implementation_key(conn.labels["implementation"]) == "picoquic":
        return None
    if not any(_makes_state(code, data) for _, code, data, *_ in conn.items):
        return None
    rows, values = _connection_columns(conn, trace_id, report)
    kind, state = rows["kind"], rows["state"]
    is_state = [k == "state" for k in kind]
    raw_names = list(dict.fromkeys(n for n, s in zip(state, is_state, strict=True) if s))
    if conn.labels["implementation"] is None:
        conn.labels["implementation"] = detect_by_names(raw_names)
    implementation = conn.labels["implementation"]
    mapping: dict[str, str] = {}
    unknown: Counter = Counter()
    for name in raw_names:
        key = (implementation, name)
        if key not in batch.names:
            batch.names[key] = resolve_state(name, implementation, overrides)
        canonical, known = batch.names[key]
        mapping[name] = canonical
        if not known:
            unknown[name] = sum(1 for n, s in zip(state, is_state, strict=True) if s and n == name)
    _warn_unknown(unknown, implementation, trace_id, report)
    # the rows as made; the batch sorts each connection's by (time, seq) once for all
    columns = batch.columns
    columns["trace"].extend([trace_id] * len(kind))
    columns["time"].extend(rows["time"])
    columns["kind"].extend(kind)
    columns["state"].extend([mapping[s] if k else s for s, k in zip(state, is_state, strict=True)])
    columns["line"].extend(rows["line"])
    columns["fields"].extend(rows["fields"])
    batch.seq.extend(rows["seq"])
    batch.sizes.append(len(kind))
    batch.values.append(values)
    return True


def _build(
    path: Path,
    source: str,
    connections: list[_Connection],
    overrides: Mapping[str, str] | None,
    derive: bool,
    report: _Report,
    *,
    allow_empty: bool = False,
) -> TraceSet | None:
    """Assemble the TraceSet of a file from its connections; none with a state row is
    :class:`NoCongestionData`, or None with ``allow_empty``."""
    gather = _Gather(overrides, derive)
    if not gather.add(path, source, connections, report, allow_empty=allow_empty):
        return None
    return gather.trace_set({"warnings": json.dumps(report.finish())})


class _Gather:
    """The traces of one or more qlog files gathered into one TraceSet: state rows in
    plain lists (:class:`_Batch`), metrics updates as their flat arrays, one frame of each
    and one :meth:`TraceSet.from_events` at the end (a frame per file or connection costs
    milliseconds). Equal to the files' trace sets read one by one and concatenated."""

    def __init__(self, overrides: Mapping[str, str] | None, derive: bool) -> None:
        self.overrides, self.derive = overrides, derive
        self.frames: list[pd.DataFrame] = []
        self.batch = _Batch()
        # metrics rows per connection or part: whole (time, seq, line, metric columns)
        # or, from parts, (time, metric columns)
        self.metrics: list[np.ndarray] = []
        self.metric_traces: list[str] = []
        self.rows: list[dict] = []
        self.owner: dict[str, Path] = {}  # trace id -> its file
        self.files: list[tuple[int, int]] = []  # each file's rows of the traces frame

    def add(
        self,
        path: Path,
        source: str,
        connections: Iterable[_Connection],
        report: _Report,
        *,
        allow_empty: bool = False,
    ) -> bool:
        """Add the connections of the file ``path`` (trace ids ``source#...``); whether it
        gave a trace. None with a state row: :class:`NoCongestionData` (nothing added),
        or False with ``allow_empty``. A trace id another file gave: :class:`InputError`."""
        n_rows, n_connections, n_metrics = len(self.rows), 0, 0
        for conn in connections:
            n_connections += 1
            n_metrics += len(conn.metric_rows())
            self.add_connection(path, source, conn, report)
        return self.end_file(path, n_rows, n_connections, n_metrics, allow_empty)

    def end_file(
        self, path: Path, n_rows: int, n_connections: int, n_metrics: int, allow_empty: bool
    ) -> bool:
        """Whether the file ``path`` gave a trace (the traces frame had ``n_rows`` rows
        before it); see :meth:`add`."""
        if len(self.rows) > n_rows:
            self.files.append((n_rows, len(self.rows)))
            return True
        if allow_empty:
            return False
        raise NoCongestionData(path, None, _why_no_states(n_connections, n_metrics, self.derive))

    def add_connection(self, path: Path, source: str, conn: _Connection, report: _Report) -> None:
        """Add a connection held whole (its rows, metrics and traces-frame row)."""
        trace_id = _trace_id(source, conn)
        if _fast_events(conn, trace_id, self.overrides, report, self.batch):
            derived = False
        else:
            events, derived = _connection_events(
                conn, trace_id, self.overrides, self.derive, report
            )
            if events is None:
                return
            self._frame(events, trace_id)
        self._own(trace_id, path)
        if conn.metrics:
            rows = conn.metric_rows()
            if conn.unordered:
                rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
            self.metrics.append(rows)
            self.metric_traces.append(trace_id)
            conn.metrics = array("d")  # the gathered rows hold them now
        self.rows.append(_trace_row(path, trace_id, conn, derived))

    def add_parts(
        self, path: Path, source: str, conn: _Connection, parts: Iterable[TracePart]
    ) -> None:
        """Add a connection built in parts from its spill files (:mod:`.slices`): its
        events frames (``seq`` counted again from their order), its metrics rows and,
        from its first part, its traces-frame row."""
        trace_id = _trace_id(source, conn)
        width = 1 + len(_METRIC_COLUMNS)
        # its metrics rows in one array of the size its summary counted (chunks of their
        # own would stay on the heap beside the joined table: twice the memory at the peak)
        held, filled = np.empty((conn.summary.n_metrics, width)), 0
        for part in parts:
            if part.first:
                self._own(trace_id, path)
                derived = bool(part.traces["derived"].iloc[0])
                self.rows.append(_trace_row(path, trace_id, conn, derived))
            if part.events is not None:
                self._frame(part.events.drop(columns=["trace", "seq"]), trace_id)
            if part.metrics is not None:
                table = part.metrics
                end = filled + len(table)
                if end > len(held):  # more than counted: grow
                    held = np.concatenate([held[:filled], np.empty((end - filled, width))])
                held[filled:end, 0] = table["time"].to_numpy(float)
                for k, name in enumerate(_METRIC_COLUMNS):
                    held[filled:end, 1 + k] = table[name].to_numpy(float)
                filled = end
        if filled:
            self.metrics.append(held if filled == len(held) else held[:filled].copy())
            self.metric_traces.append(trace_id)

    def _frame(self, events: pd.DataFrame, trace_id: str) -> None:
        """Add a connection's events frame (after the gathered rows, in order)."""
        gathered = self.batch.frame()  # the connections before this one, in order
        if gathered is not None:
            self.frames.append(gathered)
        events.insert(0, "trace", trace_id)
        self.frames.append(events)

    def _own(self, trace_id: str, path: Path) -> None:
        """Note that ``trace_id`` comes from ``path``; an id another file gave is an
        :class:`InputError`."""
        other = self.owner.setdefault(trace_id, path)
        if other != path:
            raise InputError(
                path,
                None,
                f"trace {trace_id!r} is also in {other}: a trace id must be unique among "
                "the inputs (the same file given twice, or two files naming different "
                "traces alike)",
            )

    def trace_set(self, meta: Mapping[str, str]) -> TraceSet:
        """The gathered traces as one TraceSet with ``meta`` (at least one trace added)."""
        gathered = self.batch.frame()
        if gathered is not None:
            self.frames.append(gathered)
        events = (
            self.frames[0] if len(self.frames) == 1 else pd.concat(self.frames, ignore_index=True)
        )
        self.frames = []
        traces = _as_joined(pd.DataFrame(self.rows), self.files)
        traces["derived"] = traces["derived"].astype(bool)
        return TraceSet.from_events(events, traces, dict(meta), self._metrics_table())

    def _metrics_table(self) -> pd.DataFrame | None:
        """The gathered metrics updates: ``trace`` (categorical, its names sorted), ``time``
        and the metric columns; a single connection's columns are views of its rows."""
        if not self.metrics:
            return None
        ids = self.metric_traces
        sizes = [len(m) for m in self.metrics]
        width = 1 + len(_METRIC_COLUMNS)
        if len(self.metrics) == 1:  # views of the one connection's rows (no copy)
            rows = self.metrics.pop()
        else:  # filled chunk by chunk, each let go once copied: the rows are held once
            rows = np.empty((sum(sizes), width))
            at = 0
            self.metrics.reverse()
            while self.metrics:
                chunk = self.metrics.pop()
                rows[at : at + len(chunk), 0] = chunk[:, 0]
                rows[at : at + len(chunk), 1:] = chunk[:, -len(_METRIC_COLUMNS) :]
                at += len(chunk)
                del chunk
        names = sorted(set(ids))
        code = {name: k for k, name in enumerate(names)}
        codes = np.repeat(np.array([code[i] for i in ids], np.int32), sizes)
        columns: dict[str, Any] = {
            "trace": pd.Categorical.from_codes(codes, categories=pd.Index(names)),
            "time": rows[:, 0],
        }
        first = rows.shape[1] - len(_METRIC_COLUMNS)  # 3 in a whole connection's rows
        columns.update({name: rows[:, first + k] for k, name in enumerate(_METRIC_COLUMNS)})
        return pd.DataFrame(columns, copy=False)


def _as_joined(traces: pd.DataFrame, files: list[tuple[int, int]]) -> pd.DataFrame:
    """The traces frame of several files (``files``: each one's rows) with the column types
    ``pd.concat`` of their own frames gives: a text column that is all None in one file
    (an object column there) is an object column, None in that file's rows, NaN in the
    others' missing ones (as read one by one, then joined)."""
    if len(files) < 2:
        return traces
    for name in traces.columns:
        column = traces[name]
        if not pd.api.types.is_string_dtype(column.dtype) or column.dtype == object:
            continue
        missing = column.isna().to_numpy()
        empty = [(a, b) for a, b in files if missing[a:b].all()]
        if empty:
            values = np.array(column.astype(object), dtype=object)
            for a, b in empty:
                values[a:b] = None
            traces[name] = pd.Series(values, index=traces.index, dtype=object)
    return traces
