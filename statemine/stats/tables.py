"""The state and transition tables, computed from per-trace statistics (:class:`PartialStats`).

:func:`columns` gives the tables as numpy columns (the streamed command never loads
pandas); :func:`tables` as DataFrames. Every number is a sum over the per-trace
statistics in trace order (so merged partitions give the single-machine tables bit for
bit, :mod:`statemine.stats.partial`), and the intervals come from one percentile
bootstrap over traces (:mod:`statemine.stats.resampling`), whose resampled trace sets are
shared by both tables.

Memory is proportional to the distinct (trace, state) pairs, the distinct (trace,
transition) pairs and the distinct states: nothing is allocated per trace x state, per
trace x transition or per state x state, so one trace of 20,000 states or 40,000 traces
of one new state each cost a few megabytes, not gigabytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from .options import StatsOptions
from .resampling import bootstrap_by_column, by_column
from .sums import _LOW, _SHIFT, _split, unique_sums
from .visits import OUTSIDE

if TYPE_CHECKING:
    import pandas as pd

    from .partial import PartialStats

INITIAL = "INITIAL"
TERMINAL = "TERMINAL"
#: Stored pair sums are re-sorted by column or summed per source this many at a time (bounds the temporaries).
_CHUNK = 1 << 20

Columns = dict[str, np.ndarray]


def tables(
    p: PartialStats, options: StatsOptions = StatsOptions()
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(states, transitions)`` as documented in :func:`statemine.stats.summary.state_stats`
    and :func:`statemine.stats.summary.transition_stats`. The states table's
    ``attrs["dwell_quantiles"]`` says whether the dwell quantiles are exact."""
    import pandas as pd

    states, transitions = columns(p, options)
    frames = []
    for cols, text in ((states, ("state",)), (transitions, ("src", "dst"))):
        frames.append(
            pd.DataFrame({k: pd.Series(v, dtype=str) if k in text else v for k, v in cols.items()})
        )
    frames[0].attrs["dwell_quantiles"] = p.dwell.accuracy
    return frames[0], frames[1]


def columns(p: PartialStats, options: StatsOptions = StatsOptions()) -> tuple[Columns, Columns]:
    """The columns of :func:`tables` as numpy arrays (names as object arrays of str), rows
    filtered and sorted alike, without pandas."""
    names = list(p.names)
    states, trace_totals = _state_columns(p)
    transitions, src_group = _transition_columns(p)
    k = len(names)
    den_of = np.r_[np.zeros(k, np.int64), src_group + 1]
    by_den = np.argsort(den_of, kind="stable")  # states first, then transitions by source
    edge_position = np.empty(len(src_group), np.int64)
    edge_position[by_den[k:] - k] = np.arange(k, len(by_den))
    # the bootstrap's operands built straight from the stored sums, one copy each, by column
    den = by_column(
        *_denominator_parts(p, trace_totals, src_group),
        1 + int(den_of.max(initial=0)),
        p.n_traces,
    )
    num = by_column(
        _numerator_parts(p, edge_position),
        _numerator_parts(p, edge_position),
        len(by_den),
        p.n_traces,
    )
    sorted_lo, sorted_hi = bootstrap_by_column(
        num,
        den,
        den_of[by_den],
        confidence=options.confidence,
        n_boot=options.n_boot,
        seed=options.seed,
    )
    del num, den
    lo, hi = np.empty(len(by_den)), np.empty(len(by_den))
    lo[by_den], hi[by_den] = sorted_lo, sorted_hi
    states["time_fraction_lo"], states["time_fraction_hi"] = lo[:k], hi[:k]
    transitions["probability_lo"], transitions["probability_hi"] = lo[k:], hi[k:]
    # states: most time first, then by name; states never entered are left out
    kept = np.flatnonzero(states["visits"] > 0)
    order = kept[np.lexsort((_ranks(states["state"][kept]), -states["time_fraction"][kept]))]
    by_edge = np.lexsort((_ranks(transitions["dst"]), _ranks(transitions["src"])))
    return (
        {c: v[order] for c, v in states.items()},
        {c: v[by_edge] for c, v in transitions.items()},
    )


