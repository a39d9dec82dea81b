"""Sparse sums keyed by (row, column) pairs: the storage of the per-trace statistics.

A pair key is ``row << 32 | column`` (rows are traces, columns states or transitions; both
below 2**31), so sorting keys sorts by row, then column. :class:`KeyedSums` adds values
per pair chunk by chunk in memory proportional to the distinct pairs.
"""

from __future__ import annotations

import numpy as np

from ..parse._linescan import PairSums

#: A pair key is ``row << 32 | column``: rows (traces) and columns below 2**31.
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1


class KeyedSums:
    """Running sums of a few values per (row, column) pair, for pairs arriving chunk by
    chunk; rows and columns are non-negative and below 2**31.

    The pairs go into a hash table in C (:class:`~statemine.parse._linescan.PairSums`,
    without the GIL): each chunk costs time proportional to its length, whether its pairs
    are new or known, and memory holds about 40 bytes per distinct pair (keys, sums, table
    and growth room), nothing per chunk. Each sum adds its values one by one in arrival
    order, so the sums equal those of one :func:`unique_sums` over all chunks bit for bit.
    """

    def __init__(self, n_values: int) -> None:
        self.n_values = n_values
        self._acc = PairSums(n_values)
        self._taken: tuple[np.ndarray, np.ndarray] | None = None  # sorted, from result()

    def add(self, row: np.ndarray, col: np.ndarray, values: list[np.ndarray | None]) -> None:
        """Add ``values[i][j]`` to value ``i`` of the pair ``(row[j], col[j])`` (None adds 1)."""
        if not len(row):
            return
        if self._taken is not None and not len(self._acc):  # adding after result(): carry on
            keys, sums = self._taken
            self._acc.add(keys, [np.ascontiguousarray(v) for v in sums])
            self._taken = None
        self._acc.add(
            _pair_keys(row, col),
            [None if v is None else np.ascontiguousarray(v, np.float64) for v in values],
        )

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """``(keys, sums)``: distinct pair keys (``row << 32 | col``) ascending and their
        ``n_values x keys`` sums."""
        if self._taken is not None and not len(self._acc):
            return self._taken
        keys = np.empty(len(self._acc), np.int64)
        sums = np.empty((self.n_values, len(keys)))
        self._acc.take(keys, sums)
        if not (np.diff(keys) > 0).all():
            order = np.argsort(keys)
            keys, sums = keys[order], np.take(sums, order, axis=1)
        self._taken = keys, sums
        return self._taken


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


def _split(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns (int32: both are below 2**31) of pair keys."""
    return (keys >> _SHIFT).astype(np.int32), (keys & _LOW).astype(np.int32)


def _pair_keys(row: np.ndarray, col: np.ndarray) -> np.ndarray:
    return (np.asarray(row, np.int64) << _SHIFT) | np.asarray(col, np.int64)
