"""Dwell times (seconds per visit) by state, and their quantiles: exact, or a mergeable sketch.

A :class:`Dwell` is exact (every visit's state and seconds) while it holds at most
``budget`` visits; past that every time goes into a log-bucket sketch whose quantiles are
within a relative :data:`ALPHA` of the exact ones (the DDSketch construction: Masson, Rim
and Lee, VLDB 2019), so memory stays bounded. Both forms merge exactly: exact samples
concatenate, sketches add their bucket counts (whole numbers), and a merge past the
budget sketches everything -- the same sketch as adding the visits one block at a time,
so a merged :class:`Dwell` gives the quantiles of the whole, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import group_order
from .sums import _LOW, _SHIFT, KeyedSums, unique_sums

#: Relative accuracy of the sketch.
ALPHA = 1e-3
#: Durations below this (seconds, > 0) share the sketch's first bucket.
FLOOR = 1e-9
_GAMMA = (1 + ALPHA) / (1 - ALPHA)


@dataclass(frozen=True, eq=False)
class Dwell:
    """Dwell times of ``n`` visits (picklable, plain numpy).

    Exact (``sketch_keys is None``): ``state`` (int32) and ``seconds`` per visit, in no
    particular order (a multiset: no quantile depends on the order). Sketched:
    ``sketch_keys`` (``state << 32 | bucket``, ascending; bucket 0 holds zeros, bucket
    ``k + 1`` the times in ``(FLOOR * gamma**(k-1), FLOOR * gamma**k]``) and their counts."""

    state: np.ndarray
    seconds: np.ndarray
    sketch_keys: np.ndarray | None
    sketch_counts: np.ndarray
    n: int
    budget: int

    @property
    def accuracy(self) -> str:
        """ "exact", or how the quantiles are approximated."""
        return "exact" if self.sketch_keys is None else f"within {ALPHA:.1%} (sketch)"

    def quantiles(self, n_states: int, qs: tuple[float, ...]) -> list[np.ndarray]:
        """Per state ``0..n_states-1``, the ``qs`` quantiles of its dwell times (numpy's
        linear interpolation when exact); NaN for states never left."""
        if self.sketch_keys is None:
            return _group_quantiles(self.state, self.seconds, n_states, qs)
        return _sketch_quantiles(self.sketch_keys, self.sketch_counts, n_states, qs)

    def recoded(self, codes: np.ndarray) -> Dwell:
        """The same times with state ``s`` renamed ``codes[s]`` (``codes`` ascending, so
        sketch keys stay sorted)."""
        if self.sketch_keys is None:
            return Dwell(
                codes[self.state].astype(np.int32), self.seconds, None, self.sketch_counts, self.n,
                self.budget,
            )  # fmt: skip
        keys = (codes[self.sketch_keys >> _SHIFT] << _SHIFT) | (self.sketch_keys & _LOW)
        return Dwell(self.state, self.seconds, keys, self.sketch_counts, self.n, self.budget)


def exact(state: np.ndarray, seconds: np.ndarray, budget: int) -> Dwell:
    """The dwell times of visits ``state``/``seconds``, sketched when more than ``budget``."""
    return _bounded(
        Dwell(np.asarray(state, np.int32), np.asarray(seconds, float), None, np.zeros(0), len(state), budget)
    )  # fmt: skip


def merge(a: Dwell, b: Dwell) -> Dwell:
    """The dwell times of both (codes already in one numbering); associative and
    commutative up to the order of exact samples, which no quantile depends on."""
    budget = min(a.budget, b.budget)
    if a.sketch_keys is None and b.sketch_keys is None:
        return _bounded(
            Dwell(
                np.concatenate([a.state, b.state]),
                np.concatenate([a.seconds, b.seconds]),
                None,
                np.zeros(0),
                a.n + b.n,
                budget,
            )
        )
    keys = [d.sketch_keys for d in (a, b) if d.sketch_keys is not None]
    counts = [d.sketch_counts for d in (a, b) if d.sketch_keys is not None]
    for d in (a, b):
        if d.sketch_keys is None and d.n:
            k, c = _sketch(d.state, d.seconds)
            keys.append(k)
            counts.append(c)
    all_keys = np.concatenate(keys)
    merged, (summed,) = unique_sums(all_keys >> _SHIFT, all_keys & _LOW, [np.concatenate(counts)])
    return Dwell(np.zeros(0, np.int32), np.zeros(0), merged, summed, a.n + b.n, budget)


def _bounded(d: Dwell) -> Dwell:
    """``d``, sketched when it holds more than its budget of exact times."""
    if d.sketch_keys is not None or d.n <= d.budget:
        return d
    keys, counts = _sketch(d.state, d.seconds)
    return Dwell(np.zeros(0, np.int32), np.zeros(0), keys, counts, d.n, d.budget)


class DwellTimes:
    """Dwell times added block by block (a :class:`Dwell` in the making): exact while at
    most ``budget`` visits have been added, then a sketch (see the module doc)."""

    def __init__(self, budget: int = 1 << 20) -> None:
        self.budget = budget
        self._states: list[np.ndarray] = []
        self._durations: list[np.ndarray] = []
        self._n = 0
        self._sketch: KeyedSums | None = None  # (state, bucket) -> count; bucket 0 holds zeros

    def add(self, state: np.ndarray, duration: np.ndarray) -> None:
        self._n += len(state)
        if self._sketch is None:
            self._states.append(state.astype(np.int32))
            self._durations.append(np.asarray(duration, float))
            if self._n > self.budget:
                self._sketch = KeyedSums(1)
                for part_state, part_duration in zip(self._states, self._durations):
                    self._sketch.add(*_buckets(part_state, part_duration), [None])
                self._states, self._durations = [], []
        else:
            self._sketch.add(*_buckets(state, duration), [None])

    def result(self) -> Dwell:
        if self._sketch is None:
            state = np.concatenate(self._states) if self._states else np.zeros(0, np.int32)
            values = np.concatenate(self._durations) if self._durations else np.zeros(0)
            return Dwell(state, values, None, np.zeros(0), self._n, self.budget)
        keys, (counts,) = self._sketch.result()
        return Dwell(np.zeros(0, np.int32), np.zeros(0), keys, counts, self._n, self.budget)

    @property
    def accuracy(self) -> str:
        return self.result().accuracy

    def quantiles(self, n_states: int, qs: tuple[float, ...]) -> list[np.ndarray]:
        return self.result().quantiles(n_states, qs)


def _buckets(state: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each time's ``(state, bucket)`` in the sketch."""
    d = np.asarray(duration, float)
    bucket = np.zeros(len(d), np.int64)
    pos = d > 0
    # bucket k + 1 holds (FLOOR * gamma**(k-1), FLOOR * gamma**k]; bucket 1 also (0, FLOOR]
    bucket[pos] = 1 + np.maximum(0, np.ceil(np.log(d[pos] / FLOOR) / np.log(_GAMMA))).astype(
        np.int64
    )
    return np.asarray(state, np.int64), bucket


