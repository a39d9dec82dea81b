"""A lab folder's runs read from their logs in one pass (issue 29).

``statemine lab run`` leaves per run ``runs/<run_id>/run.log.gz`` (the stack's statemine
lines, gzipped) and ``traces.parquet`` (the log parsed, trace ids ``<run_id>#<conn>/<role>``,
labelled). Reading 320 small Parquet files costs about 0.6 ms of CPU each (footer, schema,
one zstd page per column); their logs scan in a fraction of that. :func:`read_lab_runs`
scans every run's log with one scanner, takes each run's traces frame (its labels) and
meta from the Parquet footer alone, and builds one set: the same one as
:func:`statemine.traces.load_many` of the ``traces.parquet`` files (frames, dtypes,
categories, meta). Each run's log is checked against its footer (its trace ids, in order,
and its number of rows); a run that differs, a log that is not statemine lines, metrics
rows, or anything else this path does not reproduce makes it return None, and the caller
reads the Parquet files.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .repeats import RUN_LOG, run_id_of

if TYPE_CHECKING:
    from ..traces import SavedHead, TraceSet


def read_lab_runs(paths: Sequence[Path]) -> TraceSet | None:
    """``runs/<run_id>/traces.parquet`` files read from their runs' ``run.log.gz`` and
    footers, as :func:`statemine.traces.load_many` reads them; None when this path cannot
    give exactly that set (then read the files)."""
    from ..traces import EVENT_COLUMNS, read_saved_head

    logs, heads = [], []
    for path in paths:
        run_id = run_id_of(path)
        log = path.parent / RUN_LOG
        if run_id is None:
            return None
        try:
            head = read_saved_head(path)
        except InputError:
            return None
        if head.metrics_columns is not None or head.meta.get("format") != "statemine":
            return None
        if list(head.event_columns[: len(EVENT_COLUMNS)]) != list(EVENT_COLUMNS):
            return None
        logs.append(log)
        heads.append(head)
    if not heads:
        return None
    try:
        return _from_logs(logs, [run_id_of(p) or "" for p in paths], heads)
    except (InputError, ValueError, TypeError, KeyError):
        return None


def _from_logs(logs: list[Path], run_ids: list[str], heads: list[SavedHead]) -> TraceSet | None:
    """The set of the runs' ``logs``, ids and labels from their footers ``heads``; None
    where a log does not match its footer."""
    import pandas as pd

    from ..traces import TraceSet, joined_traces, merge_meta
    from ._linescan import Scanner
    from .statemine_log import _INFO, ScanEnd, _path_of, _Rows, events_frame, scan_files
    from .timerange import MAX_TIME_S

    scanner = Scanner(max_time=MAX_TIME_S)
    rows = _Rows()
    end: ScanEnd | None = None
    for item in scan_files(logs, scanner=scanner):
        if isinstance(item, ScanEnd):
            end = item
        else:
            rows.add(item, functools.partial(_path_of, logs, item))
    assert end is not None  # scan_files ends with one
    conns, roles, info = scanner.traces()
    n_events = np.frombuffer(info, _INFO)["n"]
    starts = np.r_[end.file_starts, len(conns)]
    file_of_trace = np.repeat(np.arange(len(logs)), np.diff(starts))
    ids = [
        f"{run_ids[f]}#{c}" + (f"/{r}" if r is not None else "")
        for f, c, r in zip(file_of_trace.tolist(), conns, roles)
    ]
    for i, head in enumerate(heads):  # the log is the one the footer was made from
        at = head.names.index("trace") if "trace" in head.names else -1
        mine = ids[starts[i] : starts[i + 1]]
        if at < 0 or [row[at] for row in head.rows] != mine:
            return None
        if int(n_events[starts[i] : starts[i + 1]].sum()) != head.num_rows:
            return None
    events = events_frame(rows, scanner.names(), ids, file_of_trace)
    columns = list(dict.fromkeys(c for h in heads for c in h.event_columns))  # as pd.concat
    if set(events.columns) != set(columns):
        return None
    events = events[columns]
    if "fields" in events.columns:  # Parquet's text column comes back as pandas' text
        events["fields"] = events["fields"].astype(pd.StringDtype(na_value=np.nan))
    return TraceSet.from_events(events, joined_traces(heads), merge_meta(h.meta for h in heads))
