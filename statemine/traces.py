"""Event traces: the one data structure every parser produces and every analysis reads.

A :class:`TraceSet` holds two tidy pandas DataFrames and a dict of labels. Events are
stored as codes, not objects (issue 17, part 4): text as pandas categoricals, integers as
int32, times as float64.

``events`` — one row per logged line, sorted by ``trace`` then ``seq``:

========  ========  =====  ==============================================================
column    dtype     bytes  meaning
========  ========  =====  ==============================================================
trace     category  1-4    trace id, unique within the set (one connection of one file)
seq       int32     4      0, 1, 2, ... within the trace (log order)
time      float64   8      seconds (any origin); non-decreasing within a trace
kind      category  1      ``"state"`` (entering a state) or ``"event"`` (a point event)
state     category  1-4    the state's name (kind ``state``) or the event's name (``event``)
line      int32     4      1-based line (or record) number in the source file, -1 if none
cwnd      float64   8      optional: congestion window, bytes
inflight  float64   8      optional: bytes in flight, bytes
ssthresh  float64   8      optional: slow-start threshold, bytes
srtt      float64   8      optional: smoothed RTT, seconds
fields    str              optional: other ``key=value`` pairs of the line, space separated
========  ========  =====  ==============================================================

A category column is integer codes (pandas picks int8 up to 127 distinct values, int16 up
to 32767, int32 beyond) into one array of the distinct str values. So the six columns
every set has cost 19 to 22 bytes per event (21 or 22 for fleet data: int16 or int32 trace
codes, fewer than 128 state names) whenever there are at most 32767 distinct state/event
names, any number of traces; plus the distinct values once each. The bound is 24 bytes
except in one corner: more than 32767 distinct names *and* more than 32767 traces (int32
codes for both) cost 25. That is a log with an id in the state field (a new name on
nearly every line), which every analysis refuses past ``max_states``; it is bounded at 25
rather than narrowed (pandas codes are int8, int16 or int32 only, and ``seq``, ``time``
and ``line`` need their widths). An optional
metric column is present only when the source logs that value, 8 bytes per event (the
qlog reader's full-resolution updates are the separate ``metrics`` table below).

A category built from text (:meth:`TraceSet.from_events` converts any text column) has
sorted categories, so grouping by it orders groups as grouping the text would; a parser
that builds codes directly (the statemine-line scanner) keeps its own category order.
Categories may include values no row uses (after :meth:`TraceSet.select`): group with
``observed=True``. A line number or ``seq`` beyond int32 is a ``ValueError``.

``traces`` — one row per trace: ``trace`` (str), ``source`` (file path), ``end``
(float64 seconds: an explicit end of the trace, NaN when the log has none) and any
labels (``conn``, ``role``, ``implementation``, ``version``, ``environment``, ...).

``meta`` — labels for the whole set (str -> str), e.g. ``{"label": "desktop"}``.

``metrics`` — optional (None when the source logs none, e.g. statemine lines): every
metrics update at full resolution, one row each, sorted by ``trace`` then ``time``:
``trace`` (category), ``time`` (seconds, the events' origin), ``cwnd``, ``inflight``,
``ssthresh`` (bytes), ``srtt`` (seconds), ``pacing_rate``, ``bandwidth`` (as logged); NaN
where an update does not log a value. The events carry only the latest values at each
row. Written by the qlog reader; kept by ``select``, ``with_labels`` and ``concat``, and
saved to Parquet (:func:`save`) with the events.

Invariants (checked by :meth:`TraceSet.validate`): every trace of ``events`` has a row
in ``traces``; ``seq`` is 0..n-1 per trace; ``time`` is finite and non-decreasing per
trace.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from .errors import InputError
from .fileio import atomic_path

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

#: Columns every events frame has, in this order.
EVENT_COLUMNS = ("trace", "seq", "time", "kind", "state", "line")
#: Optional numeric columns and their units.
NUMERIC_FIELDS = {"cwnd": "bytes", "inflight": "bytes", "ssthresh": "bytes", "srtt": "seconds"}
#: Columns every traces frame has.
TRACE_COLUMNS = ("trace", "source", "end")

_PARQUET_META_KEY = b"statemine"
#: 1: events only; 2: also rows of kind ``METRICS_KIND`` (the metrics table).
_FORMAT_VERSION = 2
#: ``kind`` of the Parquet rows that hold ``TraceSet.metrics`` (never an events kind).
METRICS_KIND = "metrics"
_INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True)
class TraceSet:
    """Traces of one or more logs: ``events`` + per-trace ``traces`` + set ``meta``."""

    events: pd.DataFrame
    traces: pd.DataFrame
    meta: dict = field(default_factory=dict)
    metrics: pd.DataFrame | None = None

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_events(
        cls,
        events: pd.DataFrame,
        traces: pd.DataFrame | None = None,
        meta: Mapping[str, str] | None = None,
        metrics: pd.DataFrame | None = None,
    ) -> TraceSet:
        """Build a set from an events frame, filling defaults and checking invariants.

        ``events`` needs at least ``trace``, ``time`` and ``state``; ``seq`` is derived
        from row order when absent, ``kind`` defaults to ``"state"`` and ``line`` to -1.

        >>> ts = TraceSet.from_events(pd.DataFrame(
        ...     {"trace": ["a", "a"], "time": [0.0, 1.5], "state": ["SlowStart", "Recovery"]}))
        >>> ts.events["seq"].tolist(), ts.n_traces
        ([0, 1], 1)
        """
        ev = events.copy(deep=False)  # columns are replaced whole below, never written into
        for col in ("trace", "time", "state"):
            if col not in ev.columns:
                raise ValueError(f"events frame lacks the column {col!r}")
        if "kind" not in ev.columns:
            ev["kind"] = pd.Categorical.from_codes(
                np.zeros(len(ev), np.int8), categories=pd.Index(["state"], dtype=str)
            )
        for col in ("trace", "state", "kind"):
            ev[col] = _as_codes(ev[col])
        if "line" not in ev.columns:
            ev["line"] = np.full(len(ev), -1, np.int32)
        ev["time"] = ev["time"].astype("float64")
        ev["line"] = _as_int32(ev["line"], "line number")
        for name in NUMERIC_FIELDS:
            if name in ev.columns:
                ev[name] = pd.to_numeric(ev[name], errors="coerce").astype("float64")
        if "seq" not in ev.columns:
            ev = ev.reset_index(drop=True)
            ev["seq"] = ev.groupby("trace", sort=False, observed=True).cumcount()
        ev["seq"] = _as_int32(ev["seq"], "seq (events in one trace)")
        if not _in_trace_order(_trace_codes(ev), ev["seq"].to_numpy()):
            ev = ev.sort_values(["trace", "seq"], kind="stable").reset_index(drop=True)
        ordered = list(EVENT_COLUMNS) + [c for c in ev.columns if c not in EVENT_COLUMNS]
        ev = ev[ordered]

        ids = pd.unique(ev["trace"])
        if traces is None:
            tr = _trace_rows(pd.DataFrame({"trace": ids}), text=False)
        else:
            tr = _trace_rows(traces)
        ts = cls(events=ev, traces=tr, meta=dict(meta or {}), metrics=metrics)
        ts.validate()
        return ts

    # -- properties ---------------------------------------------------------------------
    @property
    def n_traces(self) -> int:
        """Number of traces (rows of ``traces``)."""
        return len(self.traces)

    @property
    def states(self) -> pd.DataFrame:
        """The rows of ``events`` whose kind is ``state`` (a view for statistics)."""
        return self.events[self.events["kind"] == "state"]

    def validate(self) -> None:
        """Raise ``ValueError`` if an invariant of the module docstring is broken."""
        ev = self.events
        missing = [c for c in EVENT_COLUMNS if c not in ev.columns]
        if missing:
            raise ValueError(f"events frame lacks columns {missing}")
        if not np.isfinite(ev["time"].to_numpy()).all():
            raise ValueError("events frame has a non-finite time")
        known = set(self.traces["trace"])
        unknown = set(pd.unique(ev["trace"])) - known
        if unknown:
            raise ValueError(f"traces {sorted(unknown)[:5]} have no row in the traces frame")
        if self.traces["trace"].duplicated().any():
            raise ValueError("the traces frame names a trace twice")
        if len(ev):
            codes = _trace_codes(ev)
            if not _in_trace_order(codes, ev["seq"].to_numpy()):
                raise ValueError("rows must be grouped by trace with seq 0, 1, 2, ... within each")
            same = codes[1:] == codes[:-1]
            if (np.diff(ev["time"].to_numpy())[same] < 0).any():
                raise ValueError("time goes backwards within a trace")

    def select(self, where: Mapping[str, object]) -> TraceSet:
        """The traces whose labels (``traces`` columns) equal ``where``, compared as text.

        A label the traces do not carry matches nothing.

        >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a", "b"], "time": [0.0, 0.0], "state": ["X", "Y"]}),
        ...                           pd.DataFrame({"trace": ["a", "b"], "role": ["server", "client"]}))
        >>> ts.select({"role": "server"}).events["state"].tolist()
        ['X']
        """
        return self.subset(label_mask(self.traces, where))

    def subset(self, mask: np.ndarray) -> TraceSet:
        """The traces where ``mask`` (one bool per ``traces`` row) is True, with their
        events and metrics."""
        keep = self.traces[mask].reset_index(drop=True)
        events = self.events[self.events["trace"].isin(keep["trace"])]  # both text by invariant
        metrics = (
            None
            if self.metrics is None
            else self.metrics[self.metrics["trace"].astype(str).isin(keep["trace"])].reset_index(
                drop=True
            )
        )
        return TraceSet.from_events(events.reset_index(drop=True), keep, self.meta, metrics)

    def with_labels(self, **labels: str) -> TraceSet:
        """A copy whose every trace carries the given labels as ``traces`` columns."""
        tr = self.traces.copy()
        for key, value in labels.items():
            tr[key] = value
        return TraceSet(self.events, tr, {**self.meta, **labels}, self.metrics)


def label_mask(traces: pd.DataFrame, where: Mapping[str, object]) -> np.ndarray:
    """One bool per ``traces`` row: its labels equal ``where`` (:func:`label_equals`); a
    label the traces do not carry matches nothing.

    >>> label_mask(pd.DataFrame({"trace": ["a", "b"], "role": ["server", None]}), {"role": "server"}).tolist()
    [True, False]
    """
    mask = np.ones(len(traces), bool)
    for key, value in where.items():
        if key not in traces.columns:
            return np.zeros(len(traces), bool)
        mask &= label_equals(traces[key], value)
    return mask


def label_equals(column: pd.Series, value: object) -> np.ndarray:
    """One bool per row of ``column``: equal to ``value`` as text, or as numbers when both
    read as numbers (so ``jitter_ms=10`` selects the label ``10.0`` and ``10.0`` selects
    ``10``); NaN and missing labels equal nothing.

    >>> label_equals(pd.Series(["10.0", "2", "v0.63.0"]), "10").tolist()
    [True, False, False]
    >>> label_equals(pd.Series([36.0, 112.0]), "36").tolist(), label_equals(pd.Series(["v1"]), "v1").tolist()
    ([True, False], [True])
    """
    text = column.astype(str)
    same = (text == str(value)).to_numpy() & column.notna().to_numpy()
    target = pd.to_numeric(pd.Series([str(value)]), errors="coerce").iloc[0]
    if pd.isna(target):
        return same
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    return same | (numbers == float(target))


def _as_codes(column: pd.Series) -> pd.Series:
    """A text column as a categorical one (codes + str categories): a categorical column
    keeps its codes and category order (its categories made str); anything else is made
    str and coded against its sorted distinct values (so grouping by the codes orders the
    groups as grouping the text would)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = column.cat.categories
        if cats.dtype == object or not pd.api.types.is_string_dtype(cats.dtype):
            return column.cat.rename_categories(cats.astype(str).tolist())
        return column
    return column.astype(str).astype("category")


