"""An independent reference for RFC 9002 recovery periods, written from the RFC's text
(section 7.3.2 and appendix B), not from statemine's code, for the real-stack corpus.

It reads a qlog of object events (a contained JSON document with ``traces[].events`` or
JSON-SEQ records; times in milliseconds) with nothing but :mod:`json`, and replays the
RFC's congestion-event rule over the file's packet events:

* RFC 9002 B.8 ``OnPacketsLost``: a lost packet that was in flight calls
  ``OnCongestionEvent(lost_packet.time_sent)``. In flight (section 2): ack-eliciting or
  carrying PADDING, that is any frame but ACK and CONNECTION_CLOSE (a packet whose frames
  were not logged counts as in flight).
* B.6 ``OnCongestionEvent(sent_time)``: nothing when ``InCongestionRecovery(sent_time)``
  (``sent_time <= congestion_recovery_start_time``, B.4); else a recovery period starts
  now (``congestion_recovery_start_time = now``).
* 7.3.2: "A recovery period ends when a packet sent during the recovery period is
  acknowledged": the first ACK frame received, in the packet number space of the packet
  it acknowledges, that covers a packet sent after the period began.

* ``by_window`` (a stack that logs no ``packet_lost`` events: quiche) takes its
  congestion events from its window instead: B.6 ``OnCongestionEvent`` reduces
  ``congestion_window`` only when it begins a recovery period, so each reduction of the
  logged window begins one (closing an open one).

Packet number spaces: ``initial``, ``handshake`` and the application space (every other
packet type). ``recovery_share`` is the periods' time over the span from the first metrics
update that logs a window to the last event of any kind.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_SPACES = {"initial": "initial", "handshake": "handshake"}


def _space(packet_type: object) -> str:
    return _SPACES.get(str(packet_type).lower(), "application")


def events(path: Path) -> list[dict]:
    """The file's events (object events only), each with ``time`` in seconds."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode()
    out: list[dict] = []
    if text.lstrip().startswith("\x1e") or "\x1e" in text[:4096]:
        records: Iterator[dict] = (json.loads(r) for r in text.split("\x1e") if r.strip())
        out = [r for r in records if "name" in r and "time" in r]
    else:
        document = json.loads(text)
        for trace in document.get("traces", []):
            out.extend(e for e in trace.get("events", []) if isinstance(e, dict))
    for event in out:
        event["time"] = float(event["time"]) / 1000.0
    return out


def _kind(event: dict) -> str:
    return str(event.get("name", "")).split(":")[-1]


@dataclass
class Periods:
    """The recovery periods of one connection, seconds: ``[(start, end)]`` (end ``inf``
    while none ends), and the span the share is taken over."""

    periods: list[tuple[float, float]] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0
    acks: int = 0  # ACK frames received: without any, no period can end (no reference)

    def recovery_share(self) -> float:
        span = self.last - self.first
        inside = sum(
            max(0.0, min(end, self.last) - max(start, self.first)) for start, end in self.periods
        )
        return inside / span if span > 0 else 0.0


def _window_logged(data: dict) -> bool:
    return any(k in data for k in ("congestion_window", "cwnd"))


def recovery_periods(path: Path, by_window: bool = False) -> Periods:
    """RFC 9002's recovery periods of the one connection logged in ``path`` (``by_window``:
    congestion events from the window's reductions, for a stack that logs no losses)."""
    log = sorted(events(path), key=lambda e: e["time"])
    sent: dict[tuple[str, int], tuple[float, bool]] = {}
    result = Periods()
    starts = [
        e["time"]
        for e in log
        if _kind(e) in ("metrics_updated", "recovery_metrics_updated")
        and _window_logged(e.get("data", {}))
    ]
    result.first = starts[0] if starts else log[0]["time"]
    result.last = log[-1]["time"]
    recovery_start = float("-inf")  # congestion_recovery_start_time (B.2: 0, no period yet)
    open_period = False
    window = float("nan")  # the latest logged congestion_window (NaN: none yet)
    for event in log:
        kind, data, now = _kind(event), event.get("data", {}), event["time"]
        header = data.get("header", {})
        if by_window and kind in ("metrics_updated", "recovery_metrics_updated"):
            logged = data.get("congestion_window", data.get("cwnd"))
            if logged is not None and float(logged) < window:
                if open_period:
                    result.periods[-1] = (result.periods[-1][0], now)
                recovery_start = now
                result.periods.append((now, float("inf")))
                open_period = True
            window = float(logged) if logged is not None else window
        if kind == "packet_sent":
            frames = data.get("frames")
            in_flight = frames is None or any(
                f.get("frame_type") not in ("ack", "connection_close") for f in frames
            )
            sent[(_space(header.get("packet_type")), int(header["packet_number"]))] = (
                now,
                in_flight,
            )
        elif kind == "packet_lost":
            space = _space(header.get("packet_type", data.get("type")))
            number = header.get("packet_number", data.get("packet_number"))
            time_sent, in_flight = sent.get((space, int(number)), (None, False))
            if time_sent is None or not in_flight:
                continue
            if time_sent <= recovery_start:  # InCongestionRecovery(sent_time)
                continue
            if open_period:
                result.periods[-1] = (result.periods[-1][0], now)
            recovery_start = now
            result.periods.append((now, float("inf")))
            open_period = True
        elif kind == "packet_received" and not open_period:
            result.acks += any(f.get("frame_type") == "ack" for f in data.get("frames") or [])
        elif kind == "packet_received" and open_period:
            space = _space(header.get("packet_type"))
            for frame in data.get("frames") or []:
                if frame.get("frame_type") != "ack":
                    continue
                result.acks += 1
                for bounds in frame.get("acked_ranges", []):
                    low, high = int(bounds[0]), int(bounds[-1])
                    if any(
                        sent.get((space, pn), (float("-inf"), False))[0] > recovery_start
                        for pn in range(low, high + 1)
                    ):
                        result.periods[-1] = (result.periods[-1][0], now)
                        open_period = False
                        break
                if not open_period:
                    break
    return result