def _sketch(state: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sketch (keys ascending, counts) of some exact times."""
    keys, (counts,) = unique_sums(*_buckets(state, duration), [None])
    return keys, counts


def _sketch_quantiles(
    keys: np.ndarray, counts: np.ndarray, n_states: int, qs: tuple[float, ...]
) -> list[np.ndarray]:
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
        lo = _bucket_value(cum, bucket, before + np.floor(h))
        hi = _bucket_value(cum, bucket, before + np.ceil(h))
        out[i, state[first]] = lo + (h - np.floor(h)) * (hi - lo)
    return list(out)


def _bucket_value(cum: np.ndarray, bucket: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """The sketch's values of the ``rank``-th smallest times (0-based, counted over the
    (state, bucket) cells in key order, whose running counts are ``cum``)."""
    b = bucket[np.searchsorted(cum, rank, side="right")]
    return np.where(b == 0, 0.0, 2 * FLOOR * _GAMMA ** (b - 1.0) / (_GAMMA + 1))


def _group_quantiles(
    group: np.ndarray, values: np.ndarray, n_groups: int, qs: tuple[float, ...]
) -> list[np.ndarray]:
    """Per-group quantiles of ``values`` (numpy's default linear interpolation); NaN for
    empty groups. Few groups: :func:`partition_quantiles` each; many: one sort for all."""
    from .resampling import linear_quantiles

    counts = np.bincount(group, minlength=n_groups)
    present = np.flatnonzero(counts)
    if len(present) <= 64:
        order = group_order(group)
        bounds = np.r_[0, np.cumsum(counts)]
        out = np.full((len(qs), n_groups), np.nan)
        for g in present:
            out[:, g] = partition_quantiles(values[order[bounds[g] : bounds[g + 1]]], qs)
        return list(out)
    order = np.lexsort((values, group))
    start = np.r_[0, np.cumsum(counts)[:-1]] if n_groups else np.zeros(0, np.int64)
    return [linear_quantiles(values[order], start, counts, q) for q in qs]


def partition_quantiles(values: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """``np.quantile(values, qs)`` (numpy's default linear method; NaN when a value is NaN)
    of a non-empty 1-D float array, equal to it bit for bit: one partition at the order
    statistics the ``qs`` need, interpolated as numpy does
    (:func:`~statemine.stats.resampling.linear_quantiles`). ``np.quantile`` itself picks
    them with ``np.unique``, which imports numpy.ma on first use (12-30 ms of CPU).

    >>> partition_quantiles(np.array([4.0, 1.0, 3.0, 2.0]), (0.5, 0.95)).tolist()
    [2.5, 3.8499999999999996]
    """
    from .resampling import linear_quantiles

    n = len(values)
    if np.isnan(values).any():
        return np.full(len(qs), np.nan)
    needed: set[int] = set()
    for q in qs:
        below = min(int(np.floor((n - 1) * q)), n - 1)
        needed.update((below, min(below + 1, n - 1)))
    ordered = np.partition(values, sorted(needed))
    start, count = np.zeros(1, np.int64), np.array([n])
    return np.array([linear_quantiles(ordered, start, count, q)[0] for q in qs])