def categorical(codes: np.ndarray, names: Sequence[str]) -> pd.Categorical[str]:
    """Integer ``codes`` into distinct ``names`` as the categorical :meth:`TraceSet.from_events`
    would make of the text (sorted categories), without making the text.

    >>> categorical(np.array([0, 1, 0]), ["b", "a"]).codes.tolist()
    [1, 0, 1]
    """
    index = pd.Index(names, dtype=str)
    cats, order = index.sort_values(return_indexer=True)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return pd.Categorical.from_codes(rank[codes], categories=cats)


def _as_int32(column: pd.Series, what: str) -> pd.Series:
    """An integer column as int32, or a ``ValueError`` if a value does not fit."""
    if column.dtype == np.int32:
        return column
    values = column.to_numpy()
    if values.dtype.kind not in "iu":
        values = np.asarray(values, dtype=np.float64)
        if not (np.isfinite(values) & (values == np.round(values))).all():
            raise ValueError(f"{what} is not a whole number")
    if len(values) and (values.max() > _INT32_MAX or values.min() < -1):
        raise ValueError(f"{what} out of range: -1 .. {_INT32_MAX}")
    return pd.Series(values.astype(np.int32), index=column.index, name=column.name)


def _trace_codes(events: pd.DataFrame) -> np.ndarray:
    """Integer codes of ``events["trace"]`` (equal codes = same trace)."""
    trace = events["trace"]
    if isinstance(trace.dtype, pd.CategoricalDtype):
        return trace.cat.codes.to_numpy()
    return pd.factorize(trace, sort=False)[0]


