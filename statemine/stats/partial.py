"""Per-trace sufficient statistics: map a partition of traces, merge (reduce), then the tables.

Every statistic statemine computes on one trace set comes from a :class:`PartialStats`:
per trace its seconds and visits in each state and its count of each transition, plus the
dwell times (:class:`~statemine.stats.dwell.Dwell`: exact, or a sketch past a budget).
A partition of the traces is summarized on its own (:func:`map_traces` for a
:class:`~statemine.traces.TraceSet`, :func:`statemine.stats.stream.fold_scanned` for
statemine logs) and partitions combine with :func:`merge`; the tables
(:func:`statemine.stats.tables.tables`) of the merged statistics are exactly, bit for bit,
those of the whole -- the single-machine path is itself ``tables(map_traces(ts))``.

Why exact: a trace lies wholly in one partition, so each (trace, state) sum is added in
the same order wherever it is computed; the merge puts the traces back in their global
order (``(part, row)``: the partition's rank, the trace's row in it) and numbers states
(by name) and transitions (by their ends) canonically, so every later sum runs in the
same order as on one machine; dwell quantiles do not depend on the order of the times.

The data are plain numpy arrays, a tuple of names and ints in frozen dataclasses:
picklable, cheap to ship from a worker (bytes: about 24 per (trace, state) pair, 16 per
(trace, transition) pair, 12 per visit while the dwell times are exact). Usage
(docs/architecture.md, "Statistics as map and reduce")::

    parts = [map_traces(chunk, options, part=i) for i, chunk in enumerate(chunks)]
    states, transitions = tables(merge(*parts), options)
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..arrays import sorted_unique
from . import dwell as dwell_times
from .dwell import Dwell, DwellTimes
from .options import DWELL_BUDGET, StatsOptions
from .sums import _LOW, _SHIFT, KeyedSums, _pair_keys, _split
from .visits import OUTSIDE, VisitChunk

if TYPE_CHECKING:
    from ..traces import TraceSet

#: Transitions are numbered through a dense (states + 1)^2 table up to this many cells.
_EDGE_TABLE_CELLS = 1 << 20


@dataclass(frozen=True, eq=False)
class PartialStats:
    """The sufficient statistics of some traces (one partition, or several merged).

    ``names``: the state names, sorted; state codes index them. Per trace (its code is its
    position): ``part`` (rank of the partition it came from) and ``row`` (its row there):
    traces are ordered by ``(part, row)``, unique. ``state_keys``: ascending
    ``trace << 32 | state`` keys of the (trace, state) pairs visited, with ``seconds``
    (time in the state) and ``visits``. ``edge_src``/``edge_dst``: the transitions, by
    ascending ``(src, dst)``, as state codes (-1: INITIAL as a source, TERMINAL as a
    destination); ``edge_keys``: ascending ``trace << 32 | transition`` keys with their
    ``edge_count``. ``dwell``: every visit's seconds by state. ``n_events``: the lines
    (events) the traces came from."""

    names: tuple[str, ...]
    part: np.ndarray
    row: np.ndarray
    state_keys: np.ndarray
    seconds: np.ndarray
    visits: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_keys: np.ndarray
    edge_count: np.ndarray
    dwell: Dwell
    n_events: int = 0

    @property
    def n_traces(self) -> int:
        return len(self.part)

    def trace_state_seconds(self) -> np.ndarray:
        """Seconds each trace spends in each state: a dense traces x states matrix (0 where
        absent; rows in trace order, columns as ``names``)."""
        out = np.zeros((self.n_traces, len(self.names)))
        out[self.state_keys >> _SHIFT, self.state_keys & _LOW] = self.seconds
        return out

    def trace_state_entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The visited cells of :meth:`trace_state_seconds` (the others are 0): ``(trace,
        state, seconds)`` per (trace, state) pair, ascending by (trace, state); codes int32."""
        trace, state = _split(self.state_keys)
        return trace, state, self.seconds

    def traces_per_state(self) -> np.ndarray:
        """How many traces visit each state (as ``names``)."""
        return np.bincount(self.state_keys & _LOW, minlength=len(self.names)).astype(np.int64)


def map_traces(
    traces: TraceSet,
    options: StatsOptions = StatsOptions(),
    part: int = 0,
    rows: np.ndarray | None = None,
) -> PartialStats:
    """The statistics of a trace set (the map step). Its traces are numbered ``(part,
    row)``: ``row`` their position in ``traces.traces`` (or ``rows[i]`` for trace ``i``);
    give each partition a distinct ``part``, ranked as the partitions' traces are ordered
    on one machine (or ``part=0`` and each trace's global position as ``rows``)."""
    from .visits import traceset_visits

    names, chunk = traceset_visits(traces, options)
    stats = VisitStats(options.dwell_budget)
    stats.add(chunk, traces.n_traces, len(names))
    p = stats.partial(names, part=part, n_events=len(traces.events))
    if rows is None:
        return p
    if len(rows) != p.n_traces or (np.diff(rows) <= 0).any():
        raise ValueError(f"rows must be {p.n_traces} ascending positions, one per trace")
    return dataclasses.replace(p, row=np.asarray(rows, np.int64))


