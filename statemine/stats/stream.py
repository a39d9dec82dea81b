"""Streaming statistics of statemine logs: scan, fold into visits and count, block by block.

:func:`summarize_logs` gives the tables of :func:`statemine.summarize` for statemine log
files without building a :class:`~statemine.traces.TraceSet`: each block of lines is
tokenized (:class:`~statemine.parse.statemine_log.LogScan`), its state lines folded into
visits (:class:`~statemine.stats.visits.VisitFold`) and counted
(:class:`~statemine.stats.partial.VisitStats`), then dropped: the map step of
:mod:`statemine.stats.partial` for one partition (the logs), fed block by block. Memory holds one block, a few
numbers per distinct (trace, state) and (trace, transition) pair, and the dwell times
(exact up to ``DwellTimes.budget`` visits, then a sketch within 0.1%); it does not grow
with the number of lines per trace. More than ``max_states`` distinct state names (default
:data:`~statemine.stats.options.MAX_STATES`) is an error naming the line that crossed the cap.
``statemine infer`` takes this path for statemine logs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..errors import InputError
from ..parse import expand_paths, progress_reporter
from ..parse.statemine_log import KINDS, ScanEnd, ScannedBlock, scan_files
from .options import StatsOptions, too_many_states
from .partial import PartialStats, VisitStats
from .tables import tables
from .visits import VisitFold, trace_ends

if TYPE_CHECKING:
    import pandas as pd


class LogSummary(NamedTuple):
    """The state and transition tables (as :func:`statemine.summarize`), and how many
    traces and lines (events) they come from."""

    states: pd.DataFrame
    transitions: pd.DataFrame
    n_traces: int
    n_events: int


def summarize_logs(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    options: StatsOptions | None = None,
    *,
    progress: bool = False,
    **changes: Any,
) -> LogSummary:
    """:func:`statemine.summarize` of statemine log files (or folders of them), streamed.

    Equal to ``summarize(read(paths), ...)`` (same rules, same bootstrap draws), except that
    past ``dwell_budget`` visits the dwell quantiles come from a sketch (relative error
    below 0.1%; ``states.attrs["dwell_quantiles"]`` says which). Raises
    :class:`InputError` as :func:`statemine.read` does, and when the logs have more than
    ``max_states`` distinct state names.

    >>> import tempfile, pathlib
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "run.log"
    >>> _ = log.write_text("STATEMINE t=0 conn=a state=SlowStart\\nSTATEMINE t=1 conn=a state=Recovery\\n"
    ...                    "STATEMINE t=4 conn=a event=Close\\n")
    >>> summarize_logs(log).states[["state", "time_fraction"]].values.tolist()
    [['Recovery', 0.75], ['SlowStart', 0.25]]
    """
    files = expand_paths(paths)
    with progress_reporter(files, progress) as advance:
        return summarize_scanned(
            scan_files(files, advance), StatsOptions.of(options, **changes), files=files
        )


def summarize_scanned(
    scanned: Iterable[ScannedBlock | ScanEnd],
    options: StatsOptions | None = None,
    *,
    files: Sequence[str | Path] | None = None,
    **changes: Any,
) -> LogSummary:
    """:func:`summarize_logs` of the output of
    :func:`~statemine.parse.statemine_log.scan_files` (which may have started earlier);
    ``files`` are the scanned paths (to name them in errors)."""
    opts = StatsOptions.of(options, **changes)
    partial = fold_scanned(scanned, opts, files=files)
    states, transitions = tables(partial, opts)
    return LogSummary(states, transitions, partial.n_traces, partial.n_events)


def fold_scanned(
    scanned: Iterable[ScannedBlock | ScanEnd],
    options: StatsOptions = StatsOptions(),
    *,
    files: Sequence[str | Path] | None = None,
    part: int = 0,
) -> PartialStats:
    """Fold scanned blocks into visits and count them (numpy only, no pandas): the
    statistics of the logs' traces (numbered ``(part, 0..)`` in the order of the files and
    their connections' first lines); ``files`` name the scanned paths in errors, such as
    more than ``max_states`` state names."""
    fold = VisitFold(options.collapse_repeats)
    stats = VisitStats(options.dwell_budget)
    names: dict[str, int] = {}  # state name -> code
    to_global = np.zeros(0, np.int64)  # name codes -> codes of ``names`` (-1: none yet)
    ends = np.zeros(0)
    n_traces = n_events = 0
    state_kind = KINDS.index("state")
    for item in scanned:
        if isinstance(item, ScanEnd):
            n_traces = len(item.last_time)
            ends = trace_ends(item.close_time, item.last_time, options.end)
            continue
        if not len(item.time):
            continue
        n_events += len(item.time)
        states = item.kind == state_kind
        local = item.name[states]
        if len(local) and (local.max() >= len(to_global) or (to_global[local] < 0).any()):
            to_global = _state_codes(local, item.names, to_global, names)
            if len(names) > options.max_states:
                row = _crossing_row(local, to_global, options.max_states)
                trace = int(item.trace[states][row])
                raise InputError(
                    None if files is None else files[item.file_of(trace)],
                    int(item.line[states][row]),
                    too_many_states(options.max_states),
                )
        chunk = fold.add(item.trace[states].astype(np.int64), to_global[local], item.time[states])
        stats.add(chunk, int(item.trace.max()) + 1, len(names))
    stats.add(fold.finish(ends), n_traces, len(names))
    return stats.partial(sorted(names, key=names.__getitem__), part=part, n_events=n_events)


def _state_codes(
    local: np.ndarray, file_names: list[str], to_global: np.ndarray, names: dict[str, int]
) -> np.ndarray:
    """``to_global`` (a file's name codes -> state codes, -1 for names not seen on a state
    line) extended to the names of the state lines ``local`` (codes into ``file_names``);
    new state names join ``names`` in the order of their first line."""
    to_global = np.r_[to_global, np.full(len(file_names) - len(to_global), -1, np.int64)]
    used, first = np.unique(local, return_index=True)
    new = used[to_global[used] < 0]
    for code in new[np.argsort(first[to_global[used] < 0], kind="stable")]:
        to_global[code] = names.setdefault(file_names[code], len(names))
    return to_global


def _crossing_row(local: np.ndarray, to_global: np.ndarray, max_states: int) -> int:
    """The state line (index into ``local``) whose name got code ``max_states`` first (the
    cap's first excess)."""
    return int(np.argmax(to_global[local] == max_states))