def _in_trace_order(codes: np.ndarray, seq: np.ndarray) -> bool:
    """True when each trace's rows (equal ``codes``) are contiguous with ``seq`` 0, 1, 2, ..."""
    if not len(codes):
        return True
    same = codes[1:] == codes[:-1]
    runs = int((~same).sum()) + 1
    return (
        runs == len(np.unique(codes))
        and not (seq[np.r_[True, ~same]] != 0).any()
        and not (np.diff(seq)[same] != 1).any()
    )


def concat(sets: Iterable[TraceSet], meta: Mapping[str, str] | None = None) -> TraceSet:
    """Join trace sets into one; trace ids must not collide (a ``ValueError`` if they do)."""
    sets = list(sets)
    if not sets:
        raise ValueError("no trace sets to join")
    events = pd.concat([s.events for s in sets], ignore_index=True)
    traces = pd.concat([s.traces for s in sets], ignore_index=True)
    parts = [s.metrics.astype({"trace": str}) for s in sets if s.metrics is not None]
    metrics = pd.concat(parts, ignore_index=True).astype({"trace": "category"}) if parts else None
    return TraceSet.from_events(
        events, traces, meta if meta is not None else merge_meta(s.meta for s in sets), metrics
    )


def merge_meta(metas: Iterable[Mapping[str, str]]) -> dict:
    """Join sets' labels: later values win, except ``warnings`` (JSON lists), which add up.

    >>> merge_meta([{"warnings": '["a"]', "x": "1"}, {"warnings": '["b"]', "x": "2"}])
    {'warnings': '["a", "b"]', 'x': '2'}
    """
    merged: dict = {}
    warnings: list[str] = []
    for meta in metas:
        for key, value in meta.items():
            if key == "warnings":
                warnings.extend(json.loads(value) if isinstance(value, str) else list(value))
            else:
                merged[key] = value
    if warnings:
        merged = {"warnings": json.dumps(warnings), **merged}
    return merged