def merge(*parts: PartialStats) -> PartialStats:
    """The statistics of the union of disjoint partitions (the reduce step): associative
    and commutative -- the result does not depend on how partitions are grouped or
    ordered (dwell times up to their order, which nothing depends on). Raises ValueError
    when two partitions hold the same ``(part, row)`` trace."""
    if not parts:
        raise ValueError("merge needs at least one PartialStats")
    if len(parts) == 1:
        return parts[0]
    names = tuple(sorted(set().union(*(p.names for p in parts))))
    lookup = {name: code for code, name in enumerate(names)}
    codes = [np.array([lookup[n] for n in p.names], np.int64) for p in parts]
    part = np.concatenate([p.part for p in parts])
    row = np.concatenate([p.row for p in parts])
    order = np.lexsort((row, part))
    same = (np.diff(part[order]) == 0) & (np.diff(row[order]) == 0)
    if same.any():
        at = order[np.flatnonzero(same)[0]]
        raise ValueError(f"trace (part {part[at]}, row {row[at]}) is in two merged partitions")
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    offsets = np.cumsum([0] + [p.n_traces for p in parts])
    to_trace = [position[a:b] for a, b in itertools.pairwise(offsets)]

    state_keys = np.concatenate(
        [_recode(p.state_keys, t, c) for p, t, c in zip(parts, to_trace, codes)]
    )
    by_state = np.argsort(state_keys, kind="stable")
    edge_src = [
        np.where(p.edge_src == OUTSIDE, OUTSIDE, c[p.edge_src]) for p, c in zip(parts, codes)
    ]
    edge_dst = [
        np.where(p.edge_dst == OUTSIDE, OUTSIDE, c[p.edge_dst]) for p, c in zip(parts, codes)
    ]
    ends = [_pair_keys(s + 1, d + 1) for s, d in zip(edge_src, edge_dst)]
    all_ends = np.unique(np.concatenate(ends))
    edge_keys = np.concatenate(
        [
            _recode(p.edge_keys, t, np.searchsorted(all_ends, e))
            for p, t, e in zip(parts, to_trace, ends)
        ]
    )
    by_edge = np.argsort(edge_keys, kind="stable")
    dwell = parts[0].dwell.recoded(codes[0])
    for p, c in zip(parts[1:], codes[1:]):
        dwell = dwell_times.merge(dwell, p.dwell.recoded(c))
    return PartialStats(
        names=names,
        part=part[order],
        row=row[order],
        state_keys=state_keys[by_state],
        seconds=np.concatenate([p.seconds for p in parts])[by_state],
        visits=np.concatenate([p.visits for p in parts])[by_state],
        edge_src=(all_ends >> _SHIFT) - 1,
        edge_dst=(all_ends & _LOW) - 1,
        edge_keys=edge_keys[by_edge],
        edge_count=np.concatenate([p.edge_count for p in parts])[by_edge],
        dwell=dwell,
        n_events=sum(p.n_events for p in parts),
    )


def _recode(keys: np.ndarray, trace: np.ndarray, column: np.ndarray) -> np.ndarray:
    """Pair keys with their trace renamed ``trace[t]`` and their column ``column[c]``."""
    return _pair_keys(trace[keys >> _SHIFT], column[keys & _LOW])


