"""Congestion states derived from congestion-window metrics, for logs without state events.

Some qlog writers (aioquic among them) log ``metrics_updated`` (cwnd, bytes in flight,
sometimes ssthresh) but never ``congestion_state_updated``. :func:`derive_states` labels
each metrics update with the RFC 9002 (section 7) NewReno state it implies:

* ``Recovery`` from an update whose cwnd is *smaller* than the previous update's (a
  congestion event reduced the window, RFC 9002 section 7.3.2) through every following
  update until cwnd *grows* again (cwnd does not grow during a recovery period);
* otherwise ``SlowStart`` while cwnd < ssthresh and ``CongestionAvoidance`` once
  cwnd >= ssthresh (RFC 9002 section 7.3.1 and 7.3.3).

ssthresh is the logged value (forward-filled) where the log has one; where it has none it
is *inferred*: infinite until the first reduction, then the cwnd right after the latest
reduction (NewReno sets ssthresh to the reduced window). Known limit: after persistent
congestion collapses the window (RFC 9002 section 7.6) a real NewReno slow-starts back to
the old ssthresh, while the inferred ssthresh makes the regrowth CongestionAvoidance.

Only the changes of state are kept: one row per entered state. The units are whatever the
input uses (bytes for windows, seconds for time); the function only compares them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SLOW_START = "SlowStart"
CONGESTION_AVOIDANCE = "CongestionAvoidance"
RECOVERY = "Recovery"


def _last_index_where(mask: np.ndarray) -> np.ndarray:
    """For each position, the index of the latest True at or before it (-1 if none)."""
    idx = np.where(mask, np.arange(mask.size), -1)
    return np.maximum.accumulate(idx) if idx.size else idx


def ffill(values: np.ndarray) -> np.ndarray:
    """Forward-fill NaNs of a float array (leading NaNs stay NaN)."""
    last = _last_index_where(~np.isnan(values))
    out = np.full(values.shape, np.nan)
    ok = last >= 0
    out[ok] = values[last[ok]]
    return out


def derive_states(metrics: pd.DataFrame) -> pd.DataFrame:
    """State changes implied by a time-ordered metrics series of one connection.

    ``metrics`` has columns ``time`` and ``cwnd`` (NaN where an update did not log it)
    and optionally ``ssthresh``; other columns are carried along. Returns the rows of
    ``metrics`` (with cwnd and ssthresh forward-filled) at which the derived state
    changes, with a ``state`` column, and ``ssthresh_inferred`` (the threshold used
    where none was logged). Rows before the first known cwnd are ignored.

    >>> m = pd.DataFrame({"time": [0.0, 1, 2, 3, 4, 5],
    ...                   "cwnd": [10.0, 20, 40, 20, 20, 22]})
    >>> derive_states(m)[["time", "state"]].to_records(index=False).tolist()
    [(0.0, 'SlowStart'), (3.0, 'Recovery'), (5.0, 'CongestionAvoidance')]
    """
    cwnd = ffill(pd.to_numeric(metrics["cwnd"], errors="coerce").to_numpy(dtype=float))
    known = ~np.isnan(cwnd)
    rows = metrics.loc[known].copy()
    cwnd = cwnd[known]
    if not cwnd.size:
        rows["state"] = pd.Series(dtype=str)
        rows["ssthresh_inferred"] = pd.Series(dtype=float)
        return rows.reset_index(drop=True)
    step = np.diff(cwnd, prepend=cwnd[0])
    reduced = step < 0
    grew = step > 0
    in_recovery = _last_index_where(reduced) > _last_index_where(grew)

    inferred = ffill(np.where(reduced, cwnd, np.nan))
    inferred[np.isnan(inferred)] = np.inf
    if "ssthresh" in rows.columns:
        logged = ffill(pd.to_numeric(metrics["ssthresh"], errors="coerce").to_numpy(dtype=float))[known]
    else:
        logged = np.full(cwnd.shape, np.nan)
    threshold = np.where(np.isnan(logged), inferred, logged)

    state = np.where(in_recovery, RECOVERY, np.where(cwnd < threshold, SLOW_START, CONGESTION_AVOIDANCE))
    change = np.r_[True, state[1:] != state[:-1]]
    rows["cwnd"] = cwnd
    if "ssthresh" in rows.columns:
        rows["ssthresh"] = logged
    rows["state"] = state
    rows["ssthresh_inferred"] = np.where(np.isnan(logged), inferred, np.nan)
    return rows.loc[change].reset_index(drop=True)