# -- Parquet ---------------------------------------------------------------------------
def save(ts: TraceSet, path: str | os.PathLike) -> Path:
    """Write ``ts`` to one Parquet file (events as rows; traces and meta in its metadata).

    ``ts.metrics`` (if any) is stored in the same file as rows of kind ``METRICS_KIND``
    (the columns an events row lacks are null), and split off again by :func:`load`. The
    file is written to a temporary name beside ``path`` and renamed, so a failed write
    leaves no partial file.
    """
    import pyarrow.parquet as pq

    path = Path(path)
    table = saved_table(ts)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path


def saved_table(ts: TraceSet, more_meta: Mapping[bytes, bytes] | None = None) -> pa.Table:
    """The Arrow table :func:`save` writes of ``ts``; ``more_meta``: other schema metadata
    entries stored beside the statemine one (their keys must differ from it)."""
    import pyarrow as pa

    events = ts.events
    if ts.metrics is not None:  # one schema for both kinds of rows: categories as plain text
        events = events.astype(
            {c: str for c in events.columns if isinstance(events[c].dtype, pd.CategoricalDtype)}
        )
    table = pa.Table.from_pandas(events, preserve_index=False)
    extra = {
        "format_version": _FORMAT_VERSION,
        "traces": json.loads(ts.traces.to_json(orient="split", index=False)),
        "meta": ts.meta,
        "event_columns": list(ts.events.columns),
        "metrics_columns": None if ts.metrics is None else list(ts.metrics.columns),
    }
    if ts.metrics is not None:
        metrics = ts.metrics.assign(trace=ts.metrics["trace"].astype(str), kind=METRICS_KIND)
        rows = pa.Table.from_pandas(metrics, preserve_index=False)
        table = pa.concat_tables([table, rows], promote_options="permissive")
    schema_meta = dict(table.schema.metadata or {})
    if more_meta and _PARQUET_META_KEY in more_meta:
        raise ValueError("more_meta would replace the statemine metadata")
    schema_meta.update(more_meta or {})
    schema_meta[_PARQUET_META_KEY] = json.dumps(extra).encode()
    return table.replace_schema_metadata(schema_meta)


