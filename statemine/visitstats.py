"""Sufficient statistics of state visits and the tables computed from them.

:class:`VisitStats` adds up closed visits (:mod:`statemine.visitfold`) into sparse
per-trace sums and dwell times, chunk by chunk, so the same code serves a whole
:class:`~statemine.traces.TraceSet` (:func:`statemine.summarize`) and a log streamed block
by block (:mod:`statemine.stream`). :meth:`VisitStats.columns` gives the tables as numpy
columns; only :meth:`VisitStats.tables` (DataFrames) needs pandas.

Memory is proportional to the distinct (trace, state) pairs, the distinct (trace,
transition) pairs and the distinct states: nothing is allocated per trace x state, per
trace x transition or per state x state, so one trace of 20,000 states or 40,000 traces
of one new state each cost a few megabytes, not gigabytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .errors import UsageError
from .visitfold import OUTSIDE, VisitChunk, group_order

if TYPE_CHECKING:
    import pandas as pd

INITIAL = "INITIAL"
TERMINAL = "TERMINAL"
#: Default cap on distinct state names (``max_states``): past it the state field is almost
#: surely an id (a connection id, a timestamp), and the tables, model and diagram would be
#: unreadable anyway. Adjustable (``statemine infer --max-states N``).
MAX_STATES = 100_000
#: A pair key is ``row << 32 | column``: rows (traces) and columns below 2**31.
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1
#: Cells of the bootstrap's statistics (resamples x columns) computed at a time (8 bytes each).
_STAT_CELLS = 1 << 21
#: A column group's per-trace sums are made dense (a matrix product) when they fit this many cells.
_DENSE_CELLS = 1 << 21
#: Transitions are numbered through a dense (states + 1)^2 table up to this many cells.
_EDGE_TABLE_CELLS = 1 << 20
#: The bootstrap's resampling weights are kept (not drawn again per column group) up to this size.
_WEIGHT_BYTES = 1 << 27
#: Stored pair sums are re-sorted by column or summed per source this many at a time (bounds the temporaries).
_CHUNK = 1 << 20


def too_many_states(max_states: int) -> str:
    """The reason given when a log has more than ``max_states`` distinct state names."""
    return (
        f"more than {max_states} distinct state names: this looks like an id in the state field "
        f"(raise the cap with --max-states if the states are real)"
    )


def check_max_states(max_states: int) -> None:
    """Reject a cap that is not a positive integer below 2**31."""
    if not 0 < max_states < 2**31:
        raise UsageError(f"max_states must be between 1 and {2**31 - 1}, not {max_states}")


class Coo(NamedTuple):
    """A sparse ``n_rows x n_cols`` matrix as coordinates (one entry per distinct cell)."""

    row: np.ndarray
    col: np.ndarray
    val: np.ndarray
    n_rows: int
    n_cols: int

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> Coo:
        row, col = np.nonzero(matrix)
        return cls(row, col, matrix[row, col].astype(float), matrix.shape[0], matrix.shape[1])


class KeyedSums:
    """Running sums of a few values per (row, column) pair, for pairs arriving chunk by
    chunk; rows and columns are non-negative and below 2**31.

    Each chunk becomes a sorted run of distinct keys; runs are merged whenever the newest
    is at least half the size of the one before (as a binary counter), so adding ``n``
    keys costs O(n log n) time in all and memory stays within about twice the distinct
    keys. Sums of a key add up in arrival order within a chunk.
    """

    def __init__(self, n_values: int) -> None:
        self.n_values = n_values
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # (keys, n_values x keys)

    def add(self, row: np.ndarray, col: np.ndarray, values: list[np.ndarray | None]) -> None:
        """Add ``values[i][j]`` to value ``i`` of the pair ``(row[j], col[j])`` (None adds 1)."""
        if not len(row):
            return
        run_keys, sums = unique_sums(row, col, values)
        if (
            self._runs
        ):  # only known keys (the usual case once every pair has been seen): add in place
            keys, known = self._runs[-1]
            at = np.searchsorted(keys, run_keys)
            if at[-1] < len(keys) and np.array_equal(keys[at], run_keys):
                known[:, at] += sums
                return
        self._runs.append((run_keys, sums))
        while len(self._runs) > 1 and 2 * len(self._runs[-1][0]) >= len(self._runs[-2][0]):
            self._runs[-2:] = [_merged(*self._runs[-2:])]

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, sums)``: distinct pair keys (``row << 32 | col``) ascending and their
        ``n_values x keys`` sums."""
        while len(self._runs) > 1:
            self._runs[-2:] = [_merged(*self._runs[-2:])]
        if not self._runs:
            return np.zeros(0, np.int64), np.zeros((self.n_values, 0))
        return self._runs[0]


