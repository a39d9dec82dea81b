"""Sufficient statistics of state visits and the tables computed from them.

:class:`VisitStats` adds up closed visits (:mod:`statemine.visitfold`) into per-trace
matrices and dwell times, chunk by chunk, so the same code serves a whole
:class:`~statemine.traces.TraceSet` (:func:`statemine.summarize`) and a log streamed block
by block (:mod:`statemine.stream`). :meth:`VisitStats.columns` gives the tables as numpy
columns; only :meth:`VisitStats.tables` (DataFrames) needs pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .visitfold import OUTSIDE, VisitChunk, group_order

if TYPE_CHECKING:
    import pandas as pd

INITIAL = "INITIAL"
TERMINAL = "TERMINAL"


class VisitStats:
    """Sufficient statistics of state visits, added chunk by chunk (see
    :mod:`statemine.visitfold`), from which :meth:`tables` computes every number of the
    state and transition tables and their bootstrap intervals.

    Memory: traces x states and traces x transitions matrices plus the dwell times
    (:class:`DwellTimes`, bounded); nothing grows with the number of lines per trace.
    """

    def __init__(self, dwell_budget: int | None = None) -> None:
        self.n_traces = 0
        self.n_states = 0
        self.time = np.zeros((0, 0))  # traces x states, seconds (capacity; see n_traces/n_states)
        self.visits = np.zeros((0, 0))  # traces x states, visit counts
        self.edges = np.zeros((0, 0))  # traces x transitions, counts
        self.edge_src = np.zeros(0, np.int64)  # per transition column: source state or OUTSIDE (INITIAL)
        self.edge_dst = np.zeros(0, np.int64)  # ... destination state or OUTSIDE (TERMINAL)
        self._edge_of = np.full((1, 1), -1, np.int64)  # [src + 1, dst + 1] -> transition column
        self.dwell = DwellTimes() if dwell_budget is None else DwellTimes(dwell_budget)

    def add(self, chunk: VisitChunk, n_traces: int, n_states: int) -> None:
        """Add closed visits; codes are below ``n_traces`` and ``n_states``."""
        self._reserve(n_traces, n_states)
        duration = chunk.end - chunk.start
        _accumulate(self.time, chunk.trace, chunk.state, duration, self.n_states)
        _accumulate(self.visits, chunk.trace, chunk.state, None, self.n_states)
        self.dwell.add(chunk.state, duration)
        src = np.concatenate([np.full(len(chunk.first_trace), OUTSIDE), chunk.state])
        dst = np.concatenate([chunk.first_state, chunk.next])
        trace = np.concatenate([chunk.first_trace, chunk.trace])
        edge = self._edge_columns(src, dst)
        _accumulate(self.edges, trace, edge, None, len(self.edge_src))

    def tables(self, names: list[str], *, confidence: float = 0.95, n_boot: int = 1000,
               seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(states, transitions)`` as documented in :func:`statemine.analyze.state_stats`
        and :func:`statemine.analyze.transition_stats`; ``names[code]`` names state
        ``code``. The states table's ``attrs["dwell_quantiles"]`` is :attr:`DwellTimes.accuracy`."""
        import pandas as pd

        states, transitions = self.columns(names, confidence=confidence, n_boot=n_boot, seed=seed)
        frames = []
        for columns, text in ((states, ("state",)), (transitions, ("src", "dst"))):
            frames.append(pd.DataFrame({k: pd.Series(v, dtype=str) if k in text else v for k, v in columns.items()}))
        frames[0].attrs["dwell_quantiles"] = self.dwell.accuracy
        return frames[0], frames[1]

    def columns(self, names: list[str], *, confidence: float = 0.95, n_boot: int = 1000,
                seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The columns of :meth:`tables` as numpy arrays (names as object arrays of str),
        rows filtered and sorted alike, without pandas."""
        self._reserve(self.n_traces, len(names))
        states, s_num, s_den = self._state_columns(names)
        transitions, e_num, e_den = self._transition_columns(names)
        lo, hi = bootstrap_ratio(np.hstack([s_num, e_num]), np.hstack([np.broadcast_to(s_den, s_num.shape), e_den]),
                                 confidence=confidence, n_boot=n_boot, seed=seed)
        k = s_num.shape[1]
        states["time_fraction_lo"], states["time_fraction_hi"] = lo[:k], hi[:k]
        transitions["probability_lo"], transitions["probability_hi"] = lo[k:], hi[k:]
        # states: most time first, then by name; states never entered are left out
        kept = np.flatnonzero(states["visits"] > 0)
        order = kept[np.lexsort((_ranks(states["state"][kept]), -states["time_fraction"][kept]))]
        by_edge = np.lexsort((_ranks(transitions["dst"]), _ranks(transitions["src"])))
        return ({c: v[order] for c, v in states.items()},
                {c: v[by_edge] for c, v in transitions.items()})

    def _state_columns(self, names: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """The state columns without intervals, and the (num, den) matrices of its fractions."""
        n_states = len(names)
        per_trace = self.time[: self.n_traces, :n_states]
        visits = self.visits[: self.n_traces, :n_states]
        time_s = per_trace.sum(axis=0)
        trace_totals = per_trace.sum(axis=1)
        n_visits = visits.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            fraction = time_s / time_s.sum()
            own = per_trace[trace_totals > 0] / trace_totals[trace_totals > 0, None]
            dwell_mean = time_s / n_visits
        median, p95 = self.dwell.quantiles(n_states, (0.5, 0.95))
        columns = {
            "state": np.array(names, dtype=object),
            "time_s": time_s,
            "time_fraction": fraction,
            "time_fraction_lo": np.full(n_states, np.nan),
            "time_fraction_hi": np.full(n_states, np.nan),
            "mean_trace_fraction": own.mean(axis=0) if len(own) else np.full(n_states, np.nan),
            "dwell_mean": dwell_mean,
            "dwell_median": median,
            "dwell_p95": p95,
            "visits": n_visits.astype("int64"),
            "traces": (visits > 0).sum(axis=0).astype("int64"),
        }
        return columns, per_trace, trace_totals[:, None]

    def _transition_columns(self, names: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """The transition columns without intervals, and the (num, den) matrices of its
        probabilities (per trace: count of the edge, count out of its source)."""
        per_edge = self.edges[: self.n_traces, : len(self.edge_src)]
        _, src_group = np.unique(self.edge_src, return_inverse=True)
        out_of_src = np.zeros((self.n_traces, src_group.max() + 1 if len(src_group) else 0))
        np.add.at(out_of_src.T, src_group, per_edge.T)
        denom = out_of_src[:, src_group]
        total = per_edge.sum(axis=0)
        label = np.array(list(names) + [INITIAL, TERMINAL], dtype=object)
        n_edges = len(self.edge_src)
        columns = {
            "src": label[np.where(self.edge_src == OUTSIDE, len(names), self.edge_src)],
            "dst": label[np.where(self.edge_dst == OUTSIDE, len(names) + 1, self.edge_dst)],
            "count": total.astype("int64"),
            "probability": total / denom.sum(axis=0),
            "probability_lo": np.full(n_edges, np.nan),
            "probability_hi": np.full(n_edges, np.nan),
        }
        return columns, per_edge, denom

    def _edge_columns(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The transition column of each (src, dst) pair, adding columns for new pairs."""
        size = self.n_states + 1
        if self._edge_of.shape[0] < size:
            grown = np.full((size, size), -1, np.int64)
            grown[: self._edge_of.shape[0], : self._edge_of.shape[1]] = self._edge_of
            self._edge_of = grown
        column = self._edge_of[src + 1, dst + 1]
        new = column < 0
        if new.any():
            keys = np.flatnonzero(np.bincount((src[new] + 1) * size + dst[new] + 1))
            start = len(self.edge_src)
            self._edge_of[keys // size, keys % size] = np.arange(start, start + len(keys))
            self.edge_src = np.r_[self.edge_src, keys // size - 1]
            self.edge_dst = np.r_[self.edge_dst, keys % size - 1]
            self.edges = _grown(self.edges, self.edges.shape[0], len(self.edge_src))
            column = self._edge_of[src + 1, dst + 1]
        return column

    def _reserve(self, n_traces: int, n_states: int) -> None:
        """Room for ``n_traces`` x ``n_states`` (capacity grows by half, so growth is amortized)."""
        self.n_traces, self.n_states = max(self.n_traces, n_traces), max(self.n_states, n_states)
        rows = self.n_traces if self.n_traces <= self.time.shape[0] else self.n_traces * 3 // 2
        cols = self.n_states if self.n_states <= self.time.shape[1] else self.n_states * 3 // 2
        self.time = _grown(self.time, rows, cols)
        self.visits = _grown(self.visits, rows, cols)
        self.edges = _grown(self.edges, rows, self.edges.shape[1])


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
        self._sketch: np.ndarray | None = None  # states x buckets counts; bucket 0 holds zeros

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
        out = np.full((len(qs), n_states), np.nan)
        counts = self._sketch
        for g in range(min(n_states, counts.shape[0])):
            cum = np.cumsum(counts[g])
            if not cum[-1]:
                continue
            for i, q in enumerate(qs):
                h = (cum[-1] - 1) * q
                lo, hi = self._value(cum, int(np.floor(h))), self._value(cum, int(np.ceil(h)))
                out[i, g] = lo + (h - np.floor(h)) * (hi - lo)
        return list(out)

    def _value(self, cum: np.ndarray, rank: int) -> float:
        """The sketch's value of the ``rank``-th smallest time (0-based)."""
        bucket = int(np.searchsorted(cum, rank, side="right"))
        if bucket == 0:
            return 0.0
        return 2 * self.FLOOR * self._gamma ** (bucket - 1) / (self._gamma + 1)

    def _to_sketch(self, state: np.ndarray, duration: np.ndarray) -> None:
        d = np.asarray(duration, float)
        bucket = np.zeros(len(d), np.int64)
        pos = d > 0
        # bucket k + 1 holds (FLOOR * gamma**(k-1), FLOOR * gamma**k]; bucket 1 also (0, FLOOR]
        bucket[pos] = 1 + np.maximum(0, np.ceil(np.log(d[pos] / self.FLOOR) / np.log(self._gamma))).astype(np.int64)
        n_states = int(state.max()) + 1 if len(state) else 0
        n_buckets = int(bucket.max()) + 1 if len(bucket) else 1
        if self._sketch is None:
            self._sketch = np.zeros((0, 1), np.int64)
        self._sketch = _grown(self._sketch, max(n_states, self._sketch.shape[0]), max(n_buckets, self._sketch.shape[1]))
        np.add.at(self._sketch, (state.astype(np.int64), bucket), 1)


def _ranks(text: np.ndarray) -> np.ndarray:
    """Each string's rank in sorted order (equal strings, equal ranks), for np.lexsort."""
    return np.unique(text, return_inverse=True)[1].reshape(-1) if len(text) else np.zeros(0, np.int64)


def _accumulate(matrix: np.ndarray, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray | None,
                n_cols: int) -> None:
    """``matrix[rows, cols] += weights`` (or += 1), repeated pairs adding up; ``cols`` are
    below ``n_cols`` and ``rows`` below the traces so far."""
    n_rows = int(rows.max()) + 1 if len(rows) else 0
    if n_rows * n_cols <= 4 * len(rows):  # a dense bincount of the touched block is cheaper
        matrix[:n_rows, :n_cols] += per_trace(rows, cols, weights, n_rows, n_cols)
    else:
        np.add.at(matrix, (rows, cols), 1.0 if weights is None else weights)


def _grown(matrix: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``matrix`` zero-padded to at least ``rows`` x ``cols`` (itself when it is that big)."""
    if matrix.shape[0] >= rows and matrix.shape[1] >= cols:
        return matrix
    out = np.zeros((max(rows, matrix.shape[0]), max(cols, matrix.shape[1])), matrix.dtype)
    out[: matrix.shape[0], : matrix.shape[1]] = matrix
    return out


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
    fewer than two rows or ``n_boot`` is 0. The same ``seed`` gives the same interval.
    """
    rows, k = num.shape
    if rows < 2 or n_boot <= 0:
        nan = np.full(k, np.nan)
        return nan, nan.copy()
    rng = np.random.default_rng(seed)
    alpha = (1.0 - confidence) / 2.0
    stats = np.empty((n_boot, k))
    batch = max(1, min(n_boot, 2_000_000 // rows))  # bound the weights matrix to ~16 MB
    weights = np.empty((batch, rows))
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        # Resampling rows with replacement = multinomial counts per row, drawn exactly
        # (and much faster than rng.multinomial) by counting uniform row picks.
        picks = rng.integers(0, rows, size=(b, rows), dtype=np.int32)
        for i in range(b):
            weights[i] = np.bincount(picks[i], minlength=rows)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats[start:start + b] = (weights[:b] @ num) / (weights[:b] @ den)
    lo = np.nanquantile(stats, alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    hi = np.nanquantile(stats, 1.0 - alpha, axis=0) if np.isfinite(stats).any() else np.full(k, np.nan)
    return lo, hi


def per_trace(trace: np.ndarray, col: np.ndarray, weights: np.ndarray | None, n_traces: int, n_cols: int) -> np.ndarray:
    """Sum ``weights`` (or count) into a ``n_traces x n_cols`` matrix at (trace, col)."""
    flat = np.bincount(trace * n_cols + col, weights=weights, minlength=n_traces * n_cols)
    return flat.reshape(n_traces, n_cols).astype(float, copy=False)


def _group_quantiles(group: np.ndarray, values: np.ndarray, n_groups: int, qs: tuple[float, ...]) -> list[np.ndarray]:
    """Per-group quantiles of ``values`` (numpy's default linear interpolation); NaN for
    empty groups."""
    order = group_order(group)
    counts = np.bincount(group, minlength=n_groups)
    bounds = np.r_[0, np.cumsum(counts)]
    out = np.full((len(qs), n_groups), np.nan)
    for g in np.flatnonzero(counts):
        out[:, g] = np.quantile(values[order[bounds[g]:bounds[g + 1]]], qs)
    return list(out)


