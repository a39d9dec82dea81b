"""Small numpy helpers over integer codes, shared by the readers and the statistics
without pandas (the streamed ``infer`` path never loads it)."""

from __future__ import annotations

import numpy as np


def group_order(codes: np.ndarray) -> np.ndarray:
    """The stable order that groups equal integer codes, e.g. rows by trace (a radix sort
    when the codes fit 16 bits).

    >>> group_order(np.array([2, 0, 2, 1, 0])).tolist()
    [1, 4, 3, 0, 2]
    """
    if len(codes) and codes.min() >= 0 and codes.max() < 2**15:
        return np.argsort(codes.astype(np.int16), kind="stable")
    return np.argsort(codes, kind="stable")


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D integer array (sorted, same dtype), by a sort:
    numpy's own (2.x) asks ``np.ma.is_masked`` first, which imports numpy.ma on first use
    (12-30 ms of CPU in ``statemine infer``).

    >>> sorted_unique(np.array([3, 1, 3, 2])).tolist(), sorted_unique(np.zeros(0, np.int64))
    ([1, 2, 3], array([], dtype=int64))
    """
    ordered = np.sort(values)
    if ordered.size == 0:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