def load(path: str | os.PathLike, file: pq.ParquetFile | None = None) -> TraceSet:
    """Read a trace set written by :func:`save`; raises :class:`InputError` if it is not one.
    ``file``: ``path`` opened already (its rows are read from it)."""
    path = Path(path)
    part = _read_saved(path, file)
    try:
        traces = part.traces
    except (ValueError, TypeError) as exc:
        raise InputError(path, None, f"damaged statemine metadata: {exc}") from None
    try:
        events, metrics = _split_metrics(part.table, part.event_columns, part.metrics_columns)
        return TraceSet.from_events(events, traces, part.meta, metrics)
    except ValueError as exc:
        raise InputError(path, None, f"invalid trace set: {exc}") from None


@dataclass(frozen=True)
class _Saved:
    """One file written by :func:`save`, read but not yet converted to pandas."""

    table: pa.Table
    #: the traces frame as saved: its rows (lists of JSON values) and column names
    rows: list
    names: list

    @property
    def traces(self) -> pd.DataFrame:
        """The traces frame as saved."""
        return pd.DataFrame(self.rows, columns=self.names)

    meta: dict
    event_columns: list
    metrics_columns: list | None


def _read_saved(path: Path, file: pq.ParquetFile | None = None) -> _Saved:
    """The Parquet table and statemine metadata of ``path`` (read from ``file`` when it is
    given: ``path`` opened already); :class:`InputError` if it is not a readable
    statemine trace set."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # one file: ParquetFile reads it without pq.read_table's dataset set-up
        table = (file if file is not None else pq.ParquetFile(path)).read(use_threads=False)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    head = _saved_head(path, table.schema.metadata, lambda: table.column_names, table.num_rows)
    return _Saved(table, head.rows, head.names, head.meta, head.event_columns, head.metrics_columns)


class SavedHead(NamedTuple):
    """What the footer of a file written by :func:`save` says, without its rows: the
    traces frame's ``rows`` and column ``names``, ``meta``, the events' columns, the
    metrics' columns (None: no metrics), and ``num_rows`` (rows of the file)."""

    rows: list
    names: list
    meta: dict
    event_columns: list
    metrics_columns: list | None
    num_rows: int

    @property
    def traces(self) -> pd.DataFrame:
        """The traces frame as saved."""
        return pd.DataFrame(self.rows, columns=self.names)


