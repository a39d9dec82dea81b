"""Derived states of a connection without state events (see statemine.parse.derive for the rules).

A connection held whole and one spilled to disk go through the same code: the spilled one's
arrays are read in chunks (the one held, as one chunk), its recovery periods come from
binary searches in memory maps of its packet columns, and its states are evaluated chunk by
chunk (:func:`statemine.parse.derive.derive_states_rfc9002`), so memory does not grow with
the connection (only with its congestion events, one recovery period each).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from itertools import chain

import numpy as np
import pandas as pd

from .. import derive as _derive
from .. import derive_stacks as _stacks
from ..statenames import DERIVED_MARK, resolve_state
from .common import _num, _Report
from .connections import PACKET_COLUMNS, PMTU_PROBE, _Connection, missing_packets
from .metrics import _metrics_table
from .vocabulary import _LOSS, _METRIC_COLUMNS, _METRIC_STRIDE, _SPURIOUS, _packet_number


def _by_time(chunk: np.ndarray) -> np.ndarray:
    """A chunk of flat rows (time first) in time order (stable)."""
    return chunk[np.argsort(chunk[:, 0], kind="stable")]


def _metric_frames(conn: _Connection, rows: int) -> Iterator[pd.DataFrame]:
    """The metrics updates as frames of time, line and the metric columns, (time, seq)
    ordered, at most ``rows`` rows each for a spilled connection (one held: one frame)."""
    for chunk in conn.array_chunks("metrics", _METRIC_STRIDE, rows):
        yield _metrics_table(chunk, conn.unordered)


def _filled(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """The metrics frames with their metric columns forward-filled across frames (the
    latest known values)."""
    last = dict.fromkeys(_METRIC_COLUMNS, math.nan)
    for frame in frames:
        for column in _METRIC_COLUMNS:
            frame[column], last[column] = _derive.ffill_from(
                last[column], frame[column].to_numpy(float)
            )
        yield frame


def _filled_cwnd(frames: Iterator[pd.DataFrame]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(time, cwnd)`` of each metrics frame, cwnd forward-filled across frames."""
    for frame in _filled(frames):
        yield frame["time"].to_numpy(float), frame["cwnd"].to_numpy(float)


def _packet_columns(conn: _Connection, rows: int) -> list[np.ndarray]:
    """The packets sent (time, number) and ACKs received (time, largest acknowledged so
    far), each time-ordered, as :data:`PACKET_COLUMNS`: arrays for a connection held whole,
    read-only memory maps of column segments in a spilled one's store (removed with
    it; its packets are in time order, so chunks sorted one by one are sorted)."""
    parts: list[list[np.ndarray]] = [[] for _ in PACKET_COLUMNS]

    def put(k: int, values: np.ndarray) -> None:
        if conn.spill is None:
            parts[k].append(values)
        else:
            conn.append_column(PACKET_COLUMNS[k], values)

    for chunk in conn.array_chunks("sent", 3, rows):
        chunk = _by_time(chunk)
        put(0, chunk[:, 0])
        put(1, chunk[:, 1])
    best = -math.inf
    for chunk in conn.array_chunks("acks", 2, rows):
        chunk = _by_time(chunk)
        most = np.maximum.accumulate(np.r_[best, chunk[:, 1]])[1:]
        best = float(most[-1]) if most.size else best
        put(2, chunk[:, 0])
        put(3, most)
    if conn.spill is None:
        return [np.concatenate(p) if p else np.empty(0) for p in parts]
    return [conn.column(name) for name in PACKET_COLUMNS]


def _no_congestion(implementation: object) -> frozenset[float]:
    """The in-flight marks (connections.py ``_in_flight``) of packets whose loss is no
    congestion event for ``implementation`` (its label). RFC 9002 section 7.3.2
    (OnPacketsLost): a packet not in flight (0.0). quic-go also skips its lost path MTU
    probes (PMTU_PROBE): ``detectLostPackets`` calls ``OnCongestionEvent`` only
    ``if !p.IsPathMTUProbePacket`` (internal/ackhandler/sent_packet_handler.go: v0.52.0
    line 721, v0.55.0 line 789, v0.62.0 line 856), so such a loss neither cuts its window nor logs
    ``recovery``; the RFC 9002 reference counts it (RFC 9000 section 14.4 only says it
    SHOULD NOT).

    >>> sorted(_no_congestion("quic-go")), sorted(_no_congestion("aioquic"))
    ([0.0, 2.0], [0.0])
    """
    if implementation == "quic-go":
        return frozenset({0.0, PMTU_PROBE})
    return frozenset({0.0})