def unique_sums(
    row: np.ndarray, col: np.ndarray, values: list[np.ndarray | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (row, col) pairs as ascending pair keys (``row << 32 | col``) and, per value
    array, the sums of its entries by pair (None counts them), each sum in input order."""
    row, col = np.asarray(row, np.int64), np.asarray(col, np.int64)
    if not len(row):
        return np.zeros(0, np.int64), np.zeros((len(values), 0))
    first, n_cols = int(row.min()), int(col.max()) + 1
    span = (int(row.max()) - first + 1) * n_cols
    if span <= 4 * len(row):  # a bincount over the touched block is cheaper than a sort
        code = (row - first) * n_cols + col
        count = np.bincount(code, minlength=span)
        where = np.flatnonzero(count)
        sums = [
            count[where] if v is None else np.bincount(code, weights=v, minlength=span)[where]
            for v in values
        ]
        return _pair_keys(where // n_cols + first, where % n_cols), np.array(sums, float).reshape(
            len(values), -1
        )
    distinct, inverse = np.unique(_pair_keys(row, col), return_inverse=True)
    inverse = inverse.reshape(-1)
    sums = [np.bincount(inverse, weights=v, minlength=len(distinct)) for v in values]
    return distinct, np.array(sums, float).reshape(len(values), len(distinct))


def _merged(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted runs as one (sums of equal keys: ``a``'s plus ``b``'s). ``a``'s sums are
    added to in place; besides the merged arrays only ``b``-sized indices are allocated."""
    (a_keys, a_sums), (b_keys, b_sums) = a, b
    at = np.searchsorted(a_keys, b_keys)
    known = at < len(a_keys)
    known[known] = a_keys[at[known]] == b_keys[known]
    a_sums[:, at[known]] += b_sums[:, known]
    new = ~known  # inserted before ``a_keys[at]``, in ascending order
    return np.insert(a_keys, at[new], b_keys[new]), np.insert(
        a_sums, at[new], b_sums[:, new], axis=1
    )


def _split(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns (int32: both are below 2**31) of pair keys."""
    return (keys >> _SHIFT).astype(np.int32), (keys & _LOW).astype(np.int32)


def _pair_keys(row: np.ndarray, col: np.ndarray) -> np.ndarray:
    return (np.asarray(row, np.int64) << _SHIFT) | np.asarray(col, np.int64)


class VisitStats:
    """Sufficient statistics of state visits, added chunk by chunk (see
    :mod:`statemine.visitfold`), from which :meth:`tables` computes every number of the
    state and transition tables and their bootstrap intervals.

    Memory: per distinct (trace, state) pair its seconds and visits, per distinct (trace,
    transition) pair its count, per distinct transition its ends, plus the dwell times
    (:class:`DwellTimes`, bounded); nothing grows with the number of lines per trace, and
    nothing is allocated per trace x state or state x state.
    """

    def __init__(self, dwell_budget: int | None = None) -> None:
        self.n_traces = 0
        self.n_states = 0
        self.state_sums = KeyedSums(2)  # (trace, state) -> seconds, visits
        self.edge_sums = KeyedSums(1)  # (trace, transition) -> count
        self.edge_src = np.zeros(0, np.int64)  # per transition: source state or OUTSIDE (INITIAL)
        self.edge_dst = np.zeros(0, np.int64)  # ... destination state or OUTSIDE (TERMINAL)
        self._edge_keys = np.zeros(0, np.int64)  # (src + 1, dst + 1) pair keys, ascending ...
        self._edge_ids = np.zeros(0, np.int64)  # ... and their transition numbers
        self._edge_table: np.ndarray | None = (
            None  # [src + 1, dst + 1] -> number, -1 if none (few states)
        )
        self.dwell = DwellTimes() if dwell_budget is None else DwellTimes(dwell_budget)

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

    def tables(
        self, names: list[str], *, confidence: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(states, transitions)`` as documented in :func:`statemine.analyze.state_stats`
        and :func:`statemine.analyze.transition_stats`; ``names[code]`` names state
        ``code``. The states table's ``attrs["dwell_quantiles"]`` is :attr:`DwellTimes.accuracy`."""
        import pandas as pd

        states, transitions = self.columns(names, confidence=confidence, n_boot=n_boot, seed=seed)
        frames = []
        for columns, text in ((states, ("state",)), (transitions, ("src", "dst"))):
            frames.append(
                pd.DataFrame(
                    {k: pd.Series(v, dtype=str) if k in text else v for k, v in columns.items()}
                )
            )
        frames[0].attrs["dwell_quantiles"] = self.dwell.accuracy
        return frames[0], frames[1]

    def columns(
        self, names: list[str], *, confidence: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The columns of :meth:`tables` as numpy arrays (names as object arrays of str),
        rows filtered and sorted alike, without pandas."""
        states, trace_totals = self._state_columns(names)
        transitions, src_group = self._transition_columns(names)
        k = len(names)
        den_of = np.r_[np.zeros(k, np.int64), src_group + 1]
        by_den = np.argsort(den_of, kind="stable")  # states first, then transitions by source
        edge_position = np.empty(len(src_group), np.int64)
        edge_position[by_den[k:] - k] = np.arange(k, len(by_den))
        # the bootstrap's operands built straight from the stored sums, one copy each, by column
        den = _by_column(
            *self._denominator_parts(trace_totals, src_group),
            1 + int(den_of.max(initial=0)),
            self.n_traces,
        )
        num = _by_column(
            self._numerator_parts(edge_position),
            self._numerator_parts(edge_position),
            len(by_den),
            self.n_traces,
        )
        sorted_lo, sorted_hi = _bootstrap_by_column(
            num, den, den_of[by_den], confidence=confidence, n_boot=n_boot, seed=seed
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
        self, edge_position: np.ndarray
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The bootstrap's numerators as ``(trace, column, value)`` parts of at most
        ``_CHUNK`` entries in stored order: seconds per (trace, state), column = state,
        then count per (trace, transition), column = ``edge_position[transition]``."""
        keys, (seconds, _) = self.state_sums.result()
        for a in range(0, len(keys), _CHUNK):
            part = keys[a : a + _CHUNK]
            yield (part >> _SHIFT).astype(np.int32), part & _LOW, seconds[a : a + _CHUNK]
        keys, (count,) = self.edge_sums.result()
        for a in range(0, len(keys), _CHUNK):
            part = keys[a : a + _CHUNK]
            yield (
                (part >> _SHIFT).astype(np.int32),
                edge_position[part & _LOW],
                count[a : a + _CHUNK],
            )

    def _denominator_parts(
        self, trace_totals: np.ndarray, src_group: np.ndarray
    ) -> tuple[list, Iterator]:
        """The bootstrap's denominators as ``(trace, column, value)`` parts, twice (a list,
        and the same list emptied as it is read): seconds per trace (column 0), then the
        count out of each source per (trace, source) (column ``1 + src_group``), summed
        ``_CHUNK`` stored entries (whole traces) at a time."""
        with_time = np.flatnonzero(trace_totals).astype(np.int32)
        parts = [(with_time, np.zeros(len(with_time), np.int64), trace_totals[with_time])]
        keys, (count,) = self.edge_sums.result()
        for a, b in zip(*_trace_cuts(keys, _CHUNK)):
            part = keys[a:b]
            source_keys, (sums,) = unique_sums(part >> _SHIFT, src_group[part & _LOW], [count[a:b]])
            parts.append(((source_keys >> _SHIFT).astype(np.int32), (source_keys & _LOW) + 1, sums))
        return parts, _drained(parts)

    def _state_columns(self, names: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The state columns without intervals, and the seconds of each trace (the
        denominator of its fractions)."""
        n_states = max(len(names), self.n_states)
        trace, state = _split(self.state_sums.result()[0])
        seconds, n_visits = self.state_sums.result()[1]
        time_s = np.bincount(state, weights=seconds, minlength=n_states)[: len(names)]
        trace_totals = np.bincount(trace, weights=seconds, minlength=self.n_traces)
        visits = np.bincount(state, weights=n_visits, minlength=n_states)[: len(names)]
        timed = trace_totals[trace] > 0
        n_timed = int(np.count_nonzero(trace_totals > 0))
        own = np.bincount(
            state[timed], weights=seconds[timed] / trace_totals[trace[timed]], minlength=n_states
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            fraction = time_s / time_s.sum()
            dwell_mean = time_s / visits
        median, p95 = self.dwell.quantiles(len(names), (0.5, 0.95))
        columns = {
            "state": np.array(names, dtype=object),
            "time_s": time_s,
            "time_fraction": fraction,
            "time_fraction_lo": np.full(len(names), np.nan),
            "time_fraction_hi": np.full(len(names), np.nan),
            "mean_trace_fraction": own[: len(names)] / n_timed
            if n_timed
            else np.full(len(names), np.nan),
            "dwell_mean": dwell_mean,
            "dwell_median": median,
            "dwell_p95": p95,
            "visits": visits.astype("int64"),
            "traces": np.bincount(state[n_visits > 0], minlength=n_states)[: len(names)].astype(
                "int64"
            ),
        }
        return columns, trace_totals

    def _transition_columns(self, names: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The transition columns without intervals, and each transition's source group
        (sources numbered in ascending order, INITIAL first)."""
        keys, (count,) = self.edge_sums.result()
        n_edges = len(self.edge_src)
        _, src_group = np.unique(self.edge_src, return_inverse=True)
        src_group = src_group.reshape(-1)
        n_groups = int(src_group.max()) + 1 if n_edges else 0
        total = np.zeros(n_edges)
        for a in range(
            0, len(keys), _CHUNK
        ):  # counts are whole numbers: the sums are exact in any order
            total += np.bincount(
                keys[a : a + _CHUNK] & _LOW, weights=count[a : a + _CHUNK], minlength=n_edges
            )
        out_of_src = np.bincount(src_group, weights=total, minlength=n_groups)
        label = np.array([*list(names), INITIAL, TERMINAL], dtype=object)
        columns = {
            "src": label[np.where(self.edge_src == OUTSIDE, len(names), self.edge_src)],
            "dst": label[np.where(self.edge_dst == OUTSIDE, len(names) + 1, self.edge_dst)],
            "count": total.astype("int64"),
            "probability": total / out_of_src[src_group],
            "probability_lo": np.full(n_edges, np.nan),
            "probability_hi": np.full(n_edges, np.nan),
        }
        return columns, src_group

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
            new = np.unique(keys[~found])
            start = len(self.edge_src)
            self.edge_src = np.r_[self.edge_src, (new >> _SHIFT) - 1]
            self.edge_dst = np.r_[self.edge_dst, (new & _LOW) - 1]
            all_keys = np.r_[self._edge_keys, new]
            order = np.argsort(all_keys, kind="stable")
            self._edge_keys = all_keys[order]
            self._edge_ids = np.r_[self._edge_ids, np.arange(start, start + len(new))][order]
            pos = np.searchsorted(self._edge_keys, keys)
        return self._edge_ids[pos]


class DwellTimes:
    """Dwell times (seconds per visit) by state, for their quantiles.

    Exact while at most ``budget`` visits have been added (numpy's linear interpolation,
    as ``np.quantile``); past that, every time goes into a log-bucket sketch whose
    quantiles are within a relative ``accuracy`` of the exact ones (the DDSketch
    construction: Masson, Rim and Lee, VLDB 2019), so memory stays bounded.
    """

    #: Relative accuracy of the sketch.
    ALPHA = 1e-3
    #: Durations below this (seconds, > 0) share the sketch's first bucket.
    FLOOR = 1e-9

    def __init__(self, budget: int = 1 << 20) -> None:
        self.budget = budget
        self._states: list[np.ndarray] = []
        self._durations: list[np.ndarray] = []
        self._n = 0
        self._gamma = (1 + self.ALPHA) / (1 - self.ALPHA)
        self._sketch: KeyedSums | None = None  # (state, bucket) -> count; bucket 0 holds zeros

    @property
    def accuracy(self) -> str:
        return "exact" if self._sketch is None else f"within {self.ALPHA:.1%} (sketch)"

    def add(self, state: np.ndarray, duration: np.ndarray) -> None:
        if self._sketch is None:
            self._states.append(state.astype(np.int32))
            self._durations.append(np.asarray(duration, float))
            self._n += len(state)
            if self._n > self.budget:
                for part_state, part_duration in zip(self._states, self._durations):
                    self._to_sketch(part_state, part_duration)
                self._states, self._durations = [], []
        else:
            self._to_sketch(state, duration)

    def quantiles(self, n_states: int, qs: tuple[float, ...]) -> list[np.ndarray]:
        """Per state, the ``qs`` quantiles of its dwell times; NaN for states never left."""
        if self._sketch is None:
            state = np.concatenate(self._states) if self._states else np.zeros(0, np.int32)
            values = np.concatenate(self._durations) if self._durations else np.zeros(0)
            return _group_quantiles(state, values, n_states, qs)
        keys, (counts,) = self._sketch.result()
        state, bucket = keys >> _SHIFT, keys & _LOW
        inside = state < n_states
        state, bucket, cum = state[inside], bucket[inside], np.cumsum(counts[inside])
        first = (
            np.flatnonzero(np.r_[True, state[1:] != state[:-1]])
            if len(state)
            else np.zeros(0, np.int64)
        )
        last = np.r_[first[1:], len(state)] - 1
        before = np.where(first > 0, cum[first - 1], 0.0)  # visits of the states ahead in key order
        out = np.full((len(qs), n_states), np.nan)
        for i, q in enumerate(qs):
            h = (cum[last] - before - 1) * q
            lo, hi = (
                self._value(cum, bucket, before + np.floor(h)),
                self._value(cum, bucket, before + np.ceil(h)),
            )
            out[i, state[first]] = lo + (h - np.floor(h)) * (hi - lo)
        return list(out)

    def _value(self, cum: np.ndarray, bucket: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """The sketch's values of the ``rank``-th smallest times (0-based, counted over the
        (state, bucket) cells in key order, whose running counts are ``cum``)."""
        b = bucket[np.searchsorted(cum, rank, side="right")]
        return np.where(b == 0, 0.0, 2 * self.FLOOR * self._gamma ** (b - 1.0) / (self._gamma + 1))

    def _to_sketch(self, state: np.ndarray, duration: np.ndarray) -> None:
        d = np.asarray(duration, float)
        bucket = np.zeros(len(d), np.int64)
        pos = d > 0
        # bucket k + 1 holds (FLOOR * gamma**(k-1), FLOOR * gamma**k]; bucket 1 also (0, FLOOR]
        bucket[pos] = 1 + np.maximum(
            0, np.ceil(np.log(d[pos] / self.FLOOR) / np.log(self._gamma))
        ).astype(np.int64)
        if self._sketch is None:
            self._sketch = KeyedSums(1)
        self._sketch.add(state, bucket, [None])


def _ranks(text: np.ndarray) -> np.ndarray:
    """Each string's rank in sorted order (equal strings, equal ranks), for np.lexsort."""
    return (
        np.unique(text, return_inverse=True)[1].reshape(-1) if len(text) else np.zeros(0, np.int64)
    )


def bootstrap_ratio(
    num: np.ndarray,
    den: np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of ``sum(num) / sum(den)`` over resampled rows.

    ``num`` is ``rows x k`` and ``den`` is ``rows x k`` or ``rows x 1``: each row is one
    trace, resampled whole. Returns ``(lo, hi)``, arrays of length ``k``; NaN when there are
    fewer than two rows or ``n_boot`` is 0. The same ``seed`` gives the same interval
    (that of :func:`bootstrap_ratio_sparse` on the same numbers).
    """
    den_of = (
        np.arange(num.shape[1])
        if den.shape[1] == num.shape[1]
        else np.zeros(num.shape[1], np.int64)
    )
    return bootstrap_ratio_sparse(
        Coo.from_dense(num),
        Coo.from_dense(den),
        den_of,
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
    )


def bootstrap_ratio_sparse(
    num: Coo,
    den: Coo,
    den_of: np.ndarray,
    *,
    confidence: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of ``sum(num[:, j]) / sum(den[:, den_of[j]])`` per
    column ``j``, over resampled rows (traces, resampled whole); as :func:`bootstrap_ratio`
    (see :func:`_bootstrap_by_column`)."""
    by_den = np.argsort(den_of, kind="stable")  # columns sharing a denominator side by side
    position = np.empty(len(by_den), np.int64)
    position[by_den] = np.arange(len(by_den))
    parts = [(num.row, position[num.col], num.val)]
    sorted_lo, sorted_hi = _bootstrap_by_column(
        _by_column(parts, parts, num.n_cols, num.n_rows),
        _by_column([den[:3]], [den[:3]], den.n_cols, den.n_rows),
        np.asarray(den_of)[by_den],
        confidence=confidence,
        n_boot=n_boot,
        seed=seed,
    )
    lo, hi = np.empty(len(by_den)), np.empty(len(by_den))
    lo[by_den], hi[by_den] = sorted_lo, sorted_hi
    return lo, hi


class ByColumn(NamedTuple):
    """Sparse ``n_rows x (len(bounds) - 1)`` entries sorted by column, rows in input order
    within a column: column ``j``'s are ``row[bounds[j]:bounds[j + 1]]`` (int32) and ``val[...]``."""

    row: np.ndarray
    val: np.ndarray
    bounds: np.ndarray
    n_rows: int


def _by_column(
    parts: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    again: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    n_cols: int,
    n_rows: int,
) -> ByColumn:
    """The entries of ``(row, col, val)`` parts (``again``: the same parts, read a second
    time) as :class:`ByColumn`, by a stable counting sort: the first reading counts the
    columns, the second scatters each part, so only one part's temporaries exist at a time."""
    counts = np.zeros(n_cols, np.int64)
    for _, col, _ in parts:
        counts += np.bincount(col, minlength=n_cols)
    bounds = np.r_[0, np.cumsum(counts)]
    row_out, val_out = np.empty(int(bounds[-1]), np.int32), np.empty(int(bounds[-1]))
    fill = bounds[:-1].copy()  # where each column's next entry goes
    for row, col, val in again:
        if not len(col):
            continue
        order = np.argsort(col, kind="stable")
        col = col[order]
        first = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        size = np.diff(np.r_[first, len(col)])
        at = np.repeat(fill[col[first]] - first, size) + np.arange(len(col))
        row_out[at], val_out[at] = row[order], val[order]
        fill[col[first]] += size
    return ByColumn(row_out, val_out, bounds, n_rows)


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


def _bootstrap_by_column(
    num: ByColumn, den: ByColumn, den_of: np.ndarray, *, confidence: float, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of :func:`bootstrap_ratio_sparse` for columns whose denominators
    ``den_of`` ascend (columns sharing one side by side).

    Memory is bounded whatever the numbers of rows and columns: the columns are taken in
    groups whose resampled statistics fit ``_STAT_CELLS`` cells, each group's per-row sums
    as a dense matrix when small (or dense) enough and as gathered entries otherwise.
    Every group sees the same resamples (kept when they fit ``_WEIGHT_BYTES``, else drawn
    again from ``seed``), so the interval does not depend on the grouping.
    """
    rows, k = num.n_rows, len(num.bounds) - 1
    lo, hi = np.full(k, np.nan), np.full(k, np.nan)
    if rows < 2 or n_boot <= 0 or k == 0:
        return lo, hi
    alpha = (1.0 - confidence) / 2.0
    width = max(1, _STAT_CELLS // n_boot)
    resamples = _Resamples(rows, n_boot, seed, keep=k > width)
    kept_cols, kept_sums = (
        np.zeros(0, np.int64),
        np.zeros((n_boot, 0)),
    )  # the previous group's denominators
    for c0 in range(0, k, width):
        c1 = min(k, c0 + width)
        num_m = _operand(num.row, num.val, num.bounds[c0 : c1 + 1], rows)
        den_cols, den_index = np.unique(den_of[c0:c1], return_inverse=True)
        reused = np.isin(den_cols, kept_cols)
        den_m = _operand(*_columns(den, den_cols[~reused]), rows)
        num_sums, den_sums = np.empty((n_boot, c1 - c0)), np.empty((n_boot, len(den_cols)))
        den_sums[:, reused] = kept_sums[:, np.searchsorted(kept_cols, den_cols[reused])]
        for start, weights in resamples:
            num_sums[start : start + len(weights)] = _times(weights, num_m)
            den_sums[start : start + len(weights), ~reused] = _times(weights, den_m)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats = num_sums / den_sums[:, den_index.reshape(-1)]
        kept_cols, kept_sums = den_cols, den_sums
        stats.sort(axis=0)  # NaN (0 / 0: a resample without the source or any time) sorts last
        stats = stats.T.ravel()
        valid = np.count_nonzero(~np.isnan(stats.reshape(c1 - c0, n_boot)), axis=1)
        firsts = np.arange(c1 - c0) * n_boot
        lo[c0:c1], hi[c0:c1] = (
            linear_quantiles(stats, firsts, valid, q) for q in (alpha, 1.0 - alpha)
        )
    return lo, hi


def _columns(entries: ByColumn, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row, val, bounds)`` of the columns ``cols`` (ascending) of ``entries``: views
    when the columns are consecutive, else gathered."""
    if len(cols) and cols[-1] - cols[0] + 1 == len(cols):
        return entries.row, entries.val, entries.bounds[cols[0] : cols[-1] + 2]
    first, size = entries.bounds[cols], entries.bounds[cols + 1] - entries.bounds[cols]
    at = np.repeat(first - np.r_[0, np.cumsum(size)[:-1]], size) + np.arange(int(size.sum()))
    return entries.row[at], entries.val[at], np.r_[0, np.cumsum(size)]


def linear_quantiles(values: np.ndarray, start: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """The ``q``-quantile of each segment ``values[start[i]:start[i] + n[i]]`` (each sorted
    ascending), by numpy's default method (linear interpolation, computed as
    ``np.quantile`` computes it); NaN for empty segments."""
    n = np.asarray(n)
    virtual = (n - 1) * q
    below = np.floor(virtual)
    gamma = virtual - below
    if not len(values):
        return np.full(len(n), np.nan)
    last = np.maximum(n - 1, 0)
    top = len(values) - 1  # an empty segment may start past the end
    a = values[np.minimum(start + np.minimum(below, last).astype(np.int64), top)]
    b = values[np.minimum(start + np.minimum(below + 1, last).astype(np.int64), top)]
    d = b - a
    with np.errstate(invalid="ignore"):
        out = np.where(gamma >= 0.5, b - d * (1 - gamma), a + d * gamma)
    return np.where(n > 0, out, np.nan)


class _Resamples:
    """The ``n_boot x rows`` resampling weights (how often each row is drawn), iterated as
    ``(first resample, weights)`` blocks of at most ~16 MB; every iteration gives the same
    weights: kept (as unsigned integers, exact, given as such) when ``keep`` and they fit
    ``_WEIGHT_BYTES``, else drawn again from ``seed`` (as floats)."""

    def __init__(self, rows: int, n_boot: int, seed: int, keep: bool) -> None:
        self.rows, self.n_boot, self.seed = rows, n_boot, seed
        self.batch = max(1, min(n_boot, 2_000_000 // rows))
        dtype = np.uint16 if rows < 2**16 else np.uint32  # a count is at most ``rows``
        fits = n_boot * rows * np.dtype(dtype).itemsize <= _WEIGHT_BYTES
        self._kept = (
            np.concatenate([w.astype(dtype) for _, w in self._drawn()]) if keep and fits else None
        )

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        if self._kept is None:
            yield from self._drawn()
            return
        for start in range(0, self.n_boot, self.batch):
            yield start, self._kept[start : start + self.batch]

    def _drawn(self) -> Iterator[tuple[int, np.ndarray]]:
        rng = np.random.default_rng(self.seed)
        weights = np.empty((self.batch, self.rows))
        for start in range(0, self.n_boot, self.batch):
            b = min(self.batch, self.n_boot - start)
            # Resampling rows with replacement = multinomial counts per row, drawn exactly
            # (and much faster than rng.multinomial) by counting uniform row picks.
            picks = rng.integers(0, self.rows, size=(b, self.rows), dtype=np.int32)
            for i in range(b):
                weights[i] = np.bincount(picks[i], minlength=self.rows)
            yield start, weights[:b]


class _Entries(NamedTuple):
    """A sparse operand of :func:`_times`: column ``j``'s entries are ``row[bounds[j]:bounds[j + 1]]``."""

    row: np.ndarray
    val: np.ndarray
    bounds: np.ndarray
    n_cols: int


def _operand(
    row: np.ndarray, val: np.ndarray, bounds: np.ndarray, n_rows: int
) -> np.ndarray | _Entries:
    """The columns whose entries are ``row[bounds[j]:bounds[j + 1]]`` (distinct rows) as a
    dense ``n_rows x columns`` matrix when that is small (or at least a quarter full and
    not big), else as :class:`_Entries` (views, not copies)."""
    n_cols = len(bounds) - 1
    row, val, bounds = row[bounds[0] : bounds[-1]], val[bounds[0] : bounds[-1]], bounds - bounds[0]
    cells = n_rows * n_cols
    if cells <= _DENSE_CELLS or (cells <= 8 * _DENSE_CELLS and cells <= 4 * len(val)):
        matrix = np.zeros((n_rows, n_cols))
        matrix[row, np.repeat(np.arange(n_cols, dtype=np.int32), np.diff(bounds))] = val
        return matrix
    return _Entries(row, val, bounds, n_cols)


def _times(weights: np.ndarray, operand: np.ndarray | _Entries) -> np.ndarray:
    """``weights @ matrix`` for an :func:`_operand`; sparse entries are gathered in pieces
    of at most ``_STAT_CELLS`` products, each summed per column in entry order (so only
    the gathered weights are read, whatever the number of rows)."""
    if isinstance(operand, np.ndarray):
        return weights.astype(float, copy=False) @ operand
    out = np.zeros((len(weights), operand.n_cols))
    step = max(1, _STAT_CELLS // len(weights))
    bounds = operand.bounds
    for a in range(0, len(operand.row), step):
        b = min(a + step, len(operand.row))
        # the columns with entries in [a, b) and where each starts there
        cols = np.arange(
            np.searchsorted(bounds, a, "right") - 1, np.searchsorted(bounds, b - 1, "right")
        )
        first = np.maximum(bounds[cols], a) - a
        has = np.minimum(bounds[cols + 1], b) - a > first
        products = weights[:, operand.row[a:b]] * operand.val[a:b]
        out[:, cols[has]] += np.add.reduceat(products, first[has], axis=1)
    return out


def per_trace(
    trace: np.ndarray, col: np.ndarray, weights: np.ndarray | None, n_traces: int, n_cols: int
) -> np.ndarray:
    """Sum ``weights`` (or count) into a ``n_traces x n_cols`` matrix at (trace, col)."""
    flat = np.bincount(trace * n_cols + col, weights=weights, minlength=n_traces * n_cols)
    return flat.reshape(n_traces, n_cols).astype(float, copy=False)


def _group_quantiles(
    group: np.ndarray, values: np.ndarray, n_groups: int, qs: tuple[float, ...]
) -> list[np.ndarray]:
    """Per-group quantiles of ``values`` (numpy's default linear interpolation); NaN for
    empty groups. Few groups: ``np.quantile`` each (a partition); many: one sort for all."""
    counts = np.bincount(group, minlength=n_groups)
    present = np.flatnonzero(counts)
    if len(present) <= 64:
        order = group_order(group)
        bounds = np.r_[0, np.cumsum(counts)]
        out = np.full((len(qs), n_groups), np.nan)
        for g in present:
            out[:, g] = np.quantile(values[order[bounds[g] : bounds[g + 1]]], qs)
        return list(out)
    order = np.lexsort((values, group))
    start = np.r_[0, np.cumsum(counts)[:-1]] if n_groups else np.zeros(0, np.int64)
    return [linear_quantiles(values[order], start, counts, q) for q in qs]