def read_saved_head(path: Path) -> SavedHead:
    """The footer of a file written by :func:`save` (its rows are not read);
    :class:`InputError` if it is not a readable statemine trace set."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        footer = pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(path, None, f"not a readable Parquet file: {exc}") from None
    return _saved_head(
        path,
        footer.metadata,
        lambda: [footer.schema.column(i).name for i in range(footer.num_columns)],
        footer.num_rows,
    )


def saved_head_of(path: str | Path, value: bytes, num_rows: int, columns: list) -> SavedHead:
    """The footer of a file written by :func:`save` from its statemine metadata ``value``
    (the raw bytes :func:`read_saved_head` gets from Arrow), its ``num_rows`` and its
    ``columns``' names; :class:`InputError` as :func:`read_saved_head`."""
    return _saved_head(path, {_PARQUET_META_KEY: value}, lambda: list(columns), num_rows)


def _saved_head(
    path: str | Path, metadata: dict | None, columns: Callable[[], list], num_rows: int
) -> SavedHead:
    """The statemine metadata of a saved file (schema ``metadata``; ``columns()``: its
    columns, asked for when the metadata does not list them)."""
    raw = (metadata or {}).get(_PARQUET_META_KEY)
    if raw is None:
        raise InputError(path, None, "a Parquet file, but not a statemine trace set")
    try:
        extra = loads_json(raw)
        split = extra["traces"]
        rows, names = list(split["data"]), list(split["columns"])
        meta = dict(extra.get("meta") or {})
        version = int(extra.get("format_version", 1))
        event_columns = extra.get("event_columns") or columns()
        metrics_columns = extra.get("metrics_columns")
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(path, None, f"damaged statemine metadata: {exc}") from None
    if version > _FORMAT_VERSION:
        raise InputError(path, None, f"written by a newer statemine (format {version})")
    return SavedHead(rows, names, meta, list(event_columns), metrics_columns, num_rows)


#: Every digit made ``0``, every other byte a blank: then 19 digits in a row (maybe an
#: integer beyond 64 bits, which orjson makes a float) are one ``in`` (a regex: 10x slower).
_DIGITS_ONLY = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
_LONG_DIGITS = b"0" * 19


def loads_json(raw: bytes) -> Any:
    """``json.loads(raw)``, parsed by orjson (3-4 times faster) where that gives the same
    value: not when ``raw`` holds 19 digits in a row (an integer orjson would make a
    float), nor what orjson refuses (NaN, 1e400, lone surrogates, a byte-order mark, not
    UTF-8), which json parses (or refuses) as before.

    >>> loads_json(b'[1, 2.5, "x", NaN, 123456789012345678901234]')
    [1, 2.5, 'x', nan, 123456789012345678901234]
    """
    if _LONG_DIGITS not in raw.translate(_DIGITS_ONLY):
        try:
            return _orjson().loads(raw)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return json.loads(raw)


@functools.cache
def _orjson() -> ModuleType:
    """orjson, imported on first use (importing traces does not load it)."""
    import orjson

    return orjson


#: The columns :meth:`TraceSet.from_events` makes categorical.
_CODED = ("trace", "state", "kind")


