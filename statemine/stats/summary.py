"""Where the time goes in a trace set: visits, per-state and per-transition tables.

All functions read the ``kind == "state"`` rows of a :class:`~statemine.traces.TraceSet`
(point events never split a state's time) and return tidy DataFrames. They take a
:class:`~statemine.stats.options.StatsOptions` and/or its fields as keywords
(``summarize(ts, n_boot=0)``).

Rules (docs/log-format.md; :mod:`statemine.stats.visits`):

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

:func:`summarize` is ``tables(map_traces(traces))``: the map and reduce of
:mod:`statemine.stats.partial` on one partition.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..arrays import group_order
from ..traces import TraceSet
from .options import StatsOptions
from .partial import map_traces
from .tables import TERMINAL, tables
from .visits import OUTSIDE, VisitChunk, traceset_visits

__all__ = [
    "state_stats",
    "summarize",
    "trace_state_times",
    "transition_stats",
    "visits",
]


def visits(traces: TraceSet, options: StatsOptions | None = None, **changes: Any) -> pd.DataFrame:
    """One row per state visit: ``trace, visit, state, start, end, duration, next``.

    Times in seconds; ``next`` is the following state of the trace or ``TERMINAL``;
    ``trace``, ``state`` and ``next`` are categoricals.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> visits(ts)[["state", "duration", "next"]].astype(object).values.tolist()
    [['SlowStart', 1.0, 'Recovery'], ['Recovery', 3.0, 'SlowStart'], ['SlowStart', 0.0, 'TERMINAL']]
    """
    names, chunk = traceset_visits(traces, StatsOptions.of(options, **changes))
    c = _code_chunk(names, chunk)
    trace_ids = pd.Index(traces.traces["trace"].astype(str))
    labels = pd.Index([*list(c.names), TERMINAL], dtype=str)
    return pd.DataFrame(
        {
            "trace": pd.Categorical.from_codes(c.trace, categories=trace_ids),
            "visit": c.visit,
            "state": pd.Categorical.from_codes(c.state, categories=labels),
            "start": c.start,
            "end": c.end,
            "duration": c.end - c.start,
            "next": pd.Categorical.from_codes(c.next, categories=labels),
        }
    )


def summarize(
    traces: TraceSet, options: StatsOptions | None = None, **changes: Any
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(state_stats(traces), transition_stats(traces))`` computed together: one pass over
    the visits and one bootstrap, whose resampled trace sets are shared by both tables.

    Memory grows with the distinct (trace, state) and (trace, transition) pairs, not with
    traces x states. More than ``max_states`` distinct state names raise
    :class:`~statemine.errors.InputError` naming the file and line of the first name past
    the cap (in trace order)."""
    opts = StatsOptions.of(options, **changes)
    return tables(map_traces(traces, opts), opts)


def state_stats(
    traces: TraceSet, options: StatsOptions | None = None, **changes: Any
) -> pd.DataFrame:
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
    return summarize(traces, options, **changes)[0]


def transition_stats(
    traces: TraceSet, options: StatsOptions | None = None, **changes: Any
) -> pd.DataFrame:
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
    return summarize(traces, options, **changes)[1]


def trace_state_times(
    traces: TraceSet, options: StatsOptions | None = None, **changes: Any
) -> pd.DataFrame:
    """Seconds each trace spends in each state: a traces x states frame (0 where absent).

    Rows follow ``traces.traces`` order (index ``trace``), columns are the states visited,
    sorted by name (``state``). The seconds are the per-trace statistics every table and
    diff sums (:meth:`~statemine.stats.partial.PartialStats.trace_state_seconds`), visits
    made by the options' rules (``end``, ``collapse_repeats``; as for :func:`summarize`).

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a", "a", "b", "b"],
    ...     "time": [0.0, 1.0, 0.0, 4.0], "state": ["SlowStart", "Recovery"] * 2}))
    >>> trace_state_times(ts).values.tolist()
    [[0.0, 1.0], [0.0, 4.0]]
    """
    p = map_traces(traces, StatsOptions.of(options, **changes))
    return pd.DataFrame(
        p.trace_state_seconds(),
        index=pd.Index(traces.traces["trace"].astype(str), name="trace"),
        columns=pd.Index(list(p.names), name="state"),
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
