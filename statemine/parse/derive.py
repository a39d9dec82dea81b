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
        logged = ffill(pd.to_numeric(metrics["ssthresh"], errors="coerce").to_numpy(dtype=float))[
            known
        ]
    else:
        logged = np.full(cwnd.shape, np.nan)
    threshold = np.where(np.isnan(logged), inferred, logged)

    state = np.where(
        in_recovery, RECOVERY, np.where(cwnd < threshold, SLOW_START, CONGESTION_AVOIDANCE)
    )
    change = np.r_[True, state[1:] != state[:-1]]
    rows["cwnd"] = cwnd
    if "ssthresh" in rows.columns:
        rows["ssthresh"] = logged
    rows["state"] = state
    rows["ssthresh_inferred"] = np.where(np.isnan(logged), inferred, np.nan)
    return rows.loc[change].reset_index(drop=True)


APPLICATION_LIMITED = "ApplicationLimited"
PROBE_TIMEOUT = "ProbeTimeout"


#: Default for "no undo events" (read only, so one shared array is safe as a default).
_NO_UNDO = np.empty(0)
_NO_UNDO.flags.writeable = False


def recovery_periods(
    congestion: np.ndarray,
    congestion_sent: np.ndarray,
    sent_time: np.ndarray,
    sent_pn: np.ndarray,
    ack_time: np.ndarray,
    ack_largest: np.ndarray,
    congestion_pn: np.ndarray | None = None,
    undo_time: np.ndarray = _NO_UNDO,
    undo_pn: np.ndarray = _NO_UNDO,
) -> list[tuple[float, float, bool]]:
    """RFC 9002 recovery periods ``[(start, end, undone)]`` (seconds; end inf when it never
    ends; ``undone`` when a spurious loss ended it).

    A congestion event at ``congestion[i]`` (a loss declared, or a window reduction) whose
    packet was sent after the latest period's start (``congestion_sent[i]``; NaN: unknown,
    the event's own time is used) starts a period (RFC 9002 section 7.3.2,
    OnCongestionEvent); the period ends when a packet sent after it began is acknowledged:
    at the first ACK whose largest acknowledged packet number reaches the first packet sent
    after the start -- or when the loss that started it proves spurious (``undo_time``,
    ``undo_pn``: spurious losses; ``congestion_pn``: the lost packets' numbers; quic-go then
    restores the window).
    ``sent_*`` are the application-space packets sent (time-ordered), ``ack_*`` the ACKs
    received (time-ordered, largest acknowledged packet number of each).

    >>> recovery_periods(np.array([1.0, 1.5, 4.0]), np.array([0.9, 1.2, 3.9]), np.array([0.5, 1.2, 2.0, 4.5]),
    ...                  np.array([1, 2, 3, 4]), np.array([1.1, 2.5, 3.0, 5.0]), np.array([1, 1, 2, 4]))
    [(1.0, 3.0, False), (4.0, 5.0, False)]
    """
    best = np.maximum.accumulate(ack_largest) if ack_largest.size else ack_largest
    periods: list[tuple[float, float, bool]] = []
    start = end = -np.inf
    order = np.argsort(congestion, kind="stable")
    pns = np.full(congestion.shape, np.nan) if congestion_pn is None else congestion_pn
    for now, sent, pn in zip(congestion[order], congestion_sent[order], pns[order]):
        sent = now if np.isnan(sent) else sent
        if sent <= start or now < end:
            continue  # a packet sent before the period began, or still in the period
        start = float(now)
        first = int(np.searchsorted(sent_time, start, side="right"))
        if first >= sent_pn.size:
            end = np.inf
        else:
            k = max(
                int(np.searchsorted(best, sent_pn[first], side="left")),
                int(np.searchsorted(ack_time, start, side="right")),
            )
            end = float(ack_time[k]) if k < ack_time.size else np.inf
        undone = undo_time[(undo_pn == pn) & (undo_time > start) & (undo_time < end)]
        if undone.size:
            end = float(undone.min())
        periods.append((start, end, bool(undone.size)))
    return periods


def _app_limited(
    cwnd: np.ndarray, inflight: np.ndarray, slow: np.ndarray, slack: float
) -> np.ndarray:
    """Whether the sender is application limited at each update, judged as quic-go's cubic
    sender does on each ACK (isCwndLimited, with the bytes in flight *before* the ACK): at
    an update whose bytes in flight fell (an ACK), the previous update's value is compared
    with the window -- limited by the window when at most ``slack`` bytes below it, or over
    half of it in slow start; between ACKs the verdict stands."""
    prior = np.r_[np.nan, inflight[:-1]]
    ack = inflight < prior
    with np.errstate(invalid="ignore"):
        window_limited = (prior >= cwnd - slack) | (slow & (prior > cwnd / 2))
    verdict = np.where(ack, np.where(window_limited, 0.0, 1.0), np.nan)
    return ffill(verdict) == 1