def load_many(paths: Sequence[str | os.PathLike]) -> TraceSet | None:
    """The files written by :func:`save` joined in order, as ``concat(map(load, paths))``
    would make them (equal frames, dtypes, categories, meta), but read as one Arrow table:
    one conversion to pandas and one validation instead of one per file (issue 29: a lab
    folder's per-run caches).

    Returns None when the files are not in the simple shape this path reproduces exactly
    (metrics rows, columns of different types, a file lacking a column other than a float
    or text one, null codes, several dictionaries in one column, a trace id in two files,
    a file out of trace order, an invalid set): read them
    one by one then, which names the offending file. Raises :class:`InputError` for a
    file that is not a statemine trace set, as :func:`load` does.
    """
    import pyarrow as pa

    parts = [_read_saved(Path(p)) for p in paths]
    if not parts or any(p.metrics_columns is not None for p in parts):
        return None
    columns = list(dict.fromkeys(c for p in parts for c in p.event_columns))  # as pd.concat
    if not {*_CODED, "seq"} <= set(columns):
        return None
    types = _fill_types(parts, columns)
    tables: list[pa.Table] = []
    cats: dict[str, list[list[str]]] = {c: [] for c in _CODED}
    for part in parts:
        table = _events_table(part, columns, types)
        if table is None:
            return None
        for name in _CODED:
            cats[name].append(_file_categories(part.table[name]))
        tables.append(table)
    if any(t.schema != tables[0].schema for t in tables):
        return None
    events = pa.concat_tables(tables).to_pandas()
    for name in _CODED:
        order = _joined_categories(cats[name])
        if order is not None:
            events[name] = pd.Categorical(events[name], categories=pd.Index(order, dtype=str))
    # a file out of trace order is sorted within itself by load, but would be across files
    # here; a trace in two files is refused by the reader naming both
    codes = pd.factorize(events["trace"], sort=False)[0]
    if not _in_trace_order(codes, events["seq"].to_numpy()):
        return None
    try:  # damaged metadata or an invalid set: load names the file
        joined = joined_traces(parts)
        return TraceSet.from_events(events, joined, merge_meta(p.meta for p in parts))
    except (ValueError, TypeError):
        return None


def _fill_types(parts: Sequence[_Saved], columns: list[str]) -> dict[str, pa.DataType]:
    """Per column some file has, its type there (text for a coded one): the type of the
    nulls given to the files without it."""
    import pyarrow as pa

    types: dict[str, pa.DataType] = {}
    for part in parts:
        for name in part.event_columns:
            if name not in types:
                kind = part.table.schema.field(name).type
                types[name] = kind.value_type if pa.types.is_dictionary(kind) else kind
        if len(types) == len(columns):
            break
    return types


def _events_table(part: _Saved, columns: list[str], types: dict) -> pa.Table | None:
    """A file's events rows with ``columns``, in that order: coded columns as text, a
    float or text column the file lacks as nulls (NaN, as ``pd.concat`` fills it); None
    if it lacks another column or has null or multi-dictionary codes."""
    import pyarrow as pa

    table = part.table.select(part.event_columns)
    for name in columns:
        if name in part.event_columns:
            continue
        kind = types[name]
        if name in _CODED or not (
            pa.types.is_floating(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)
        ):
            return None
        table = table.append_column(name, pa.nulls(len(table), kind))
    table = table.select(columns)
    for name in _CODED:
        col = table[name]
        if col.null_count or col.num_chunks > 1:
            return None
        if pa.types.is_dictionary(col.type):
            table = table.set_column(columns.index(name), name, col.cast(col.type.value_type))
    return table


def _file_categories(column: pa.ChunkedArray) -> list[str]:
    """The categories :func:`load` gives a coded column of one file: a dictionary's values
    in order, else the sorted distinct text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        return [str(v) for v in column.chunk(0).dictionary.to_pylist()] if column.num_chunks else []
    return sorted(str(v) for v in pc.unique(column).to_pylist())


def _joined_categories(per_file: list[list[str]]) -> list[str] | None:
    """The categories ``pd.concat`` keeps for columns with these categories: the first
    file's when all files have the same set, else None (the column becomes text, which
    :meth:`TraceSet.from_events` codes against its sorted values)."""
    first = set(per_file[0])
    if len(first) != len(per_file[0]) or any(set(c) != first for c in per_file[1:]):
        return None
    return per_file[0]


def joined_traces(parts: Sequence[_Saved | SavedHead]) -> pd.DataFrame:
    """The files' traces frames joined as ``pd.concat`` joins them after :func:`load`: one
    frame from all rows when every file has the same columns and, per column, the same
    kinds of JSON values (so pandas infers the same dtype for each file and for all),
    else frame by frame."""
    names = parts[0].names
    end = names.index("end") if "end" in names else None
    rows = [r for p in parts for r in p.rows]
    if all(p.names == names for p in parts) and (
        _one_kind_each(parts, rows, len(names), end) or _same_kinds(parts, len(names), end)
    ):
        return _trace_rows(pd.DataFrame(rows, columns=names))
    return pd.concat([_trace_rows(p.traces) for p in parts], ignore_index=True)


def _same_kinds(parts: Sequence[_Saved | SavedHead], width: int, end: int | None) -> bool:
    """True when every part's columns hold the same kinds of value (:func:`_value_kinds`)."""
    first = _value_kinds(parts[0].rows, width, end)
    return all(_value_kinds(p.rows, width, end) == first for p in parts[1:])


