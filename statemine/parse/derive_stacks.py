"""ApplicationLimited as particular stacks decide it, replayed from their qlog's events.

:func:`statemine.parse.derive.derive_states_rfc9002` judges ApplicationLimited by a
generic rule (quic-go's ``isCwndLimited`` at each ACK). A stack whose own notion differs
gets a replay here, fed with the connection's events grouped by time (virtual-time lab
runs log every event of one send opportunity at one time):

* **aioquic** (:func:`aioquic_app_limited`): at each send opportunity the connection is
  application limited when, after it built what it could, the congestion window leaves
  room for a full datagram -- unless its pacer held sending back
  (``QuicConnection.datagrams_to_send`` and ``_write_application`` with
  ``QuicPacketPacer.next_send_time`` in ``aioquic/quic/connection.py`` and
  ``recovery.py``), when the verdict stands. The pacer is replayed from the window,
  the smoothed RTT and the packets sent.
* **quiche** (:func:`quiche_app_limited`): the delivery-rate estimator's app-limited
  period (``Rate::update_app_limited`` / ``generate_rate_sample`` in
  ``src/recovery/congestion/delivery_rate.rs``): it begins where the connection finds
  room in the window it does not fill (``Connection::delivery_rate_check_if_app_limited``
  in ``src/lib.rs``, at an ACK received and at each packet sent), marking the latest
  packet sent, and lasts until a packet sent after that mark is acknowledged.

Each returns the verdicts as frames of ``time`` (seconds) and ``limited`` (1.0, 0.0),
consumed by :func:`statemine.parse.derive.derive_states_rfc9002` (``app_limited=``).
Windows and byte counts are in bytes, times in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: aioquic's ``SMALLEST_MAX_DATAGRAM_SIZE`` (bytes): the room its instrumentation (and
#: its packet builder) needs for one more datagram.
AIOQUIC_DATAGRAM = 1200.0
#: aioquic's ``K_MICRO_SECOND`` and ``K_SECOND`` (seconds): the pacer's bounds.
_MICRO_SECOND, _SECOND = 1e-6, 1.0
#: Seconds below which the replayed bucket counts as empty: the qlog's times (ms, as
#: decimals) and their conversion to seconds round differently from the stack's own sums,
#: so a bucket the stack emptied exactly can come out a few 1e-17 s full here.
_TIME_NOISE = 1e-9
#: Event kinds of the grouped stream (:func:`grouped`).
ACK, METRICS, SENT = 0, 1, 2


def grouped(
    acks: Iterable[pd.DataFrame], metrics: Iterable[pd.DataFrame], sent: Iterable[pd.DataFrame]
) -> Iterator[pd.DataFrame]:
    """The ACKs received (``time``, ``largest``), metrics updates (``time``, ``cwnd``,
    ``inflight``, ``srtt``) and packets sent (``time``, ``pn``,
    ``flight``), each time-ordered, merged by time into frames with a ``kind`` column
    (:data:`ACK`, :data:`METRICS`, :data:`SENT`); a frame holds every row of the times it
    covers, at equal times ACKs first, then metrics, then packets sent."""
    from .derive import merge_by_time

    def tagged(frames: Iterable[pd.DataFrame], kind: int) -> Iterator[pd.DataFrame]:
        for frame in frames:
            yield frame.assign(kind=float(kind))

    return merge_by_time([tagged(acks, ACK), tagged(metrics, METRICS), tagged(sent, SENT)])


@dataclass
class AioquicPacer:
    """A replica of aioquic 1.7.2's ``QuicPacketPacer`` (recovery.py): a token bucket of
    send time (seconds)."""

    datagram: float = AIOQUIC_DATAGRAM
    bucket_max: float = 0.0
    bucket_time: float = 0.0
    evaluation_time: float = 0.0
    packet_time: float | None = None

    def update_bucket(self, now: float) -> None:
        if now > self.evaluation_time:
            self.bucket_time = min(self.bucket_time + now - self.evaluation_time, self.bucket_max)
            self.evaluation_time = now

    def holds(self, now: float) -> bool:
        """``next_send_time(now) is not None``: the pacer holds the next packet back."""
        if self.packet_time is None:
            return False
        self.update_bucket(now)
        return self.bucket_time <= _TIME_NOISE

    def after_send(self, now: float) -> None:
        if self.packet_time is not None:
            self.update_bucket(now)
            if self.bucket_time < self.packet_time:
                self.bucket_time = 0.0
            else:
                self.bucket_time -= self.packet_time

    def update_rate(self, cwnd: float, srtt: float) -> None:
        rate = cwnd / max(srtt, _MICRO_SECOND)
        self.packet_time = max(_MICRO_SECOND, min(self.datagram / rate, _SECOND))
        burst = max(2 * self.datagram, min(cwnd // 4, 16 * self.datagram))
        self.bucket_max = burst / rate
        self.bucket_time = min(self.bucket_time, self.bucket_max)


def aioquic_app_limited(
    groups: Iterable[pd.DataFrame], datagram: float = AIOQUIC_DATAGRAM
) -> Iterator[pd.DataFrame]:
    """aioquic's ApplicationLimited verdicts (module docstring) from :func:`grouped`
    frames (metrics as logged, not forward-filled): at each time with an ACK received or
    a packet sent (a send opportunity), the pacer's rate is set from the window and
    smoothed RTT where aioquic calls ``update_rate`` -- an RTT sample (aioquic logs
    ``smoothed_rtt`` only then) or a window cut (a congestion event) at that time --, each
    packet sent draws from its bucket, and then -- unless the bucket is
    empty (the pacer holds the next packet back: no verdict) -- the verdict is whether
    cwnd minus the bytes in flight leaves ``datagram`` bytes. No verdict before the first
    application-space packet sent (aioquic judges only once connected)."""
    pacer = AioquicPacer(datagram=datagram)
    cwnd = inflight = srtt = math.nan
    started = False
    for frame in groups:
        time = frame["time"].to_numpy(float)
        kind = frame["kind"].to_numpy(float)
        cw, fl, rt = (_column(frame, c) for c in ("cwnd", "inflight", "srtt"))
        starts, ends = _same_time_runs(time)
        out_t: list[float] = []
        out_v: list[float] = []
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            now = float(time[lo])
            k = kind[lo:hi]
            rows = lo + np.flatnonzero(k == METRICS)
            windows = np.r_[cwnd, cw[rows]]
            windows = windows[~np.isnan(windows)]
            cut = bool((np.diff(windows) < 0).any())
            cwnd = float(windows[-1]) if windows.size else cwnd
            flights = fl[rows][~np.isnan(fl[rows])]
            inflight = float(flights[-1]) if flights.size else inflight
            samples = rt[rows][~np.isnan(rt[rows])]
            srtt = float(samples[-1]) if samples.size else srtt
            if (samples.size or cut) and not (math.isnan(cwnd) or math.isnan(srtt)):
                pacer.update_rate(cwnd, srtt)
            sends = int(np.count_nonzero(k == SENT))
            started = started or sends > 0
            for _ in range(sends):
                pacer.after_send(now)
            if not started or not (sends or (k == ACK).any()) or math.isnan(inflight):
                continue
            if pacer.holds(now):
                continue
            out_t.append(now)
            out_v.append(1.0 if cwnd - inflight >= datagram else 0.0)
        yield pd.DataFrame({"time": out_t, "limited": out_v})


def quiche_app_limited(
    groups: Iterable[pd.DataFrame], fin_sent: float = math.inf, slack: float = 3 * 1280.0
) -> Iterator[pd.DataFrame]:
    """quiche's delivery-rate app-limited period (module docstring) from :func:`grouped`
    frames. quiche marks the period at an ACK received (before handling it, so with the
    window and bytes in flight before the ACK) and at a packet sent, where the data the
    application has queued is less than the room in the window; the mark remembers the
    latest packet sent, and the period ends at the first ACK acknowledging a packet
    above it (``Rate::generate_rate_sample``). The queued data is not in the qlog, so:

    * from the first update until the first application-space packet is acknowledged,
      the handshake: a server has no stream data yet (quiche marks at its first Initial);
    * once the FIN of the data was sent (``fin_sent``, seconds), nothing is queued: an
      ACK finding any room marks, and so does a send that leaves room (the packet
      with the FIN: quiche checks before it, with only its data queued);
    * in between, an ACK marks where the room before it exceeds ``slack`` bytes (three
      1280-byte packets: the application writes what the window takes, quiche's
      ``tx_cap``, so a little room is no sign of an empty queue).

    Verdicts at each ACK, at each such send and at the first update."""
    cwnd = inflight = math.nan
    last_sent = -math.inf  # the latest application-space packet number sent
    end: float | None = -math.inf  # the mark (None: not app limited); -inf: handshake
    largest = -math.inf
    first = True
    for frame in groups:
        time = frame["time"].to_numpy(float)
        kind = frame["kind"].to_numpy(float)
        cw, fl = (
            frame[c].to_numpy(float) if c in frame.columns else np.full(time.size, np.nan)
            for c in ("cwnd", "inflight")
        )
        pn, top = _column(frame, "pn"), _column(frame, "largest")
        starts, ends = _same_time_runs(time)
        out_t: list[float] = []
        out_v: list[float] = []
        for lo, hi in zip(starts.tolist(), ends.tolist()):
            now = float(time[lo])
            k = kind[lo:hi]
            acked = k == ACK
            if acked.any():
                room = cwnd - inflight  # before the ACK
                need = 0.0 if now >= fin_sent else slack
                if room > need:
                    end = last_sent
                largest = max(largest, float(np.nanmax(top[lo:hi][acked])))
                if end is not None and largest > end:
                    end = None
            sends = pn[lo:hi][k == SENT]
            metric = np.flatnonzero(k == METRICS)
            if metric.size:
                cwnd, inflight = float(cw[lo + metric[-1]]), float(fl[lo + metric[-1]])
            marked = sends.size > 0 and now >= fin_sent and cwnd - inflight > 0
            if marked:  # the last data went out and left room: quiche marks at that send
                end = last_sent
            if sends.size:
                last_sent = max(last_sent, float(sends.max()))
            if acked.any() or first or marked:
                out_t.append(now)
                out_v.append(0.0 if end is None else 1.0)
                first = False
        yield pd.DataFrame({"time": out_t, "limited": out_v})


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """``frame``'s column ``name`` as float64, all NaN where the frame has none."""
    if name in frame.columns:
        return frame[name].to_numpy(float)
    return np.full(len(frame), np.nan)


def _same_time_runs(time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of each run of equal consecutive ``time`` values (one
    send opportunity of a virtual-time log)."""
    starts = np.flatnonzero(np.r_[True, time[1:] != time[:-1]])
    return starts, np.r_[starts[1:], time.size]
