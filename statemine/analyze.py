"""Where the time goes: per-state time fractions, dwell times and transition probabilities.

All functions read the ``kind == "state"`` rows of a :class:`~statemine.traces.TraceSet`
(point events never split a state's time) and return tidy DataFrames.

Rules (docs/log-format.md):

* a state lasts from its line to the next state line of the same trace;
* the last state ends at the trace's end: with ``end="close"`` (default) the trace's
  explicit end (``traces.end``, e.g. an ``event=Close`` line) when known, else the time of
  its last line of any kind; with ``end="last-state"`` at its own line (no time);
* ``collapse_repeats=True`` merges a state logged again while already in it into one visit;
* transitions include ``INITIAL -> first state`` and ``last state -> TERMINAL``, and the
  probability of ``a -> b`` is ``count(a -> b) / count(a -> *)`` (Synoptic's definition);
* confidence intervals come from a percentile bootstrap over traces (whole traces are
  resampled with replacement), seeded and reproducible; they are NaN with fewer than two
  traces.

The rules live in :mod:`statemine.visitfold` (lines -> visits) and the counting, tables and
bootstrap in :mod:`statemine.visitstats`; :mod:`statemine.stream` runs the same two over
logs block by block.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .errors import InputError
from .traces import TraceSet
from .visitfold import END_RULES, OUTSIDE, EndRule, VisitChunk, VisitFold, group_order
from .visitstats import (
    INITIAL,
    MAX_STATES,
    TERMINAL,
    VisitStats,
    bootstrap_ratio,
    check_max_states,
    per_trace,
    too_many_states,
)

__all__ = [
    "END_RULES",
    "INITIAL",
    "MAX_STATES",
    "TERMINAL",
    "EndRule",
    "bootstrap_ratio",
    "state_stats",
    "summarize",
    "trace_state_times",
    "transition_stats",
    "visits",
]


def visits(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    max_states: int = MAX_STATES,
) -> pd.DataFrame:
    """One row per state visit: ``trace, visit, state, start, end, duration, next``.

    Times in seconds; ``next`` is the following state of the trace or ``TERMINAL``;
    ``trace``, ``state`` and ``next`` are categoricals.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> visits(ts)[["state", "duration", "next"]].astype(object).values.tolist()
    [['SlowStart', 1.0, 'Recovery'], ['Recovery', 3.0, 'SlowStart'], ['SlowStart', 0.0, 'TERMINAL']]
    """
    return _visits_frame(_coded_visits(traces, collapse_repeats, end, max_states), traces)


def visits_and_transitions(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    max_states: int = MAX_STATES,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(visits(traces), transition_stats(traces, n_boot=0))`` from one fold of the
    events (what :func:`statemine.diff` needs of each side)."""
    names, chunk = _traceset_visits(traces, collapse_repeats, end, max_states)
    frame = _visits_frame(_code_chunk(names, chunk), traces)  # copies: chunk stays intact
    stats = VisitStats()
    stats.add(chunk, traces.n_traces, len(names))
    return frame, stats.tables(names, n_boot=0)[1]


def _visits_frame(c: _CodedVisits, traces: TraceSet) -> pd.DataFrame:
    """The visits table of :func:`visits` from coded visits."""
    trace_ids = pd.Index(traces.traces["trace"].astype(str))
    names = pd.Index([*list(c.names), TERMINAL], dtype=str)
    return pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(c.trace, categories=trace_ids),
            "visit": c.visit,
            "state": pd.Categorical.from_codes(c.state, categories=names),
            "start": c.start,
            "end": c.end,
            "duration": c.end - c.start,
            "next": pd.Categorical.from_codes(c.next, categories=names),
        }
    )


