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

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import pandas as pd

SLOW_START = "SlowStart"
CONGESTION_AVOIDANCE = "CongestionAvoidance"
RECOVERY = "Recovery"


def _last_index_where(mask: np.ndarray) -> np.ndarray:
    """For each position, the index of the latest True at or before it (-1 if none)."""
    idx = np.where(mask, np.arange(mask.size), -1)
    return np.maximum.accumulate(idx) if idx.size else idx


def ffill_from(before: float, values: np.ndarray) -> tuple[np.ndarray, float]:
    """A chunk of a float series forward-filled (its NaNs take the latest value before
    them), continuing from the chunks before it: ``before`` is their latest value (NaN:
    none yet; leading NaNs then stay NaN). Returns the filled chunk and its latest value
    (``before`` for an empty chunk), the next chunk's ``before``; so a series filled chunk
    by chunk is filled as it is whole.

    >>> ffill_from(2.0, np.array([np.nan, 5.0, np.nan]))
    (array([2., 5., 5.]), 5.0)
    >>> ffill_from(np.nan, np.array([np.nan, 1.0]))
    (array([nan,  1.]), 1.0)
    >>> ffill_from(3.0, np.array([]))
    (array([], dtype=float64), 3.0)
    """
    series = np.r_[before, values]
    last = _last_index_where(~np.isnan(series))
    filled = np.full(series.shape, np.nan)
    ok = last >= 0
    filled[ok] = series[last[ok]]
    return filled[1:], float(filled[-1])


def derive_states(metrics: pd.DataFrame) -> pd.DataFrame:
    """State changes implied by a time-ordered metrics series of one connection.

    ``metrics`` has columns ``time`` and ``cwnd`` (NaN where an update did not log it)
    and optionally ``ssthresh``; other columns are carried along. Returns the rows of
    ``metrics`` (with cwnd and ssthresh forward-filled) at which the derived state
    changes, with a ``state`` column, and ``ssthresh_inferred`` (the threshold used
    where none was logged). Rows before the first known cwnd are ignored. The series in
    one chunk of :func:`derive_states_chunks`.

    >>> m = pd.DataFrame({"time": [0.0, 1, 2, 3, 4, 5],
    ...                   "cwnd": [10.0, 20, 40, 20, 20, 22]})
    >>> derive_states(m)[["time", "state"]].to_records(index=False).tolist()
    [(0.0, 'SlowStart'), (3.0, 'Recovery'), (5.0, 'CongestionAvoidance')]
    """
    return pd.concat(list(derive_states_chunks([metrics])), ignore_index=True)


@dataclass
class _CwndCarry:
    """What :func:`derive_states_chunks` carries from one chunk to the next (values of
    the latest row before the chunk)."""

    cwnd: float = math.nan  # forward-filled (NaN: none known yet)
    ssthresh: float = math.nan  # forward-filled
    recovery: float = 0.0  # 1.0 after a reduction until cwnd grows again
    reduction: float = math.nan  # the cwnd right after the latest reduction
    state: str | None = None


