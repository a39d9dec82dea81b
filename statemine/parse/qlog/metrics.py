"""Metrics updates: their values, the full-resolution table and the count seen before each row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .connections import _Connection
from .vocabulary import _METRIC_COLUMNS, _METRIC_STRIDE


def _metrics_seen(
    m_time: np.ndarray, m_seq: np.ndarray, time: np.ndarray, seq: np.ndarray
) -> np.ndarray:
    """For each row (time, seq), how many metrics updates (sorted by (m_time, m_seq)) come
    at or before it."""
    lo = np.searchsorted(m_time, time, side="left")
    hi = np.searchsorted(m_time, time, side="right")
    out = hi.copy()
    for i in np.flatnonzero(hi > lo):  # ties in time: order by seq
        out[i] = lo[i] + np.searchsorted(m_seq[lo[i] : hi[i]], seq[i], side="right")
    return out


def _metrics_frame(conn: _Connection) -> pd.DataFrame:
    """The connection's metrics updates, time-ordered (log order among equal times):
    ``time``, ``line`` and the metric columns."""
    metrics = conn.metric_rows()
    if conn.unordered:
        metrics = metrics[np.lexsort((metrics[:, 1], metrics[:, 0]))]
    columns = [0, *range(3, _METRIC_STRIDE)]
    frame = pd.DataFrame(
        metrics[:, columns], columns=["time", *_METRIC_COLUMNS], copy=False
    )  # one copy
    frame.insert(1, "line", metrics[:, 2].astype("int64"))
    return frame