def summarize(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    max_states: int = MAX_STATES,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(state_stats(traces), transition_stats(traces))`` computed together: one pass over
    the visits and one bootstrap, whose resampled trace sets are shared by both tables.

    Memory grows with the distinct (trace, state) and (trace, transition) pairs, not with
    traces x states. More than ``max_states`` distinct state names raise
    :class:`~statemine.errors.InputError` naming the file and line of the first name past
    the cap (in trace order)."""
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    names, chunk = _traceset_visits(traces, collapse_repeats, end, max_states)
    stats = VisitStats()
    stats.add(chunk, traces.n_traces, len(names))
    return stats.tables(names, confidence=confidence, n_boot=n_boot, seed=seed)


def state_stats(traces: TraceSet, **options: Any) -> pd.DataFrame:
    """Per-state statistics, one row per state, sorted by ``time_fraction`` descending.

    Columns: ``state``; ``time_s`` (seconds in the state, all traces); ``time_fraction``
    (pooled: ``time_s`` / total time of all traces); ``time_fraction_lo``/``_hi``
    (bootstrap interval at ``confidence``); ``mean_trace_fraction`` (mean over traces with
    non-zero duration of the trace's own fraction); ``dwell_mean``, ``dwell_median``,
    ``dwell_p95`` (seconds per visit; quantiles interpolate linearly); ``visits``;
    ``traces`` (traces that visit it). ``time_fraction`` sums to 1 whenever any trace
    has non-zero duration. Options as for :func:`summarize`.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> state_stats(ts)[["state", "time_fraction", "visits"]].values.tolist()
    [['Recovery', 0.75, 1], ['SlowStart', 0.25, 2]]
    """
    return summarize(traces, **options)[0]


def transition_stats(traces: TraceSet, **options: Any) -> pd.DataFrame:
    """Per-transition counts and probabilities out of the source state.

    Columns: ``src``, ``dst``, ``count``, ``probability`` (= count / all transitions out of
    ``src``; the probabilities out of one source sum to 1), ``probability_lo``/``_hi``
    (bootstrap over traces). Includes ``INITIAL -> s`` and ``s -> TERMINAL``; rows are
    sorted by ``src`` then ``dst``. Options as for :func:`summarize`.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> transition_stats(ts)[["src", "dst", "count", "probability"]].values.tolist()
    [['INITIAL', 'SlowStart', 1, 1.0], ['Recovery', 'SlowStart', 1, 1.0], ['SlowStart', 'Recovery', 1, 0.5], ['SlowStart', 'TERMINAL', 1, 0.5]]
    """
    return summarize(traces, **options)[1]


def trace_state_times(v: pd.DataFrame, traces: TraceSet) -> pd.DataFrame:
    """Seconds each trace spends in each state: a traces x states frame (0 where absent).

    ``v`` is the output of :func:`visits`; rows follow ``traces.traces`` order, columns
    are the states visited, sorted by name.
    """
    trace_ids = pd.Index(traces.traces["trace"].astype(str))
    rows = _codes(v["trace"], traces.traces["trace"])
    cols, names = _state_codes(v["state"])
    matrix = per_trace(rows, cols, v["duration"].to_numpy(float), len(trace_ids), len(names))
    return pd.DataFrame(
        matrix, index=pd.Index(trace_ids, name="trace"), columns=pd.Index(names, name="state")
    )


class _CodedVisits(NamedTuple):
    """State visits as integer-coded arrays (one entry per visit, in trace order).

    ``trace``: row in ``traces.traces``; ``state``: index into ``names``; ``next``: index
    into ``names`` or ``len(names)`` for TERMINAL; ``visit``: 0, 1, ... per trace; ``start``
    and ``end`` in seconds.
    """

    names: list[str]
    trace: np.ndarray
    state: np.ndarray
    next: np.ndarray
    visit: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _traceset_visits(
    traces: TraceSet, collapse_repeats: bool, end: EndRule, max_states: int
) -> tuple[list[str], VisitChunk]:
    """Every visit of a trace set (one block through :class:`VisitFold`), with state codes
    into the returned names (sorted) and trace codes = rows of ``traces.traces``."""
    if end not in END_RULES:
        raise ValueError(f"end must be one of {END_RULES}, not {end!r}")
    check_max_states(max_states)
    ev = traces.events
    codes_all = _codes(ev["trace"], traces.traces["trace"])
    is_state = (ev["kind"] == "state").to_numpy()
    state, names = _state_codes(ev["state"][is_state])
    if len(names) > max_states:
        raise _too_many_states(traces, np.flatnonzero(is_state), state, max_states)
    fold = VisitFold(collapse_repeats)
    closed = fold.add(codes_all[is_state], state, ev["time"].to_numpy()[is_state])
    last = fold.finish(_trace_ends(traces, codes_all, end))
    trace, state, start, end_, next_ = (
        np.concatenate([a, b]) for a, b in zip(closed[:5], last[:5])
    )
    both = VisitChunk(trace, state, start, end_, next_, closed.first_trace, closed.first_state)
    return names, both


def _coded_visits(
    traces: TraceSet, collapse_repeats: bool, end: EndRule, max_states: int
) -> _CodedVisits:
    return _code_chunk(*_traceset_visits(traces, collapse_repeats, end, max_states))


def _code_chunk(names: list[str], v: VisitChunk) -> _CodedVisits:
    """Visits grouped by trace (time order within), numbered, TERMINAL coded len(names)."""
    order = group_order(v.trace)  # stable: a trace's visits stay in time order, its last one last
    trace = v.trace[order]
    n = len(trace)
    starts = np.flatnonzero(np.r_[True, trace[1:] != trace[:-1]]) if n else np.zeros(0, np.int64)
    visit = (
        np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) if n else np.zeros(0, np.int64)
    )
    nxt = v.next[order]
    return _CodedVisits(
        names,
        trace,
        v.state[order],
        np.where(nxt == OUTSIDE, len(names), nxt),
        visit.astype(np.int64),
        v.start[order],
        v.end[order],
    )


def _too_many_states(
    traces: TraceSet, rows: np.ndarray, state: np.ndarray, max_states: int
) -> InputError:
    """The error for more than ``max_states`` state names, at the first state line (events
    order: by trace, then log order) of the first name past the cap."""
    _, first = np.unique(state, return_index=True)
    row = rows[np.sort(first)[max_states]]
    event = traces.events.iloc[row]
    trace = traces.traces.set_index(traces.traces["trace"].astype(str)).loc[str(event["trace"])]
    line, source = int(event["line"]), trace.get("source")
    return InputError(
        source if isinstance(source, str) else None,
        line if line > 0 else None,
        too_many_states(max_states),
    )


def _state_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a state column and the names they index, sorted by name."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = column.cat.categories.astype(str)
        codes = column.cat.codes.to_numpy()
        used = np.unique(codes)
        names = sorted(cats[used])
        remap = np.full(len(cats), -1, np.int64)
        remap[used] = pd.Index(names).get_indexer(cats[used])
        return remap[codes], names
    names_arr, codes = np.unique(column.astype(str).to_numpy(), return_inverse=True)
    return codes.astype(np.int64), [str(x) for x in names_arr]


def _codes(trace_column: pd.Series, trace_ids: pd.Series) -> np.ndarray:
    """Position of each event's trace in ``trace_ids`` (the traces frame order)."""
    index = pd.Index(trace_ids.astype(str))
    if isinstance(trace_column.dtype, pd.CategoricalDtype):
        where = index.get_indexer(trace_column.cat.categories.astype(str))
        return where[trace_column.cat.codes.to_numpy()]
    return index.get_indexer(pd.Index(trace_column.astype(str)))


def _trace_ends(traces: TraceSet, codes_all: np.ndarray, end: EndRule) -> np.ndarray:
    """End time (seconds) of each trace under the end rule, indexed like ``traces.traces``."""
    n = traces.n_traces
    time = traces.events["time"].to_numpy()
    if end == "last-state":
        return np.full(n, -np.inf)
    last_line = np.full(n, -np.inf)
    np.maximum.at(last_line, codes_all, time)
    explicit = traces.traces["end"].to_numpy(dtype=float)
    return np.where(np.isnan(explicit), last_line, explicit)