def _recovery_periods(conn: _Connection, rows: int) -> list[tuple[float, float, bool]]:
    """RFC 9002 recovery periods of a connection with packet events. Congestion events are
    the losses declared of packets in flight (with the send time of the lost packet, from
    the packets sent; the loss of a packet carrying only ACK, PADDING or CONNECTION_CLOSE
    frames is no congestion event, RFC 9002 section 7.3.2 OnPacketsLost), or, in a log
    without packet_lost events, the window reductions; a period ends when a packet sent after
    its start is acknowledged (any packet: RFC 9002 section 7.3.2, "a packet sent during the
    recovery period"; aioquic's ACK-only packets count), when the loss that began it proves
    spurious and the window is restored at once (quic-go's undo: v0.65.0 Reno; its other
    spurious_loss events are reports only) or when the window grows (a rollback). Per
    stack (:func:`_no_congestion`): quic-go's lost path MTU probes are none either. Reads
    the connection's arrays ``rows`` rows at a time; holds its losses and periods."""
    declared, undo, handshake = [], [], []
    for time, code, data, *_ in conn.each_item():
        if code == _LOSS:
            declared.append((time, _num(_packet_number(data))))
            handshake.append(_lost_space(data) in _HANDSHAKE_SPACES)
        elif code == _SPURIOUS:
            undo.append((time, _num(_packet_number(data))))
    if conn.labels.get("implementation") == "aioquic" and any(handshake):
        declared = _aioquic_congestion_losses(conn, declared, handshake, rows)
    wanted = np.array([pn for _, pn in declared], float)
    sent_at: dict[float, float] = {}  # lost packet number -> (last) send time
    not_in_flight: set[float] = set()
    quicgo = conn.labels.get("implementation") == "quic-go"
    exempt = _no_congestion(conn.labels.get("implementation"))
    for chunk in conn.array_chunks("sent", 3, rows):
        chunk = _by_time(chunk)
        for time, pn, flight in chunk[np.isin(chunk[:, 1], wanted)].tolist():
            sent_at[pn] = time
            if flight in exempt:
                not_in_flight.add(pn)
    losses = [(t, sent_at.get(pn, math.nan), pn) for t, pn in declared if pn not in not_in_flight]
    if not declared:
        losses = []
        before = math.nan
        for time, cwnd in _filled_cwnd(_metric_frames(conn, rows)):
            cut = np.diff(cwnd, prepend=before) < 0
            before = float(cwnd[-1]) if cwnd.size else before
            losses += [(t, math.nan, math.nan) for t in time[cut].tolist()]
    undone = np.array(undo, float).reshape(-1, 2)
    undone = undone[np.argsort(undone[:, 0], kind="stable")]
    if undone.size:  # only where the sender restored its window (an undo, not a report)
        series = _filled_cwnd(_metric_frames(conn, rows))
        undone = undone[_derive.window_restored(undone[:, 0], series)]
    loss = np.array(losses, float).reshape(-1, 3)
    sent_time, sent_pn, ack_time, ack_best = _packet_columns(conn, rows)
    settled: list[tuple[float, float, bool]] = []
    while True:  # once more after each period a window restore ended early (below)
        periods = _derive.recovery_periods(
            loss[:, 0],
            loss[:, 1],
            sent_time,
            sent_pn,
            ack_time,
            ack_best,
            loss[:, 2],
            undone[:, 0],
            undone[:, 1],
            ties_after=quicgo,
        )
        ended = _derive.end_at_window_growth(periods, _filled_cwnd(_metric_frames(conn, rows)))
        early = [k for k, (p, q) in enumerate(zip(periods, ended)) if q[1] < p[1] and q[2]]
        if not early:
            return settled + ended
        # a restored window ended the period: the sender is out of recovery, so a
        # congestion event before the period's ACK-time end begins a new one (quiche
        # CUBIC's rollback, then its next loss); those were passed over as inside it
        k = early[0]
        settled += ended[: k + 1]
        loss = loss[loss[:, 0] > ended[k][1]]