def _count_at(time: np.ndarray, count_time: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The latest of the (time-ordered) ``count`` values logged at or before each ``time``
    (0 before the first)."""
    k = np.searchsorted(count_time, time, side="right") - 1
    return np.where(k >= 0, count[np.maximum(k, 0)], 0.0) if count.size else np.zeros(time.shape)


def end_at_window_growth(
    periods: list[tuple[float, float, bool]], time: np.ndarray, cwnd: np.ndarray
) -> list[tuple[float, float, bool]]:
    """``periods`` with each one ended, as undone, at the first update inside it whose cwnd
    is larger than the update's before: the window does not grow during a recovery period
    (RFC 9002 section 7.3.2), so growth means the sender left it by undoing the reduction
    (quiche CUBIC's rollback after a spurious loss restores cwnd and ssthresh and logs no
    spurious_loss). ``time``/``cwnd``: the metrics updates, time-ordered, cwnd forward-filled.

    >>> end_at_window_growth([(1.0, 5.0, False)], np.array([0.0, 1.0, 2.0, 3.0]),
    ...                      np.array([20.0, 10.0, 10.0, 20.0]))
    [(1.0, 3.0, True)]
    """
    grown = time[np.r_[False, np.diff(cwnd) > 0]]  # times of the updates that grew cwnd
    out = []
    for start, end, undone in periods:
        k = int(np.searchsorted(grown, start, side="right"))
        if k < grown.size and grown[k] < end:
            out.append((start, float(grown[k]), True))
        else:
            out.append((start, end, undone))
    return out


def derive_states_rfc9002(
    metrics: pd.DataFrame,
    periods: list[tuple[float, float, bool]],
    *,
    app_limited_slack: float = 3 * 1280.0,
    pto_count: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """State changes from metrics and RFC 9002 recovery periods (packet events known).

    ``Recovery`` inside each period; outside them ``ApplicationLimited`` where the window is
    not the limit (:func:`_app_limited`: at an ACK, the bytes in flight before it below cwnd
    by more than ``app_limited_slack`` bytes -- quic-go's three 1280-byte packets -- and in
    slow start at most half the window), else ``SlowStart`` below ssthresh (logged, or
    inferred as in :func:`derive_states`: the window right after the latest reduction) and
    ``CongestionAvoidance`` above; window reductions within an undone period do not count
    (the sender restored its window and threshold). Where the stack logs its PTO count
    (``pto_count``: time-ordered ``(times, counts)``; quic-go, quiche), ``ProbeTimeout`` while the
    latest count is above 0 (a PTO fired and no ACK came since, RFC 9002 section 6.2),
    before every other state. States are evaluated at every metrics update, at each
    period's start and end and at each logged count (metrics forward-filled); only changes
    are kept, with ``ssthresh_inferred`` as in :func:`derive_states`.

    >>> m = pd.DataFrame({"time": [0.0, 1.0, 2.0, 3.0, 4.0], "cwnd": [10e3, 20e3, 10e3, 10e3, 11e3],
    ...                   "inflight": [9e3, 19e3, 2e3, 1e3, 9e3]})
    >>> derive_states_rfc9002(m, [(1.5, 2.5, False)])[["time", "state"]].to_records(index=False).tolist()
    [(0.0, 'SlowStart'), (1.5, 'Recovery'), (2.5, 'CongestionAvoidance'), (3.0, 'ApplicationLimited')]
    """
    base = metrics.reset_index(drop=True)
    bounds = [t for start, end, _ in periods for t in (start, end) if np.isfinite(t)]
    if pto_count is not None:
        bounds += pto_count[0].tolist()
    rows = pd.concat([base, pd.DataFrame({"time": bounds})], ignore_index=True)
    rows = rows.iloc[np.argsort(rows["time"].to_numpy(float), kind="stable")].reset_index(drop=True)
    for column in rows.columns.drop(
        ["time", "line"], errors="ignore"
    ):  # period bounds carry the latest values
        rows[column] = ffill(pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float))
    cwnd = rows["cwnd"].to_numpy(float)
    known = ~np.isnan(cwnd)
    rows, cwnd = rows.loc[known].reset_index(drop=True), cwnd[known]
    if not cwnd.size:
        rows["state"] = pd.Series(dtype=str)
        rows["ssthresh_inferred"] = pd.Series(dtype=float)
        return rows
    time = rows["time"].to_numpy(float)
    in_recovery = np.zeros(time.size, dtype=bool)
    reduced = np.diff(cwnd, prepend=cwnd[0]) < 0
    for start, end, undone in periods:
        in_recovery |= (time >= start) & (time < end)
        if undone:
            reduced &= ~((time >= start) & (time <= end))
    inferred = ffill(np.where(reduced, cwnd, np.nan))
    inferred[np.isnan(inferred)] = np.inf
    logged = (
        rows["ssthresh"].to_numpy(float)
        if "ssthresh" in rows.columns
        else np.full(cwnd.shape, np.nan)
    )
    threshold = np.where(np.isnan(logged), inferred, logged)
    slow = cwnd < threshold
    inflight = (
        rows["inflight"].to_numpy(float)
        if "inflight" in rows.columns
        else np.full(cwnd.shape, np.nan)
    )
    limited = _app_limited(cwnd, inflight, slow, app_limited_slack)
    probing = (
        np.zeros(time.size, dtype=bool) if pto_count is None else _count_at(time, *pto_count) > 0
    )
    state = np.where(
        probing,
        PROBE_TIMEOUT,
        np.where(
            in_recovery,
            RECOVERY,
            np.where(
                limited, APPLICATION_LIMITED, np.where(slow, SLOW_START, CONGESTION_AVOIDANCE)
            ),
        ),
    )
    change = np.r_[True, state[1:] != state[:-1]]
    rows["cwnd"] = cwnd
    rows["state"] = state
    rows["ssthresh_inferred"] = np.where(np.isnan(logged), inferred, np.nan)
    return rows.loc[change].reset_index(drop=True)