def _numerator_parts(
    p: PartialStats, edge_position: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The bootstrap's numerators as ``(trace, column, value)`` parts of at most ``_CHUNK``
    entries in stored order: seconds per (trace, state), column = state, then count per
    (trace, transition), column = ``edge_position[transition]``."""
    keys, seconds = p.state_keys, p.seconds
    for a in range(0, len(keys), _CHUNK):
        part = keys[a : a + _CHUNK]
        yield (part >> _SHIFT).astype(np.int32), part & _LOW, seconds[a : a + _CHUNK]
    keys, count = p.edge_keys, p.edge_count
    for a in range(0, len(keys), _CHUNK):
        part = keys[a : a + _CHUNK]
        yield (part >> _SHIFT).astype(np.int32), edge_position[part & _LOW], count[a : a + _CHUNK]


def _denominator_parts(
    p: PartialStats, trace_totals: np.ndarray, src_group: np.ndarray
) -> tuple[list, Iterator]:
    """The bootstrap's denominators as ``(trace, column, value)`` parts, twice (a list, and
    the same list emptied as it is read): seconds per trace (column 0), then the count out
    of each source per (trace, source) (column ``1 + src_group``), summed ``_CHUNK`` stored
    entries (whole traces) at a time."""
    with_time = np.flatnonzero(trace_totals).astype(np.int32)
    parts = [(with_time, np.zeros(len(with_time), np.int64), trace_totals[with_time])]
    keys, count = p.edge_keys, p.edge_count
    for a, b in zip(*_trace_cuts(keys, _CHUNK)):
        part = keys[a:b]
        source_keys, (sums,) = unique_sums(part >> _SHIFT, src_group[part & _LOW], [count[a:b]])
        parts.append(((source_keys >> _SHIFT).astype(np.int32), (source_keys & _LOW) + 1, sums))
    return parts, _drained(parts)


def _state_columns(p: PartialStats) -> tuple[Columns, np.ndarray]:
    """The state columns without intervals, and the seconds of each trace (the denominator
    of its fractions)."""
    n = len(p.names)
    trace, state = _split(p.state_keys)
    seconds, n_visits = p.seconds, p.visits
    time_s = np.bincount(state, weights=seconds, minlength=n)
    trace_totals = np.bincount(trace, weights=seconds, minlength=p.n_traces)
    visits = np.bincount(state, weights=n_visits, minlength=n)
    timed = trace_totals[trace] > 0
    n_timed = int(np.count_nonzero(trace_totals > 0))
    own = np.bincount(
        state[timed], weights=seconds[timed] / trace_totals[trace[timed]], minlength=n
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = time_s / time_s.sum()
        dwell_mean = time_s / visits
    median, p95 = p.dwell.quantiles(n, (0.5, 0.95))
    cols = {
        "state": np.array(p.names, dtype=object),
        "time_s": time_s,
        "time_fraction": fraction,
        "time_fraction_lo": np.full(n, np.nan),
        "time_fraction_hi": np.full(n, np.nan),
        "mean_trace_fraction": own / n_timed if n_timed else np.full(n, np.nan),
        "dwell_mean": dwell_mean,
        "dwell_median": median,
        "dwell_p95": p95,
        "visits": visits.astype("int64"),
        "traces": np.bincount(state[n_visits > 0], minlength=n).astype("int64"),
    }
    return cols, trace_totals


def _transition_columns(p: PartialStats) -> tuple[Columns, np.ndarray]:
    """The transition columns without intervals, and each transition's source group
    (sources numbered in ascending order, INITIAL first)."""
    keys, count = p.edge_keys, p.edge_count
    n_edges = len(p.edge_src)
    _, src_group = np.unique(p.edge_src, return_inverse=True)
    src_group = src_group.reshape(-1)
    n_groups = int(src_group.max()) + 1 if n_edges else 0
    total = np.zeros(n_edges)
    for a in range(0, len(keys), _CHUNK):  # counts are whole numbers: exact sums in any order
        total += np.bincount(
            keys[a : a + _CHUNK] & _LOW, weights=count[a : a + _CHUNK], minlength=n_edges
        )
    out_of_src = np.bincount(src_group, weights=total, minlength=n_groups)
    n = len(p.names)
    label = np.array([*p.names, INITIAL, TERMINAL], dtype=object)
    cols = {
        "src": label[np.where(p.edge_src == OUTSIDE, n, p.edge_src)],
        "dst": label[np.where(p.edge_dst == OUTSIDE, n + 1, p.edge_dst)],
        "count": total.astype("int64"),
        "probability": total / out_of_src[src_group],
        "probability_lo": np.full(n_edges, np.nan),
        "probability_hi": np.full(n_edges, np.nan),
    }
    return cols, src_group


def _ranks(text: np.ndarray) -> np.ndarray:
    """Each string's rank in sorted order (equal strings, equal ranks), for np.lexsort."""
    return (
        np.unique(text, return_inverse=True)[1].reshape(-1) if len(text) else np.zeros(0, np.int64)
    )


def _drained(parts: list) -> Iterator:
    """The items of ``parts``, each removed from the list as it is given (freed once used)."""
    parts.reverse()
    while parts:
        yield parts.pop()


def _trace_cuts(keys: np.ndarray, step: int) -> tuple[list[int], list[int]]:
    """``(starts, ends)`` of slices of ascending pair ``keys`` of about ``step`` entries
    (at least one), each holding whole rows (traces)."""
    cuts = [0]
    while cuts[-1] < len(keys):
        end = cuts[-1] + max(1, step)
        if end < len(keys):
            row = keys[end] >> _SHIFT
            end = int(np.searchsorted(keys, row << _SHIFT))
            if end <= cuts[-1]:  # one row longer than ``step``: take it whole
                end = int(np.searchsorted(keys, (row + 1) << _SHIFT))
        cuts.append(min(end, len(keys)))
    return cuts[:-1], cuts[1:]