def _one_kind_each(
    parts: Sequence[_Saved | SavedHead], rows: list, width: int, end: int | None
) -> bool:
    """True when every part has rows and each column of all ``rows`` holds one kind of
    value (:func:`_value_kinds`): then every part has the same kinds, found in one pass."""
    kinds = _value_kinds(rows, width, end)
    return bool(kinds) and all(p.rows for p in parts) and all(len(k) == 1 for k in kinds)


def _value_kinds(rows: list, width: int, end: int | None = None) -> list[frozenset]:
    """Per column of ``rows``: the set of the value types (ints beyond int64 apart); the
    ``end`` column (made float64 whatever pandas infers) as one kind ``number`` when it
    holds only numbers and None."""
    if any(len(row) != width for row in rows):
        return []
    kinds: list[set] = [set() for _ in range(width)]
    for kind, column in zip(kinds, zip(*rows)):  # column by column, at C speed
        kind.update(map(type, column))
        if int in kind:
            ints = [v for v in column if type(v) is int]
            if not -(2**63) <= min(ints) <= max(ints) < 2**63:
                big = sum(not -(2**63) <= v < 2**63 for v in ints)
                kind.add("bigint")
                if big == len(ints):
                    kind.discard(int)
    if end is not None and kinds[end] <= {int, float, type(None)}:
        kinds[end] = {"number"}
    return [frozenset(k) for k in kinds]


def _trace_rows(traces: pd.DataFrame, text: bool = True) -> pd.DataFrame:
    """A copy of a traces frame as :meth:`TraceSet.from_events` keeps it: ``trace`` as
    text (when ``text``), ``source`` and ``end`` (float64 seconds) filled in and first."""
    tr = traces.copy()
    if text:
        tr["trace"] = tr["trace"].astype(str)
    if "source" not in tr.columns:
        tr["source"] = ""
    if "end" not in tr.columns:
        tr["end"] = np.nan
    tr["end"] = tr["end"].astype("float64")
    order = list(TRACE_COLUMNS) + [c for c in tr.columns if c not in TRACE_COLUMNS]
    if list(tr.columns) != order:  # a frame in order is not copied again
        tr = tr[order]
    return tr.reset_index(drop=True)


def _split_metrics(
    table: pa.Table, event_columns: list, metrics_columns: list | None
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The events frame and the metrics table (None if none was saved) of a loaded file."""
    import pyarrow.compute as pc

    if metrics_columns is None:
        return table.select(event_columns).to_pandas(), None
    is_metrics = pc.fill_null(pc.equal(table["kind"], METRICS_KIND), False)
    events = table.filter(pc.invert(is_metrics)).select(event_columns).to_pandas()
    metrics = table.filter(is_metrics).select(metrics_columns).to_pandas()
    return events, metrics.astype({"trace": "category"})


@dataclass(frozen=True)
class TracePart:
    """A consecutive part of a trace set read in pieces (a store appends them one by one).

    ``traces``: the traces-frame rows of the traces this part's rows belong to (the same
    for every part of one trace); ``first``: they begin here (each trace is first in one
    part only); ``events``: events rows (columns as :attr:`TraceSet.events`, ``seq`` counted
    over the whole trace), ``metrics``: rows of the metrics table, each None where the part
    has none. Joined in order (by trace, then seq) the parts are the trace set."""

    traces: pd.DataFrame
    first: bool
    events: pd.DataFrame | None = None
    metrics: pd.DataFrame | None = None

    @classmethod
    def whole(cls, ts: TraceSet) -> TracePart:
        """A trace set as one part."""
        return cls(ts.traces, True, ts.events, ts.metrics)