class VisitStats:
    """The statistics of closed visits (:class:`~statemine.stats.visits.VisitChunk`) added
    block by block, made into a :class:`PartialStats` by :meth:`partial`.

    Memory: per distinct (trace, state) pair its seconds and visits, per distinct (trace,
    transition) pair its count, per distinct transition its ends, plus the dwell times
    (bounded); nothing grows with the number of lines per trace, and nothing is allocated
    per trace x state or state x state.
    """

    def __init__(self, dwell_budget: int = DWELL_BUDGET) -> None:
        self.n_traces = 0
        self.n_states = 0
        self.state_sums = KeyedSums(2)  # (trace, state) -> seconds, visits
        self.edge_sums = KeyedSums(1)  # (trace, transition) -> count
        self.edge_src = np.zeros(0, np.int64)  # per transition: source state or OUTSIDE (INITIAL)
        self.edge_dst = np.zeros(0, np.int64)  # ... destination state or OUTSIDE (TERMINAL)
        self._edge_keys = np.zeros(0, np.int64)  # (src + 1, dst + 1) pair keys, ascending ...
        self._edge_ids = np.zeros(0, np.int64)  # ... and their transition numbers
        # [src + 1, dst + 1] -> number, -1 if none (few states)
        self._edge_table: np.ndarray | None = None
        self.dwell = DwellTimes(dwell_budget)

    def add(self, chunk: VisitChunk, n_traces: int, n_states: int) -> None:
        """Add closed visits; codes are below ``n_traces`` and ``n_states`` (both below 2**31)."""
        self.n_traces, self.n_states = max(self.n_traces, n_traces), max(self.n_states, n_states)
        duration = chunk.end - chunk.start
        self.state_sums.add(chunk.trace, chunk.state, [duration, None])
        self.dwell.add(chunk.state, duration)
        src = np.concatenate([np.full(len(chunk.first_trace), OUTSIDE), chunk.state])
        dst = np.concatenate([chunk.first_state, chunk.next])
        trace = np.concatenate([chunk.first_trace, chunk.trace])
        self.edge_sums.add(trace, self._edge_numbers(src, dst), [None])

    def partial(self, names: list[str], *, part: int = 0, n_events: int = 0) -> PartialStats:
        """The statistics added so far, ``names[code]`` naming state ``code`` (any order:
        the result numbers states by sorted name), traces ``(part, 0..n_traces-1)``."""
        order = np.argsort(np.array(names, dtype=object), kind="stable")
        codes = np.empty(len(names), np.int64)
        codes[order] = np.arange(len(order))
        canonical = bool((order == np.arange(len(order))).all())
        state_keys, (seconds, visits) = self.state_sums.result()
        if not canonical:
            state_keys = _pair_keys(state_keys >> _SHIFT, codes[state_keys & _LOW])
            by_key = np.argsort(state_keys, kind="stable")
            state_keys, seconds, visits = state_keys[by_key], seconds[by_key], visits[by_key]
        src = np.where(self.edge_src == OUTSIDE, OUTSIDE, codes[self.edge_src])
        dst = np.where(self.edge_dst == OUTSIDE, OUTSIDE, codes[self.edge_dst])
        ends = _pair_keys(src + 1, dst + 1)
        by_ends = np.argsort(ends, kind="stable")
        number = np.empty(len(ends), np.int64)
        number[by_ends] = np.arange(len(ends))
        edge_keys, (count,) = self.edge_sums.result()
        edge_keys = _pair_keys(edge_keys >> _SHIFT, number[edge_keys & _LOW])
        by_key = np.argsort(edge_keys, kind="stable")
        return PartialStats(
            names=tuple(names[i] for i in order),
            part=np.full(self.n_traces, part, np.int64),
            row=np.arange(self.n_traces, dtype=np.int64),
            state_keys=state_keys,
            seconds=seconds,
            visits=visits,
            edge_src=src[by_ends],
            edge_dst=dst[by_ends],
            edge_keys=edge_keys[by_key],
            edge_count=count[by_key],
            dwell=self.dwell.result().recoded(codes),
            n_events=n_events,
        )

    def _edge_numbers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The transition number of each (src, dst) pair, numbering new pairs: looked up in
        a (states + 1)^2 table while that is small (``_EDGE_TABLE_CELLS``), else by binary
        search in the sorted pair keys."""
        size = self.n_states + 1
        if size * size > _EDGE_TABLE_CELLS:
            self._edge_table = None
            return self._searched_edge_numbers(src, dst)
        if self._edge_table is None or self._edge_table.shape[0] < size:
            self._edge_table = np.full((size, size), -1, np.int64)
            self._edge_table[self.edge_src + 1, self.edge_dst + 1] = np.arange(len(self.edge_src))
        number = self._edge_table[src + 1, dst + 1]
        new = number < 0
        if new.any():
            number[new] = self._searched_edge_numbers(src[new], dst[new])
            self._edge_table[self.edge_src + 1, self.edge_dst + 1] = np.arange(len(self.edge_src))
        return number

    def _searched_edge_numbers(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """:meth:`_edge_numbers` by binary search in the sorted pair keys."""
        keys = _pair_keys(src + 1, dst + 1)
        pos = np.searchsorted(self._edge_keys, keys)
        found = pos < len(self._edge_keys)
        found[found] = self._edge_keys[pos[found]] == keys[found]
        if not found.all():
            new = sorted_unique(keys[~found])
            start = len(self.edge_src)
            self.edge_src = np.r_[self.edge_src, (new >> _SHIFT) - 1]
            self.edge_dst = np.r_[self.edge_dst, (new & _LOW) - 1]
            all_keys = np.r_[self._edge_keys, new]
            order = np.argsort(all_keys, kind="stable")
            self._edge_keys = all_keys[order]
            self._edge_ids = np.r_[self._edge_ids, np.arange(start, start + len(new))][order]
            pos = np.searchsorted(self._edge_keys, keys)
        return self._edge_ids[pos]
