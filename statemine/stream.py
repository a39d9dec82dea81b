"""Streaming statistics of statemine logs: scan, fold into visits and count, block by block.

:func:`summarize_logs` gives the tables of :func:`statemine.summarize` for statemine log
files without building a :class:`~statemine.traces.TraceSet`: each block of lines is
tokenized (:class:`~statemine.parse.statemine_log.LogScan`), its state lines folded into
visits (:class:`~statemine.visitfold.VisitFold`) and counted
(:class:`~statemine.visitstats.VisitStats`), then dropped. Memory holds one block, a few
numbers per distinct (trace, state) and (trace, transition) pair, and the dwell times
(exact up to ``DwellTimes.budget`` visits, then a sketch within 0.1%); it does not grow
with the number of lines per trace. More than ``max_states`` distinct state names (default
:data:`~statemine.visitstats.MAX_STATES`) is an error naming the line that crossed the cap.
``statemine infer`` takes this path for statemine logs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .errors import InputError
from .parse import expand_paths, progress_reporter
from .parse.statemine_log import KINDS, FileEnd, ScannedBlock, no_lines_error, scan_files
from .visitfold import END_RULES, EndRule, VisitFold
from .visitstats import MAX_STATES, VisitStats, check_max_states, too_many_states

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
    max_states: int = MAX_STATES,
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
            scan_files(files, advance),
            collapse_repeats=collapse_repeats,
            end=end,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
            dwell_budget=dwell_budget,
            files=files,
            max_states=max_states,
        )


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
    files: Sequence[Path] | None = None,
    max_states: int = MAX_STATES,
) -> LogSummary:
    """:func:`summarize_logs` of the output of
    :func:`~statemine.parse.statemine_log.scan_files` (which may have started earlier);
    ``files`` are the scanned paths (to name them in errors)."""
    folded = fold_scanned(
        scanned,
        collapse_repeats=collapse_repeats,
        end=end,
        dwell_budget=dwell_budget,
        files=files,
        max_states=max_states,
    )
    states, transitions = folded.stats.tables(
        folded.names, confidence=confidence, n_boot=n_boot, seed=seed
    )
    return LogSummary(states, transitions, folded.n_traces, folded.n_events)


def fold_scanned(
    scanned: Iterable[tuple[int, ScannedBlock | FileEnd]],
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    dwell_budget: int | None = None,
    files: Sequence[Path] | None = None,
    max_states: int = MAX_STATES,
) -> FoldedLogs:
    """Fold scanned blocks into visits and count them (numpy only, no pandas); ``files``
    name the scanned paths in errors, such as more than ``max_states`` state names."""
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    check_max_states(max_states)
    fold = VisitFold(collapse_repeats)
    stats = VisitStats(dwell_budget)
    names: dict[str, int] = {}  # state name -> code
    to_global = np.zeros(
        0, np.int64
    )  # the current file's name codes -> codes of ``names`` (-1: none yet)
    ends: list[np.ndarray] = []
    n_traces = n_events = 0
    state_kind = KINDS.index("state")
    for index, item in scanned:
        if isinstance(item, FileEnd):
            table = item.traces
            if not len(table.conn):
                raise no_lines_error(item.path)
            n_traces += len(table.conn)
            ends.append(
                np.full(len(table.conn), -np.inf)
                if end == "last-state"
                else np.where(np.isnan(table.close_time), table.last_time, table.close_time)
            )
            to_global = np.zeros(0, np.int64)
            del (
                item,
                table,
            )  # the connection names (a str each) are not needed: free them before the last fold
            continue
        if not len(item.time):
            continue
        n_events += len(item.time)
        states = item.kind == state_kind
        local = item.name[states]
        if len(local) and (local.max() >= len(to_global) or (to_global[local] < 0).any()):
            to_global = _state_codes(local, item.names, to_global, names)
            if len(names) > max_states:
                line = _crossing_line(local, to_global, item.line[states], max_states)
                raise InputError(
                    None if files is None else files[index], line, too_many_states(max_states)
                )
        chunk = fold.add(
            item.trace[states].astype(np.int64) + n_traces, to_global[local], item.time[states]
        )
        stats.add(chunk, n_traces + int(item.trace.max()) + 1, len(names))
    stats.add(fold.finish(np.concatenate(ends) if ends else np.zeros(0)), n_traces, len(names))
    return FoldedLogs(stats, sorted(names, key=names.__getitem__), n_traces, n_events)


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


def _crossing_line(
    local: np.ndarray, to_global: np.ndarray, lines: np.ndarray, max_states: int
) -> int:
    """The line of the first state line whose name got code ``max_states`` (the cap's first excess)."""
    return int(lines[np.argmax(to_global[local] == max_states)])
