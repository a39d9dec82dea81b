"""Sparse sums keyed by (row, column) pairs: the storage of the per-trace statistics.

A pair key is ``row << 32 | column`` (rows are traces, columns states or transitions; both
below 2**31), so sorting keys sorts by row, then column. :class:`KeyedSums` adds values
per pair chunk by chunk in memory proportional to the distinct pairs.
"""

from __future__ import annotations

import numpy as np

#: A pair key is ``row << 32 | column``: rows (traces) and columns below 2**31.
_SHIFT = 32
_LOW = (1 << _SHIFT) - 1
#: Stored pair sums are re-sorted by column or summed per source this many at a time (bounds the temporaries).
_CHUNK = 1 << 20


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
