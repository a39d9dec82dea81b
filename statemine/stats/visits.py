"""From state lines to state visits, block by block (the rules of docs/log-format.md).

Rules: a state lasts from its line to the next state line of the same trace; the last
state ends at the trace's end (:func:`trace_ends`, the one end-of-trace rule of both the
in-memory and the streamed path); ``collapse_repeats`` merges a state logged again while
already in it into one visit; transitions include ``INITIAL -> first state`` and
``last state -> TERMINAL``.

A visit is one stay in a state: it starts at a state line and ends at the next state line
of the same trace, or, for the trace's last state, at the trace's end. :class:`VisitFold`
turns blocks of state lines (any interleaving of traces, log order within a trace) into
closed visits, carrying each trace's open visit from one block to the next, so a log can be
folded in bounded memory: the carry is two numbers per trace.

Codes: traces and states are dense non-negative integers chosen by the caller; ``-1``
stands for INITIAL (a source) and TERMINAL (a destination).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..arrays import group_order
from .options import EndRule, StatsOptions

if TYPE_CHECKING:
    import pandas as pd

    from ..errors import InputError
    from ..traces import TraceSet

#: Code of INITIAL (as a visit's predecessor) and TERMINAL (as its successor).
OUTSIDE = -1


class VisitChunk(NamedTuple):
    """Closed visits (``trace, state, start, end, next``; seconds) and the traces that
    began (``first_trace, first_state``: their INITIAL -> state transitions)."""

    trace: np.ndarray
    state: np.ndarray
    start: np.ndarray
    end: np.ndarray
    next: np.ndarray
    first_trace: np.ndarray
    first_state: np.ndarray


def trace_ends(explicit: np.ndarray, last_line: np.ndarray, end: EndRule) -> np.ndarray:
    """Where each trace's last state ends (seconds), the one end-of-trace rule: with
    ``end="close"`` the trace's explicit end (``explicit``, e.g. an ``event=Close`` line;
    NaN when unknown) else its last line of any kind (``last_line``); with
    ``end="last-state"`` at the state's own line (``-inf``: :meth:`VisitFold.finish`
    never ends a visit before it starts).

    >>> trace_ends(np.array([5.0, np.nan]), np.array([4.0, 3.0]), "close").tolist()
    [5.0, 3.0]
    """
    if end == "last-state":
        return np.full(len(last_line), -np.inf)
    return np.where(np.isnan(explicit), last_line, explicit)


class VisitFold:
    """Fold state lines into visits; ``collapse_repeats`` merges a state logged again while
    already in it into one visit.

    >>> fold = VisitFold()
    >>> a = fold.add(np.array([0, 0]), np.array([5, 7]), np.array([0.0, 1.0]))
    >>> a.state.tolist(), a.end.tolist(), a.next.tolist()   # 5 lasted 0 -> 1, then 7
    ([5], [1.0], [7])
    >>> b = fold.finish(np.array([4.0]))                     # 7 lasts to the trace's end
    >>> b.state.tolist(), b.start.tolist(), b.end.tolist(), b.next.tolist()
    ([7], [1.0], [4.0], [-1])
    """

    def __init__(self, collapse_repeats: bool = False) -> None:
        self.collapse_repeats = collapse_repeats
        self._state = np.full(0, OUTSIDE, np.int64)  # per trace: the open visit's state
        self._start = np.zeros(0)  # per trace: the open visit's start, seconds

    def add(self, trace: np.ndarray, state: np.ndarray, time: np.ndarray) -> VisitChunk:
        """Fold the state lines of one block (codes and seconds, log order within each
        trace); returns the visits they close."""
        if len(trace) and trace.max() >= len(self._state):
            grow = int(trace.max()) + 1 - len(self._state)
            self._state = np.r_[self._state, np.full(grow, OUTSIDE, np.int64)]
            self._start = np.r_[self._start, np.zeros(grow)]
        order = group_order(trace)
        tr, st, tm = trace[order].astype(np.int64), state[order].astype(np.int64), time[order]
        prev_state, prev_start, new = self._previous(tr, st, tm)
        if self.collapse_repeats:
            keep = st != prev_state
            tr, st, tm = tr[keep], st[keep], tm[keep]
            prev_state, prev_start, new = self._previous(tr, st, tm)
        began = new & (prev_state == OUTSIDE)
        closes = prev_state != OUTSIDE
        last = np.r_[tr[1:] != tr[:-1], True] if len(tr) else np.zeros(0, bool)
        self._state[tr[last]] = st[last]
        self._start[tr[last]] = tm[last]
        return VisitChunk(
            tr[closes],
            prev_state[closes],
            prev_start[closes],
            tm[closes],
            st[closes],
            tr[began],
            st[began],
        )

    def finish(self, trace_end: np.ndarray) -> VisitChunk:
        """Close every open visit at its trace's end (seconds, indexed by trace code; a
        visit never ends before it starts, so ``-inf`` ends it at its own line)."""
        open_ = np.flatnonzero(self._state != OUTSIDE)
        start = self._start[open_]
        end = np.maximum(np.asarray(trace_end, float)[open_], start)
        empty = np.zeros(0, np.int64)
        return VisitChunk(
            open_, self._state[open_], start, end, np.full(len(open_), OUTSIDE), empty, empty
        )

    def _previous(
        self, tr: np.ndarray, st: np.ndarray, tm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row (grouped by trace): the state and start of the visit it follows, and
        whether the row is its trace's first in the block."""
        new = np.r_[True, tr[1:] != tr[:-1]] if len(tr) else np.zeros(0, bool)
        prev_state = np.empty_like(st)
        prev_start = np.empty_like(tm)
        prev_state[1:], prev_start[1:] = st[:-1], tm[:-1]
        prev_state[new] = self._state[tr[new]]
        prev_start[new] = self._start[tr[new]]
        return prev_state, prev_start, new