def _stack_app_limited(conn: _Connection, rows: int) -> Iterator[pd.DataFrame] | None:
    """The stack's own ApplicationLimited verdicts (statemine.parse.derive_stacks) where
    statemine replays its rule (aioquic, quiche), else None (the generic ACK rule). Reads
    the connection ``rows`` rows at a time."""
    implementation = conn.labels.get("implementation")
    if implementation not in ("aioquic", "quiche"):
        return None
    acks = (
        pd.DataFrame({"time": c[:, 0], "largest": c[:, 1]})
        for c in map(_by_time, conn.array_chunks("acks", 2, rows))
    )
    sent = (
        pd.DataFrame({"time": c[:, 0], "pn": c[:, 1], "flight": c[:, 2]})
        for c in map(_by_time, conn.array_chunks("sent", 3, rows))
    )
    # aioquic's replay needs to see which updates logged an RTT sample: as logged
    frames = _metric_frames(conn, rows)
    filled = frames if implementation == "aioquic" else _filled(frames)
    metrics = (f[["time", "cwnd", "inflight", "srtt"]] for f in filled)
    groups = _stacks.grouped(acks, metrics, sent)
    if implementation == "quiche":
        return _stacks.quiche_app_limited(groups, fin_sent=conn.summary.fin_sent)
    if not _one_time_per_opportunity(conn):
        return None
    return _stacks.aioquic_app_limited(groups)


def _one_time_per_opportunity(conn: _Connection) -> bool:
    """Whether a send opportunity's events share one time, as in a virtual-time run (the
    lab's): at least half the ACKs received are followed by a packet sent at their very
    time. With wall-clock times (aioquic's ``time.time()`` per event) the packets an ACK
    lets go are logged 0.1-0.3 ms after it, and which opportunity a packet belongs to is
    not in the log: aioquic's own rule is not replayed there."""
    summary = conn.summary
    return summary.n_acks > 0 and 2 * summary.acks_then_sent >= summary.n_acks


_HANDSHAKE_SPACES = frozenset({"initial", "handshake"})


def _lost_space(data: Mapping) -> str:
    """The packet number space of a packet_lost event's packet, lower case ("" unknown):
    ``header.packet_type``, or aioquic's ``type``."""
    header = data.get("header")
    kind = header.get("packet_type") if isinstance(header, Mapping) else None
    return str(kind if kind is not None else data.get("type", "")).lower()


def _aioquic_congestion_losses(
    conn: _Connection, declared: list[tuple[float, float]], handshake: list[bool], rows: int
) -> list[tuple[float, float]]:
    """``declared`` (time, packet number) without the Initial and Handshake packets
    aioquic declares lost to retransmit their CRYPTO data at once (``reschedule_data``
    in aioquic/quic/recovery.py: on a PTO, or when the client's Initial comes again,
    ``_on_packets_lost(congestion_event=False)``: no congestion event, the window
    stays): such a loss counts only where the window was cut at its time."""
    cut_at: set[float] = set()
    before = math.nan
    for time, cwnd in _filled_cwnd(_metric_frames(conn, rows)):
        cut = np.diff(cwnd, prepend=before) < 0
        before = float(cwnd[-1]) if cwnd.size else before
        cut_at.update(time[cut].tolist())
    return [loss for loss, early in zip(declared, handshake) if not early or loss[0] in cut_at]


def _slow_start_ends(
    conn: _Connection, rows: int, periods: list[tuple[float, float, bool]]
) -> list[float]:
    """Where slow start ended without a window reduction, for a stack that logs no
    ssthresh and leaves slow start by HyStart (quic-go: :func:`.derive.slow_start_exits`);
    none for the others (RFC 9002's NewReno leaves slow start only by a reduction)."""
    if conn.labels.get("implementation") != "quic-go":
        return []
    frames = _filled(_metric_frames(conn, rows))
    chunks = (
        (f["time"].to_numpy(float), f["cwnd"].to_numpy(float), f["inflight"].to_numpy(float))
        for f in frames
    )
    return _derive.slow_start_exits(chunks, periods)


