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
