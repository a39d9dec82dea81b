"""Derived states of a connection without state events (see statemine.parse.derive for the rules)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import derive as _derive
from ..statenames import (
    DERIVED_MARK,
)
from .common import _num
from .connections import _Connection
from .vocabulary import _LOSS, _SPURIOUS, _packet_number


def _recovery_periods(conn: _Connection, metrics: pd.DataFrame) -> list[tuple[float, float, bool]]:
    """RFC 9002 recovery periods of a connection with packet events. Congestion events are
    the losses declared of packets in flight (with the send time of the lost packet, from
    the packets sent; the loss of a packet carrying only ACK, PADDING or CONNECTION_CLOSE
    frames is no congestion event, RFC 9002 section 7.3.2 OnPacketsLost), or, in a log
    without packet_lost events, the window reductions; a period ends when a packet sent after
    its start is acknowledged (any packet: RFC 9002 section 7.3.2, "a packet sent during the
    recovery period"; aioquic's ACK-only packets count), when the loss that began it proves
    spurious (quic-go restores the window) or when the window grows (a rollback)."""
    sent = np.frombuffer(conn.sent, dtype=float).reshape(-1, 3)
    acks = np.frombuffer(conn.acks, dtype=float).reshape(-1, 2)
    sent = sent[np.argsort(sent[:, 0], kind="stable")]
    not_in_flight = set(sent[sent[:, 2] == 0, 1].tolist())
    acks = acks[np.argsort(acks[:, 0], kind="stable")]
    sent_at = dict(
        zip(sent[:, 1].tolist(), sent[:, 0].tolist())
    )  # packet number -> (last) send time
    declared = [(it[0], _num(_packet_number(it[2]))) for it in conn.items if it[1] == _LOSS]
    losses = [(t, sent_at.get(pn, math.nan), pn) for t, pn in declared if pn not in not_in_flight]
    if not declared:
        cwnd = metrics["cwnd"].to_numpy(float)
        cut = np.r_[False, np.diff(cwnd) < 0] if cwnd.size else np.zeros(0, bool)
        losses = [(t, math.nan, math.nan) for t in metrics["time"].to_numpy(float)[cut]]
    undo = np.array(
        [(it[0], _num(_packet_number(it[2]))) for it in conn.items if it[1] == _SPURIOUS], float
    )
    undo = undo.reshape(-1, 2)
    loss = np.array(losses, float).reshape(-1, 3)
    periods = _derive.recovery_periods(
        loss[:, 0],
        loss[:, 1],
        sent[:, 0],
        sent[:, 1],
        acks[:, 0],
        acks[:, 1],
        loss[:, 2],
        undo[:, 0],
        undo[:, 1],
    )
    time = metrics["time"].to_numpy(float)
    cwnd = _derive.ffill(metrics["cwnd"].to_numpy(float))
    return _derive.end_at_window_growth(periods, time, cwnd)


def _pto_counts(conn: _Connection) -> tuple[np.ndarray, np.ndarray] | None:
    """The PTO counts metrics updates logged ``(times, counts)`` in time order, None where
    they log none."""
    if not conn.pto_count:
        return None
    counts = np.frombuffer(conn.pto_count, dtype=float).reshape(-1, 3)
    counts = counts[np.argsort(counts[:, 0], kind="stable")]
    return counts[:, 0].copy(), counts[:, 2].copy()


def _derived_rows(
    metrics: pd.DataFrame,
    periods: list[tuple[float, float, bool]] | None = None,
    pto_count: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """State rows derived from a connection's metrics updates (see statemine.parse.derive):
    with RFC 9002 recovery periods where packet events gave them (and ProbeTimeout from the
    PTO counts where the metrics log them), else from cwnd alone."""
    if periods is None:
        derived = _derive.derive_states(metrics)
    else:
        derived = _derive.derive_states_rfc9002(metrics, periods, pto_count=pto_count)
        derived["line"] = (
            derived["line"].fillna(-1).astype("int64")
        )  # a period's end is no metrics line
    inferred = derived.pop("ssthresh_inferred")
    derived["fields"] = [
        ("derived=1" if periods is None else "derived=rfc9002")
        + ("" if math.isnan(v) else f" ssthresh_inferred={v:g}")
        for v in inferred.to_numpy()
    ]
    derived["kind"] = "state"
    derived["state"] = derived["state"] + DERIVED_MARK
    return derived