def _pto_frames(conn: _Connection, rows: int) -> Iterator[pd.DataFrame]:
    """The PTO counts metrics updates logged, frames of ``time`` and ``count`` in time
    order (none where they log none)."""
    for chunk in conn.array_chunks("pto_count", 3, rows):
        chunk = _by_time(chunk)
        yield pd.DataFrame({"time": chunk[:, 0], "count": chunk[:, 2]})


def _derived_rows(derived: pd.DataFrame, rfc9002: bool) -> pd.DataFrame:
    """State rows (kind, marked state names, ``fields``) from derived state changes (see
    statemine.parse.derive), with RFC 9002 recovery periods where packet events gave them,
    else from cwnd alone."""
    derived["line"] = derived["line"].fillna(-1).astype("int64")  # a period's end: no line
    inferred = derived.pop("ssthresh_inferred")
    derived["fields"] = [
        ("derived=rfc9002" if rfc9002 else "derived=1")
        + ("" if math.isnan(v) else f" ssthresh_inferred={v:g}")
        for v in inferred.to_numpy()
    ]
    derived["kind"] = "state"
    derived["state"] = derived["state"] + DERIVED_MARK
    return derived


def _derived_frames(
    conn: _Connection,
    rows: int,
    row_frames: Iterator[pd.DataFrame],
    trace_id: str,
    overrides: Mapping[str, str] | None,
    report: _Report,
) -> Iterator[pd.DataFrame]:
    """The events frames of a connection whose states are derived from its metrics:
    the derived state rows, its event rows and (as event rows) the states the file marks
    outside congestion_state_updated (app limited, a fired PTO), time-ordered (at equal
    times in that order). ``row_frames``: its rows (:func:`.rows._row_frames`), in (time,
    seq) order. Nothing (and a warning) where it has no cwnd. The connection is read
    ``rows`` rows at a time."""
    rfc9002 = conn.has("sent") and conn.has("acks")
    if rfc9002:
        periods = _recovery_periods(conn, rows)
        states = _derive.derive_states_rfc9002(
            _metric_frames(conn, rows),
            periods,
            pto_count=_pto_frames(conn, rows),
            slow_start_ends=_slow_start_ends(conn, rows, periods),
            app_limited=_stack_app_limited(conn, rows),
        )
    else:
        states = _derive.derive_states_chunks(_filled(_metric_frames(conn, rows)))
    derived = (_derived_rows(frame, rfc9002).assign(_rank=0) for frame in states if len(frame))
    first = next(derived, None)
    if first is None:
        for _ in row_frames:  # its warnings, as a whole read gives them
            pass
        report.warn(
            None, f"trace {trace_id}: no state events and no cwnd to derive states from; left out"
        )
        return
    report.warn(
        None,
        f"trace {trace_id}: no congestion_state_updated events; states derived from cwnd/ssthresh "
        + (
            "and packet events (RFC 9002 recovery periods; marked derived)"
            if rfc9002
            else f"alone (marked derived): {missing_packets(conn.summary)}, so a recovery "
            "period ends only when cwnd grows again and ApplicationLimited is not derived"
        ),
    )
    columns = [c for c in first.columns if c != "_rank"]
    ranked = (_ranked(frame, overrides) for frame in row_frames)
    for merged in _derive.merge_by_time([chain([first], derived), ranked]):
        rank = merged["_rank"].to_numpy(float)
        order = np.lexsort((rank, merged["time"].to_numpy(float)))
        yield merged.iloc[order].reindex(columns=columns).reset_index(drop=True)


def _ranked(frame: pd.DataFrame, overrides: Mapping[str, str] | None) -> pd.DataFrame:
    """A connection's event rows (``_rank`` 1) and marked states (app limited, a fired
    PTO: as event rows with the common name, ``_rank`` 2) among ``frame``'s rows."""
    marks = (frame["kind"] == "state") & frame["mark"]
    keep = frame.loc[(frame["kind"] == "event") | marks].copy()
    is_mark = marks.loc[keep.index].to_numpy()
    named = keep.loc[is_mark, "state"].map(lambda name: resolve_state(name, None, overrides)[0])
    keep.loc[is_mark, "state"] = named
    keep["kind"] = "event"
    keep["_rank"] = np.where(is_mark, 2, 1)
    return keep