def derive_states_chunks(metrics: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """:func:`derive_states` of a series in consecutive time-ordered chunks (at least
    one, all with the same columns), chunk by chunk with a few carried scalars
    (:class:`_CwndCarry`): the same rows as the series in one chunk, as consecutive
    frames (the last one empty when none has a row)."""
    carry = _CwndCarry()
    made = False
    out = pd.DataFrame()
    for chunk in metrics:
        out = _evaluate_cwnd(chunk, carry)
        if len(out):
            made = True
            yield out
    if not made:
        yield out


def _evaluate_cwnd(metrics: pd.DataFrame, carry: _CwndCarry) -> pd.DataFrame:
    """The state changes among one chunk of :func:`derive_states_chunks`, updating
    ``carry``."""
    raw = pd.to_numeric(metrics["cwnd"], errors="coerce").to_numpy(dtype=float)
    cwnd, _ = ffill_from(carry.cwnd, raw)  # carried below, from the rows kept
    has_logged = "ssthresh" in metrics.columns
    if has_logged:
        raw = pd.to_numeric(metrics["ssthresh"], errors="coerce").to_numpy(dtype=float)
        every, carry.ssthresh = ffill_from(carry.ssthresh, raw)
    known = ~np.isnan(cwnd)
    rows = metrics.loc[known].copy()
    cwnd = cwnd[known]
    if not cwnd.size:
        rows["state"] = pd.Series(dtype=str)
        rows["ssthresh_inferred"] = pd.Series(dtype=float)
        return rows.reset_index(drop=True)
    step = np.diff(cwnd, prepend=cwnd[0] if math.isnan(carry.cwnd) else carry.cwnd)
    reduced = step < 0
    grew = step > 0
    marks = np.where(reduced, 1.0, np.where(grew, 0.0, np.nan))
    recovery, carry.recovery = ffill_from(carry.recovery, marks)
    in_recovery = recovery == 1
    reduction, carry.reduction = ffill_from(carry.reduction, np.where(reduced, cwnd, np.nan))
    inferred = np.where(np.isnan(reduction), np.inf, reduction)
    logged = every[known] if has_logged else np.full(cwnd.shape, np.nan)
    threshold = np.where(np.isnan(logged), inferred, logged)
    state = np.where(
        in_recovery, RECOVERY, np.where(cwnd < threshold, SLOW_START, CONGESTION_AVOIDANCE)
    ).astype(object)
    change = state != np.r_[np.array([carry.state], dtype=object), state[:-1]]
    carry.cwnd, carry.state = float(cwnd[-1]), str(state[-1])
    rows["cwnd"] = cwnd
    if has_logged:
        rows["ssthresh"] = logged
    rows["state"] = state
    rows["ssthresh_inferred"] = np.where(np.isnan(logged), inferred, np.nan)
    return rows.loc[change].reset_index(drop=True)


APPLICATION_LIMITED = "ApplicationLimited"
PROBE_TIMEOUT = "ProbeTimeout"
#: A PTO of the handshake (Initial or Handshake packet number space): the peer has not
#: answered yet; no congestion state. Its PTO counts come negated in ``pto_count``.
HANDSHAKE = "Handshake"


#: Default for "no undo events" (read only, so one shared array is safe as a default).
_NO_UNDO = np.empty(0)
_NO_UNDO.flags.writeable = False


def recovery_periods(
    congestion: np.ndarray,
    congestion_sent: np.ndarray,
    sent_time: np.ndarray,
    sent_pn: np.ndarray,
    ack_time: np.ndarray,
    ack_best: np.ndarray,
    congestion_pn: np.ndarray | None = None,
    undo_time: np.ndarray = _NO_UNDO,
    undo_pn: np.ndarray = _NO_UNDO,
    ties_after: bool = False,
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
    restores the window and the cutback before it, so a later loss of a packet sent before
    the undone period's start begins a period again: ``OnSpuriousLoss`` restores
    ``largestSentAtLastCutback``, internal/congestion/cubic_sender.go of v0.65.0). ``ties_after``: a packet sent at the period's start time counts
    as sent after it (a log whose clock does not move while the sender declares a loss
    and sends on, as quic-go's in virtual time; else as sent before it).
    ``sent_*`` are the application-space packets sent (time-ordered), ``ack_*`` the ACKs
    received (time-ordered; ``ack_best``: the largest packet number acknowledged so far at
    each, non-decreasing). Only a few elements of the packet arrays are read per period
    (binary searches), so they can be memory maps of any length.

    >>> recovery_periods(np.array([1.0, 1.5, 4.0]), np.array([0.9, 1.2, 3.9]), np.array([0.5, 1.2, 2.0, 4.5]),
    ...                  np.array([1, 2, 3, 4]), np.array([1.1, 2.5, 3.0, 5.0]), np.array([1, 1, 2, 4]))
    [(1.0, 3.0, False), (4.0, 5.0, False)]
    """
    periods: list[tuple[float, float, bool]] = []
    start = end = -np.inf
    order = np.argsort(congestion, kind="stable")
    pns = np.full(congestion.shape, np.nan) if congestion_pn is None else congestion_pn
    for now, sent, pn in zip(congestion[order], congestion_sent[order], pns[order]):
        sent = now if np.isnan(sent) else sent
        if (sent < start if ties_after else sent <= start) or now < end:
            continue  # a packet sent before the period began, or still in the period
        before, start = start, float(now)
        first = int(np.searchsorted(sent_time, start, side="left" if ties_after else "right"))
        if first >= sent_pn.size:
            end = np.inf
        else:
            k = max(
                int(np.searchsorted(ack_best, sent_pn[first], side="left")),
                int(np.searchsorted(ack_time, start, side="right")),
            )
            end = float(ack_time[k]) if k < ack_time.size else np.inf
        undone = undo_time[(undo_pn == pn) & (undo_time > start) & (undo_time < end)]
        periods.append((start, float(undone.min()) if undone.size else end, bool(undone.size)))
        if undone.size:  # the sender restores its state before the period, its start too
            start, end = before, periods[-1][1]
    return periods


def end_at_window_growth(
    periods: list[tuple[float, float, bool]], chunks: Iterable[tuple[np.ndarray, np.ndarray]]
) -> list[tuple[float, float, bool]]:
    """``periods`` (in order of start) with each one ended, as undone, at the first update
    inside it that *restores the pre-loss window*: after the period's first window
    reduction, an update whose cwnd grew back to at least the window before that
    reduction. A sender leaves recovery early only by undoing the reduction: quiche
    CUBIC's rollback after a spurious loss sets cwnd back to its value before the loss
    (and logs no spurious_loss). Growth below that window is not an undo: aioquic's CUBIC
    grows its window on every ACK, inside a recovery period too (``on_packet_acked`` has no
    recovery check, unlike its Reno), and logs the growth of the ACK that declared a loss
    right after the ``packet_lost`` and before the reduction; the RFC 9002 period (section
    7.3.2) lasts until a packet sent after it began is acknowledged all the same.
    ``chunks``: the metrics updates ``(time, cwnd)``, time-ordered, in consecutive chunks
    (one: the whole series), cwnd forward-filled; walked once, holding one chunk.

    >>> end_at_window_growth([(1.0, 5.0, False)], [(np.array([0.0, 1.0, 2.0, 3.0]),
    ...                      np.array([20.0, 10.0, 10.0, 20.0]))])
    [(1.0, 3.0, True)]
    >>> end_at_window_growth([(1.0, 5.0, False)], [(np.array([0.0, 1.0, 1.0, 2.0, 3.0]),
    ...                      np.array([20.0, 24.0, 12.0, 15.0, 23.0]))])
    [(1.0, 5.0, False)]
    """
    out = list(periods)
    pending = 0  # periods before this one are settled
    before = math.nan  # the cwnd of the update before the chunk
    target: float | None = None  # the window before the pending period's first reduction
    for time, cwnd in chunks:
        if not cwnd.size:
            continue
        prior = np.r_[before, cwnd[:-1]]
        grew, cut = cwnd > prior, cwnd < prior  # NaN compares False
        while pending < len(out):
            start, end, _ = out[pending]
            low = int(np.searchsorted(time, start, side="left"))
            high = int(np.searchsorted(time, end, side="left"))
            if target is None:
                cuts = np.flatnonzero(cut[low:high])
                if cuts.size:
                    low += int(cuts[0])
                    target = float(prior[low])
                    low += 1
            if target is not None:
                found = np.flatnonzero(grew[low:high] & (cwnd[low:high] >= target))
                if found.size:
                    out[pending] = (start, float(time[low + found[0]]), True)
                    pending, target = pending + 1, None
                    continue
            if high == time.size:
                break  # the period runs past this chunk: look on in the next one
            pending, target = pending + 1, None
        before = float(cwnd[-1])
    return out


def _app_limited(
    cwnd: np.ndarray,
    inflight: np.ndarray,
    prior: np.ndarray,
    slow: np.ndarray,
    slack: float,
    verdict_before: float,
) -> tuple[np.ndarray, float]:
    """Whether the sender is application limited at each update, judged as quic-go's cubic
    sender does on each ACK (isCwndLimited, with the bytes in flight *before* the ACK): at
    an update whose bytes in flight fell below the update's before (``prior``: an ACK), the
    previous update's value is compared with the window -- limited by the window when at
    most ``slack`` bytes below it, or over half of it in slow start; between ACKs the
    verdict stands (``verdict_before``: 1.0 limited, 0.0 not, NaN none yet). Returns the
    verdicts and the last one (carried to the next chunk)."""
    ack = inflight < prior
    with np.errstate(invalid="ignore"):
        window_limited = (prior >= cwnd - slack) | (slow & (prior > cwnd / 2))
    verdict, last = ffill_from(
        verdict_before, np.where(ack, np.where(window_limited, 0.0, 1.0), np.nan)
    )
    return verdict == 1, last


#: Marks a PTO count's row among the rows evaluated (the count; NaN on other rows).
PTO_COLUMN = "_pto_count"
#: Marks a stack's own ApplicationLimited verdict among the rows evaluated (1.0, 0.0; NaN
#: on other rows; see statemine.parse.derive_stacks).
LIMITED_COLUMN = "_limited"


def merge_by_time(streams: list[Iterator[pd.DataFrame]]) -> Iterator[pd.DataFrame]:
    """The rows of time-ordered frame ``streams`` merged by ``time`` (stable: at equal
    times the earlier stream first, each stream in its order), as consecutive frames that
    each hold every row of the times they cover (so an equal-time group is never split).
    Holds about one frame per stream (more only while a stream repeats one time)."""
    held: list[pd.DataFrame] = [pd.DataFrame() for _ in streams]
    live = [True] * len(streams)

    def pull(i: int) -> None:
        for frame in streams[i]:
            if len(frame):
                held[i] = pd.concat([held[i], frame], ignore_index=True) if len(held[i]) else frame
                return
        live[i] = False

    while True:
        for i in range(len(streams)):
            if live[i] and not len(held[i]):
                pull(i)
        ends = [(float(held[i]["time"].iloc[-1]), i) for i in range(len(streams)) if live[i]]
        cutoff, lowest = min(ends) if ends else (math.inf, -1)
        out = []
        for i, frame in enumerate(held):
            if len(frame):
                below = frame["time"].to_numpy(float) < cutoff
                out.append(frame.loc[below])
                held[i] = frame.loc[~below].reset_index(drop=True)
        rows = [frame for frame in out if len(frame)]
        if rows:
            merged = pd.concat(rows, ignore_index=True) if len(rows) > 1 else rows[0]
            order = np.argsort(merged["time"].to_numpy(float), kind="stable")
            yield merged.iloc[order].reset_index(drop=True)
        if lowest < 0:
            return
        if not rows:
            pull(lowest)


@dataclass
class _Carry:
    """What the state evaluation of :func:`derive_states_rfc9002` carries from one chunk
    of rows to the next (each a value of the latest row before the chunk)."""

    values: dict[str, float] = field(default_factory=dict)  # forward-filled columns
    cwnd: float = math.nan  # cwnd (NaN: no known cwnd yet)
    reduction: float = math.nan  # the cwnd right after the latest counted reduction
    inflight: float = math.nan
    verdict: float = math.nan  # the app-limited verdict (1.0, 0.0, NaN: none yet)
    count: float = 0.0  # the latest PTO count
    state: str | None = None
    stack_verdicts: bool = False  # the verdicts come from LIMITED_COLUMN (a stack's own)


def _evaluate(
    rows: pd.DataFrame,
    periods: np.ndarray,
    slack: float,
    carry: _Carry,
    exits: np.ndarray = _NO_UNDO,
) -> pd.DataFrame:
    """The state changes among one chunk of time-ordered ``rows`` (see
    :func:`derive_states_rfc9002`), updating ``carry``. ``periods``: (n, 3) start, end,
    undone."""
    rows = rows.reset_index(drop=True)
    counts = rows.pop(PTO_COLUMN).to_numpy(float)
    own, verdict_after = ffill_from(carry.verdict, rows.pop(LIMITED_COLUMN).to_numpy(float))
    for column in rows.columns.drop(["time", "line"], errors="ignore"):
        values = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)
        rows[column], carry.values[column] = ffill_from(carry.values.get(column, math.nan), values)
    time_all = rows["time"].to_numpy(float)
    logged_at = ~np.isnan(counts)  # the latest count at or before each row (in the chunk)
    count_time, count = time_all[logged_at], counts[logged_at]
    k = np.searchsorted(count_time, time_all, side="right") - 1
    count_all = np.where(k >= 0, count[np.maximum(k, 0)] if count.size else 0.0, carry.count)
    carry.count = float(count[-1]) if count.size else carry.count
    cwnd = rows["cwnd"].to_numpy(float)
    known = ~np.isnan(cwnd)
    rows, cwnd = rows.loc[known].reset_index(drop=True), cwnd[known]
    if not cwnd.size:
        return rows.assign(state=pd.Series(dtype=object), ssthresh_inferred=pd.Series(dtype=float))
    time = time_all[known]
    in_recovery = np.zeros(time.size, dtype=bool)
    reduced = np.diff(cwnd, prepend=cwnd[0] if math.isnan(carry.cwnd) else carry.cwnd) < 0
    near = periods[(periods[:, 0] <= time[-1]) & (periods[:, 1] >= time[0])]
    for start, end, undone in near:
        in_recovery |= (time >= start) & (time < end)
        if undone:
            reduced &= ~((time >= start) & (time <= end))
    reduced |= np.isin(time, exits)  # slow start left at the window then (no reduction)
    reduction, carry.reduction = ffill_from(carry.reduction, np.where(reduced, cwnd, np.nan))
    inferred = np.where(np.isnan(reduction), np.inf, reduction)
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
    prior = np.r_[carry.inflight, inflight[:-1]]
    if carry.stack_verdicts:
        limited, carry.verdict = own[known] == 1, verdict_after
    else:
        limited, carry.verdict = _app_limited(cwnd, inflight, prior, slow, slack, carry.verdict)
    probing = count_all[known] > 0
    handshaking = count_all[known] < 0  # a PTO count of the handshake (kept negative)
    state = np.where(
        handshaking,
        HANDSHAKE,
        np.where(
            probing,
            PROBE_TIMEOUT,
            np.where(
                in_recovery,
                RECOVERY,
                np.where(
                    limited,
                    APPLICATION_LIMITED,
                    np.where(slow, SLOW_START, CONGESTION_AVOIDANCE),
                ),
            ),
        ),
    ).astype(object)
    change = state != np.r_[np.array([carry.state], dtype=object), state[:-1]]
    carry.cwnd, carry.inflight, carry.state = float(cwnd[-1]), float(inflight[-1]), str(state[-1])
    rows["cwnd"] = cwnd
    rows["state"] = state
    rows["ssthresh_inferred"] = np.where(np.isnan(logged), inferred, np.nan)
    return rows.loc[change].reset_index(drop=True)


def derive_states_rfc9002(
    metrics: Iterable[pd.DataFrame],
    periods: list[tuple[float, float, bool]],
    *,
    app_limited_slack: float = 3 * 1280.0,
    pto_count: Iterable[pd.DataFrame] = (),
    slow_start_ends: Iterable[float] = (),
    app_limited: Iterable[pd.DataFrame] | None = None,
) -> Iterator[pd.DataFrame]:
    """State changes from metrics and RFC 9002 recovery periods (packet events known), as
    consecutive frames: one chunk of rows evaluated at a time, with what the evaluation
    needs of the rows before it carried in a few scalars (:class:`_Carry`), so a series read
    in chunks gives the same rows as one read whole (one chunk).

    ``metrics``: the metrics updates (columns ``time``, ``cwnd``, optionally ``line``,
    ``ssthresh``, ``inflight`` and others carried along), time-ordered, in consecutive
    frames (at least one, all with the first one's columns). ``Recovery`` inside each period; outside them ``ApplicationLimited`` where the
    window is not the limit (:func:`_app_limited`: at an ACK, the bytes in flight before it
    below cwnd by more than ``app_limited_slack`` bytes -- quic-go's three 1280-byte packets
    -- and in slow start at most half the window), else ``SlowStart`` below ssthresh
    (logged, or inferred as in :func:`derive_states`: the window right after the latest
    reduction) and ``CongestionAvoidance`` above; window reductions within an undone period
    do not count (the sender restored its window and threshold). Where the stack logs its
    PTO count (``pto_count``: time-ordered frames of ``time`` and ``count``; quic-go,
    quiche), ``ProbeTimeout`` while the latest count is above 0 (a PTO fired and no ACK came
    since, RFC 9002 section 6.2), before every other state. States are evaluated at every
    metrics update, at each period's start and end and at each logged count (metrics
    forward-filled); only changes are kept, with ``ssthresh_inferred`` as in
    :func:`derive_states`. ``slow_start_ends``: times at which slow start ended without a
    reduction (:func:`slow_start_exits`): ssthresh is inferred as the window there.
    ``app_limited``: a stack's own ApplicationLimited verdicts (time-ordered frames of
    ``time`` and ``limited``, 1.0 or 0.0; each stands until the next;
    statemine.parse.derive_stacks) instead of the ACK rule; states are evaluated at each
    verdict too.

    >>> m = pd.DataFrame({"time": [0.0, 1.0, 2.0, 3.0, 4.0], "cwnd": [10e3, 20e3, 10e3, 10e3, 11e3],
    ...                   "inflight": [9e3, 19e3, 2e3, 1e3, 9e3]})
    >>> out = pd.concat(derive_states_rfc9002([m], [(1.5, 2.5, False)]))
    >>> out[["time", "state"]].to_records(index=False).tolist()
    [(0.0, 'SlowStart'), (1.5, 'Recovery'), (2.5, 'CongestionAvoidance'), (3.0, 'ApplicationLimited')]
    """
    table = np.array(periods, dtype=float).reshape(-1, 3)
    exits = np.array(list(slow_start_ends), dtype=float)
    bounds = np.sort(table[:, :2][np.isfinite(table[:, :2])], kind="stable")
    counts = (
        frame.rename(columns={"count": PTO_COLUMN})[["time", PTO_COLUMN]] for frame in pto_count
    )
    updates = iter(metrics)
    first = next(updates)  # its columns are every chunk's
    columns = [*first.columns, PTO_COLUMN, LIMITED_COLUMN]
    streams = [chain([first], updates), iter([pd.DataFrame({"time": bounds})]), counts]
    carry = _Carry(stack_verdicts=app_limited is not None)
    if app_limited is not None:  # first: a verdict holds for the other rows of its time
        streams.insert(
            0,
            (
                frame.rename(columns={"limited": LIMITED_COLUMN})[["time", LIMITED_COLUMN]]
                for frame in app_limited
            ),
        )
    made = False
    for rows in merge_by_time(streams):
        frame = rows.reindex(columns=columns)
        if "line" in frame.columns:
            frame["line"] = frame["line"].astype(float)  # NaN on a period bound or PTO count
        out = _evaluate(frame, table, app_limited_slack, carry, exits)
        if len(out):
            made = True
            yield out
    if not made:
        yield _evaluate(
            first.iloc[:0].reindex(columns=columns), table, app_limited_slack, carry, exits
        )


def slow_start_exits(
    chunks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    periods: list[tuple[float, float, bool]],
    slack: float = 3 * 1280.0,
) -> list[float]:
    """Times (seconds) at which a sender left slow start without a window reduction
    (HyStart), as seen in its window: a window-limited ACK outside recovery -- the bytes
    in flight before it at least cwnd (before it) less ``slack`` bytes -- whose window grew
    by less than the bytes that left flight, where slow start adds a datagram per packet
    acknowledged. The exit is put at the latest window growth before that ACK (the window
    has not changed since, so ssthresh is that window); none while the latest window change
    was a reduction (its ssthresh is known). Sorted, each time once. quic-go:
    ``MaybeExitSlowStart`` sets ``slowStartThreshold = congestionWindow`` and its slow start
    adds ``maxDatagramSize`` per acknowledged packet (internal/congestion/cubic_sender.go,
    v0.55.0 lines 171-178 and 240-245; the same in v0.52.0 and v0.62.0); its metrics log no ssthresh. ``chunks``: ``(time,
    cwnd, inflight)`` of the metrics updates, time-ordered, forward-filled, consecutive.

    >>> t = np.arange(6.0)
    >>> slow_start_exits([(t, np.array([10e3, 20e3, 20e3, 20e3, 20e3, 20e3]),
    ...                    np.array([9e3, 19e3, 21e3, 17e3, 18e3, 18e3]))], [])
    [1.0]
    """
    exits: list[np.ndarray] = []
    cwnd_before = inflight_before = math.nan
    growth = math.nan  # time of the latest window change before the chunk, if a growth
    table = np.array(periods, dtype=float).reshape(-1, 3)
    starts, ends = table[:, 0], table[:, 1]  # in order of start, not overlapping
    for time, cwnd, inflight in chunks:
        if not time.size:
            continue
        prior_c = np.r_[cwnd_before, cwnd[:-1]]
        prior_f = np.r_[inflight_before, inflight[:-1]]
        with np.errstate(invalid="ignore"):
            grew = (cwnd > prior_c) | (np.isnan(prior_c) & ~np.isnan(cwnd))
            changed = grew | (cwnd < prior_c)
            acked = prior_f - inflight
            k = np.searchsorted(starts, time, side="right") - 1
            inside = (k >= 0) & (time < ends[np.maximum(k, 0)] if ends.size else False)
            candidate = (
                (acked > 0)
                & ~inside
                & (prior_f >= prior_c - slack)
                & (cwnd >= prior_c)
                & (cwnd - prior_c < acked)
            )
        latest = np.r_[-1, _last_index_where(changed)[:-1]]  # the change before each row
        j = latest[candidate]
        at = np.where(
            j >= 0, np.where(grew[np.maximum(j, 0)], time[np.maximum(j, 0)], np.nan), growth
        )
        exits.append(at[~np.isnan(at)])
        if changed.any():
            last = int(np.flatnonzero(changed)[-1])
            growth = float(time[last]) if grew[last] else math.nan
        cwnd_before = ffill_from(cwnd_before, cwnd)[1]
        inflight_before = ffill_from(inflight_before, inflight)[1]
    return np.unique(np.concatenate(exits)).tolist() if exits else []


def window_restored(
    times: np.ndarray, chunks: Iterable[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """Whether the window grew at each of ``times`` (ascending, seconds): the cwnd of the
    last update at that time (or, with none there, of the first one after it) above the
    cwnd of the last update before it. A sender that undoes a reduction restores its
    window at once (quic-go's ``OnSpuriousLoss``, v0.65.0 on; quic-go v0.52.0-v0.63.0 and
    v0.65.0's CUBIC log ``spurious_loss`` and keep the reduction). ``chunks``: ``(time,
    cwnd)`` of the metrics updates, time-ordered, cwnd forward-filled, consecutive.

    >>> t = np.array([0.0, 1.0, 2.0, 2.0, 3.0])
    >>> window_restored(np.array([2.0, 2.5, 9.0]), [(t, np.array([10.0, 5.0, 5.0, 10.0, 10.0]))])
    array([ True, False, False])
    """
    out = np.zeros(times.size, dtype=bool)
    i = 0
    last = math.nan  # the cwnd of the last update before the chunk
    before = math.nan  # of the pending query (its time's updates run past a chunk)
    equal: float | None = None  # the pending query's last update at its time so far
    pending = False
    for time, cwnd in chunks:
        while i < times.size and time.size:
            lo = int(np.searchsorted(time, times[i], side="left"))
            hi = int(np.searchsorted(time, times[i], side="right"))
            if lo > 0:
                before = float(cwnd[lo - 1])
            elif not pending:
                before = last
            if hi > lo:
                equal = float(cwnd[hi - 1])
            if hi == time.size:
                pending = True
                break
            after = equal if equal is not None else float(cwnd[hi])
            out[i] = after > before
            i, equal, pending = i + 1, None, False
        if time.size:
            last = float(cwnd[-1])
    if pending and equal is not None:
        out[i] = equal > before
    return out
