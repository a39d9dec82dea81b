"""Streaming statistics of statemine logs: scan, fold into visits and count, block by block.

:func:`summarize_logs` gives the tables of :func:`statemine.summarize` for statemine log
files without building a :class:`~statemine.traces.TraceSet`: each block of lines is
tokenized (:class:`~statemine.parse.statemine_log.LogScan`), its state lines folded into
visits (:class:`~statemine.visitfold.VisitFold`) and counted
(:class:`~statemine.visitstats.VisitStats`), then dropped. Memory holds one block, a few
numbers per trace x state and trace x transition, and the dwell times (exact up to
``DwellTimes.budget`` visits, then a sketch within 0.1%); it does not grow with the
number of lines per trace. ``statemine infer`` takes this path for statemine logs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence

import numpy as np

from .parse import expand_paths, progress_reporter
from .parse.statemine_log import KINDS, FileEnd, ScannedBlock, no_lines_error, scan_files
from .visitfold import END_RULES, EndRule, VisitFold
from .visitstats import VisitStats

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
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
    dwell_budget: int | None = None,
) -> LogSummary:
    """:func:`statemine.summarize` of statemine log files (or folders of them), streamed.

    Equal to ``summarize(read(paths), ...)`` (same rules, same bootstrap draws), except that
    past ``dwell_budget`` visits the dwell quantiles come from a sketch (relative error
    below 0.1%; ``states.attrs["dwell_quantiles"]`` says which). Raises
    :class:`InputError` as :func:`statemine.read` does.

    >>> import tempfile, pathlib
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "run.log"
    >>> _ = log.write_text("STATEMINE t=0 conn=a state=SlowStart\\nSTATEMINE t=1 conn=a state=Recovery\\n"
    ...                    "STATEMINE t=4 conn=a event=Close\\n")
    >>> summarize_logs(log).states[["state", "time_fraction"]].values.tolist()
    [['Recovery', 0.75], ['SlowStart', 0.25]]
    """
    files = expand_paths(paths)
    with progress_reporter(files, progress) as advance:
        return summarize_scanned(scan_files(files, advance), collapse_repeats=collapse_repeats, end=end,
                                 confidence=confidence, n_boot=n_boot, seed=seed, dwell_budget=dwell_budget)


class FoldedLogs(NamedTuple):
    """What :func:`fold_scanned` counted: the statistics, the state names their codes
    index, and how many traces and lines (events) there were."""

    stats: VisitStats
    names: list[str]
    n_traces: int
    n_events: int


def summarize_scanned(
    scanned: Iterable[tuple[int, ScannedBlock | FileEnd]],
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    dwell_budget: int | None = None,
) -> LogSummary:
    """:func:`summarize_logs` of the output of
    :func:`~statemine.parse.statemine_log.scan_files` (which may have started earlier)."""
    folded = fold_scanned(scanned, collapse_repeats=collapse_repeats, end=end, dwell_budget=dwell_budget)
    states, transitions = folded.stats.tables(folded.names, confidence=confidence, n_boot=n_boot, seed=seed)
    return LogSummary(states, transitions, folded.n_traces, folded.n_events)


def fold_scanned(
    scanned: Iterable[tuple[int, ScannedBlock | FileEnd]],
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    dwell_budget: int | None = None,
) -> FoldedLogs:
    """Fold scanned blocks into visits and count them (numpy only, no pandas)."""
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    fold = VisitFold(collapse_repeats)
    stats = VisitStats(dwell_budget)
    names: dict[str, int] = {}
    to_global = np.zeros(0, np.int64)  # the current file's name codes -> codes of ``names``
    ends: list[np.ndarray] = []
    n_traces = n_events = 0
    state_kind = KINDS.index("state")
    for _, item in scanned:
        if isinstance(item, FileEnd):
            table = item.traces
            if not len(table.conn):
                raise no_lines_error(item.path)
            n_traces += len(table.conn)
            ends.append(np.full(len(table.conn), -np.inf) if end == "last-state"
                        else np.where(np.isnan(table.close_time), table.last_time, table.close_time))
            to_global = np.zeros(0, np.int64)
            continue
        if not len(item.time):
            continue
        n_events += len(item.time)
        if item.name.max() >= len(to_global):
            to_global = _name_codes(item.names, names)
        states = item.kind == state_kind
        chunk = fold.add(item.trace[states].astype(np.int64) + n_traces, to_global[item.name[states]],
                         item.time[states])
        stats.add(chunk, n_traces + int(item.trace.max()) + 1, len(names))
    stats.add(fold.finish(np.concatenate(ends) if ends else np.zeros(0)), n_traces, len(names))
    return FoldedLogs(stats, sorted(names, key=names.__getitem__), n_traces, n_events)


def _name_codes(local: list[str], names: dict[str, int]) -> np.ndarray:
    """Global codes of a file's names (``local[i]`` -> code), adding new ones to ``names``."""
    for name in local:
        names.setdefault(name, len(names))
    return np.array([names[name] for name in local], np.int64)