def traceset_visits(traces: TraceSet, options: StatsOptions) -> tuple[list[str], VisitChunk]:
    """Every visit of a trace set (its state rows through :class:`VisitFold` as one block),
    with state codes into the returned names (sorted) and trace codes = rows of
    ``traces.traces``. More than ``options.max_states`` names raise
    :class:`~statemine.errors.InputError` naming the file and line of the first name past
    the cap (in trace order)."""
    ev = traces.events
    codes_all = trace_codes(ev["trace"], traces.traces["trace"])
    is_state = (ev["kind"] == "state").to_numpy()
    state, names = state_codes(ev["state"][is_state])
    if len(names) > options.max_states:
        raise _too_many_states(traces, np.flatnonzero(is_state), state, options.max_states)
    fold = VisitFold(options.collapse_repeats)
    closed = fold.add(codes_all[is_state], state, ev["time"].to_numpy()[is_state])
    time = ev["time"].to_numpy()
    last_line = np.full(traces.n_traces, -np.inf)
    np.maximum.at(last_line, codes_all, time)
    explicit = traces.traces["end"].to_numpy(dtype=float)
    last = fold.finish(trace_ends(explicit, last_line, options.end))
    trace, state, start, end_, next_ = (
        np.concatenate([a, b]) for a, b in zip(closed[:5], last[:5])
    )
    return names, VisitChunk(
        trace, state, start, end_, next_, closed.first_trace, closed.first_state
    )


def state_codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a state column and the names they index, sorted by name."""
    import pandas as pd

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


def trace_codes(trace_column: pd.Series, trace_ids: pd.Series) -> np.ndarray:
    """Position of each event's trace in ``trace_ids`` (the traces frame order)."""
    import pandas as pd

    index = pd.Index(trace_ids.astype(str))
    if isinstance(trace_column.dtype, pd.CategoricalDtype):
        where = index.get_indexer(trace_column.cat.categories.astype(str))
        return where[trace_column.cat.codes.to_numpy()]
    return index.get_indexer(pd.Index(trace_column.astype(str)))


def _too_many_states(
    traces: TraceSet, rows: np.ndarray, state: np.ndarray, max_states: int
) -> InputError:
    """The error for more than ``max_states`` state names, at the first state line (events
    order: by trace, then log order) of the first name past the cap."""
    from ..errors import InputError
    from .options import too_many_states

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
