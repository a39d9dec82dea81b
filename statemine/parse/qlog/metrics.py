"""Metrics updates: their values, the full-resolution table and the count seen before each row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .connections import _Connection
from .vocabulary import _METRIC_COLUMNS


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


def _metrics_frame(conn: _Connection, *, line: bool = True, copy: bool = True) -> pd.DataFrame:
    """The connection's metrics updates, time-ordered (log order among equal times):
    ``time``, ``line`` (with ``line``) and the metric columns. ``copy=False`` gives columns
    that are views of the connection's flat rows (no copy: the caller must own them, and
    nothing may extend ``conn.metrics`` any more); a 1 GB JSON-SEQ file's 912,000 updates
    then cost 72 bytes each, not 144 at the peak."""
    metrics = conn.metric_rows()
    if conn.unordered:
        metrics = metrics[np.lexsort((metrics[:, 1], metrics[:, 0]))]
    columns: dict[str, np.ndarray] = {"time": metrics[:, 0]}
    if line:
        columns["line"] = metrics[:, 2].astype("int64")
    columns.update({name: metrics[:, 3 + k] for k, name in enumerate(_METRIC_COLUMNS)})
    return pd.DataFrame(columns, copy=copy)
