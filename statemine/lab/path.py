"""The emulated network path: one :class:`Link` per direction (the reference semantics of
docs/lab-protocol.md, "Path model").

Units everywhere: rates in **bits per second**, sizes in **bytes**, times in **seconds**
(virtual time, any origin >= 0). A packet of ``n`` bytes handed to a link at time ``t``:

1. is lost with probability ``loss`` (i.i.d.), or through a two-state Gilbert-Elliott
   chain stepped once per packet when ``gilbert`` is given (it replaces ``loss``);
2. is tail-dropped if the bytes queued at the bottleneck and not yet fully serialised,
   plus ``n``, exceed ``buffer_bytes``; else it leaves the bottleneck at
   ``depart = max(t, link_free) + 8*n/rate`` and ``link_free = depart``;
3. is delivered at ``depart + max(0, delay_s + j)``, ``j ~ U[-jitter_s, +jitter_s]`` drawn
   per packet (netem's default jitter). Every packet is released at its own time, so two
   packets reorder exactly when their jitter differs by more than their spacing;
4. with ``rate_schedule``, the bottleneck rate is redrawn uniformly in ``[lo_bps, hi_bps]``
   every ``interval_s`` seconds; the schedule's phase ``phi`` is drawn uniformly in
   ``[0, interval_s)`` from the seed (interval ``k`` covers ``[k*interval_s - phi,
   (k+1)*interval_s - phi)``); a packet is serialised at the rate of the interval in
   which its serialisation starts;
5. with ``link_trace`` (a mahimahi trace, :mod:`statemine.lab.cellular`) the bottleneck
   serves bytes only at the trace's delivery opportunities, 1500 bytes each, in FIFO
   order; the trace starts at ``offset_ms`` (drawn uniformly among the whole ms of one
   period from the seed unless given); capacity unused when the queue is empty is lost.
   A packet departs at the opportunity that carries its last byte;
6. with ``cross_traffic`` (``load`` > 0), packets of ``packet_bytes`` from other flows
   arrive at the bottleneck as a Poisson process of ``load * rate_bps / (8 *
   packet_bytes)`` packets per second (with ``mean_off_s`` > 0: only in the ON periods of
   an ON/OFF process of exponential periods, at a rate raised so the mean load is still
   ``load``). They share the FIFO queue and buffer with the path's own packets (tail
   drop included) but not its loss or delay, and are then discarded.

Determinism: loss and jitter draws come from one ``random.Random`` per direction, seeded
with :func:`direction_seed`; the rate schedule, the trace offset and the cross traffic
come from their own generators of the same seed, so they do not depend on the traffic.
The same config, seed and sequence of ``send`` calls always give the same deliveries.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .cellular import OPPORTUNITY_BYTES, LinkTrace

#: The paper's fairness bottleneck (section 5.1): 5 Mbps with a 30 KB buffer.
PAPER_RATE_BPS = 5e6
PAPER_BUFFER_BYTES = 30_000


class PathValueError(ValueError):
    """An impossible path parameter; ``key`` names it (``"rate_bps"``, ``"gilbert.p_gb"``)."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


def _number(d: Mapping[str, Any], key: str, prefix: str = "") -> float:
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PathValueError(prefix + key, f"must be a number, not {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise PathValueError(prefix + key, f"must be finite, not {value!r}")
    return value


def _probability(value: float, key: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise PathValueError(key, f"is a probability and must be in [0, 1], not {value}")


def _unknown(d: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        raise PathValueError(
            prefix + extra[0], f"unknown key (known: {', '.join(sorted(allowed))})"
        )


@dataclass(frozen=True)
class Gilbert:
    """Gilbert-Elliott loss: per packet, step good->bad with ``p_gb`` or bad->good with
    ``p_bg``, then drop with the new state's loss probability.

    The mean burst (bad-state sojourn) lasts ``1/p_bg`` packets and the stationary
    share of the bad state is ``p_gb / (p_gb + p_bg)``.
    """

    p_gb: float
    p_bg: float
    loss_good: float = 0.0
    loss_bad: float = 1.0

    def __post_init__(self) -> None:
        for name in ("p_gb", "p_bg", "loss_good", "loss_bad"):
            _probability(getattr(self, name), f"gilbert.{name}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Gilbert:
        """Build from ``{"p_gb": .., "p_bg": .., "loss_good": .., "loss_bad": ..}``."""
        if not isinstance(d, Mapping):
            raise PathValueError("gilbert", "must be a table of p_gb, p_bg, loss_good, loss_bad")
        _unknown(d, {"p_gb", "p_bg", "loss_good", "loss_bad"}, "gilbert.")
        for key in ("p_gb", "p_bg"):
            if key not in d:
                raise PathValueError(f"gilbert.{key}", "is required")
        return cls(**{k: _number(d, k, "gilbert.") for k in d})

    def mean_loss(self) -> float:
        """The long-run loss probability of the chain (stationary mix of both states)."""
        total = self.p_gb + self.p_bg
        bad = self.p_gb / total if total > 0 else 0.0
        return bad * self.loss_bad + (1.0 - bad) * self.loss_good


@dataclass(frozen=True)
class RateSchedule:
    """Variable bandwidth: a rate drawn uniformly in ``[lo_bps, hi_bps]`` every ``interval_s``."""

    lo_bps: float
    hi_bps: float
    interval_s: float = 1.0

    def __post_init__(self) -> None:
        if self.lo_bps <= 0:
            raise PathValueError("rate_schedule.lo_bps", f"must be > 0, not {self.lo_bps}")
        if self.hi_bps < self.lo_bps:
            raise PathValueError(
                "rate_schedule.hi_bps", f"must be >= lo_bps ({self.lo_bps}), not {self.hi_bps}"
            )
        if self.interval_s <= 0:
            raise PathValueError("rate_schedule.interval_s", f"must be > 0, not {self.interval_s}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RateSchedule:
        """Build from ``{"lo_bps": .., "hi_bps": .., "interval_s": 1.0}``."""
        if not isinstance(d, Mapping):
            raise PathValueError("rate_schedule", "must be a table of lo_bps, hi_bps, interval_s")
        _unknown(d, {"lo_bps", "hi_bps", "interval_s"}, "rate_schedule.")
        for key in ("lo_bps", "hi_bps"):
            if key not in d:
                raise PathValueError(f"rate_schedule.{key}", "is required")
        return cls(**{k: _number(d, k, "rate_schedule.") for k in d})


@dataclass(frozen=True)
class CrossTraffic:
    """Other flows at the bottleneck: ``load`` (a fraction of ``rate_bps``, in [0, 1)),
    packets of ``packet_bytes``; Poisson arrivals, or ON/OFF with exponential periods of
    means ``mean_on_s`` / ``mean_off_s`` (seconds) when ``mean_off_s`` > 0."""

    load: float
    packet_bytes: int = 1500
    mean_on_s: float = 0.0
    mean_off_s: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.load < 1.0:
            raise PathValueError(
                "cross_traffic.load",
                f"is a fraction of the link rate and must be in [0, 1), not {self.load}",
            )
        if not 1 <= self.packet_bytes <= 65_535 or self.packet_bytes != int(self.packet_bytes):
            raise PathValueError(
                "cross_traffic.packet_bytes",
                f"must be a whole number in [1, 65535], not {self.packet_bytes}",
            )
        if self.mean_on_s < 0 or self.mean_off_s < 0:
            raise PathValueError("cross_traffic.mean_on_s", "ON/OFF means must be >= 0")
        if self.mean_off_s > 0 and not self.mean_on_s > 0:
            raise PathValueError("cross_traffic.mean_on_s", "must be > 0 when mean_off_s is > 0")

    KEYS = ("load", "packet_bytes", "mean_on_s", "mean_off_s")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CrossTraffic:
        """Build from ``{"load": .., "packet_bytes": 1500, "mean_on_s": 0, "mean_off_s": 0}``."""
        if not isinstance(d, Mapping):
            raise PathValueError(
                "cross_traffic", "must be a table of load, packet_bytes, mean_on_s, mean_off_s"
            )
        _unknown(d, set(cls.KEYS), "cross_traffic.")
        if "load" not in d:
            raise PathValueError("cross_traffic.load", "is required")
        v: dict[str, Any] = {k: _number(d, k, "cross_traffic.") for k in d}
        if "packet_bytes" in v:
            if v["packet_bytes"] != int(v["packet_bytes"]):
                raise PathValueError(
                    "cross_traffic.packet_bytes", f"must be a whole number, not {v['packet_bytes']}"
                )
            v["packet_bytes"] = int(v["packet_bytes"])
        return cls(**v)


@dataclass(frozen=True)
class LinkTraceRef:
    """A link trace file (absolute path once a runner gets it) and an optional fixed
    start offset in ms (None: drawn from the seed)."""

    file: str
    offset_ms: int | None = None
    sha256: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LinkTraceRef:
        """Build from ``{"file": "/abs/x.down", "offset_ms": null, "sha256": ".."}``."""
        if not isinstance(d, Mapping):
            raise PathValueError("link_trace", "must be a table of file, offset_ms, sha256")
        _unknown(d, {"file", "offset_ms", "sha256"}, "link_trace.")
        if not isinstance(d.get("file"), str) or not d["file"]:
            raise PathValueError("link_trace.file", "is required (a file name)")
        offset = d.get("offset_ms")
        if offset is not None:
            offset = _number(d, "offset_ms", "link_trace.")
            if offset < 0 or offset != int(offset):
                raise PathValueError(
                    "link_trace.offset_ms", f"must be a whole number >= 0, not {offset}"
                )
            offset = int(offset)
        sha = d.get("sha256")
        if sha is not None and not isinstance(sha, str):
            raise PathValueError("link_trace.sha256", "must be a string")
        return cls(d["file"], offset, sha)


@dataclass(frozen=True)
class LinkConfig:
    """One direction of the path. See the module docstring for the semantics and units."""

    rate_bps: float
    buffer_bytes: int
    delay_s: float
    jitter_s: float = 0.0
    loss: float = 0.0
    gilbert: Gilbert | None = None
    rate_schedule: RateSchedule | None = None
    cross_traffic: CrossTraffic | None = None
    link_trace: LinkTraceRef | None = None

    def __post_init__(self) -> None:
        if not self.rate_bps > 0:
            raise PathValueError("rate_bps", f"must be > 0, not {self.rate_bps}")
        if self.buffer_bytes < 0:
            raise PathValueError("buffer_bytes", f"must be >= 0, not {self.buffer_bytes}")
        if self.delay_s < 0:
            raise PathValueError("delay_s", f"must be >= 0, not {self.delay_s}")
        if self.jitter_s < 0:
            raise PathValueError("jitter_s", f"must be >= 0, not {self.jitter_s}")
        _probability(self.loss, "loss")
        if self.link_trace is not None and self.rate_schedule is not None:
            raise PathValueError(
                "link_trace", "cannot be combined with rate_schedule (both set the rate)"
            )

    KEYS = (
        "rate_bps",
        "buffer_bytes",
        "delay_s",
        "jitter_s",
        "loss",
        "gilbert",
        "rate_schedule",
        "cross_traffic",
        "link_trace",
    )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LinkConfig:
        """Build from the run config's per-direction dict (docs/lab-protocol.md).

        >>> LinkConfig.from_dict({"rate_bps": 5e6, "buffer_bytes": 30000, "delay_s": 0.018})
        ... # doctest: +ELLIPSIS
        LinkConfig(rate_bps=5000000.0, buffer_bytes=30000, delay_s=0.018, jitter_s=0.0, ...)
        """
        _unknown(d, set(cls.KEYS), "")
        for key in ("rate_bps", "buffer_bytes", "delay_s"):
            if key not in d:
                raise PathValueError(key, "is required")
        buffer = _number(d, "buffer_bytes")
        if buffer != int(buffer):
            raise PathValueError("buffer_bytes", f"must be a whole number of bytes, not {buffer}")
        gilbert = d.get("gilbert")
        schedule = d.get("rate_schedule")
        cross = d.get("cross_traffic")
        trace = d.get("link_trace")
        return cls(
            rate_bps=_number(d, "rate_bps"),
            buffer_bytes=int(buffer),
            delay_s=_number(d, "delay_s"),
            jitter_s=_number(d, "jitter_s") if d.get("jitter_s") is not None else 0.0,
            loss=_number(d, "loss") if d.get("loss") is not None else 0.0,
            gilbert=Gilbert.from_dict(gilbert) if gilbert is not None else None,
            rate_schedule=RateSchedule.from_dict(schedule) if schedule is not None else None,
            cross_traffic=CrossTraffic.from_dict(cross) if cross is not None else None,
            link_trace=LinkTraceRef.from_dict(trace) if trace is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The run-config dict (JSON-ready); inverse of :meth:`from_dict`."""
        return asdict(self)


def direction_seed(seed: int, direction: str) -> int:
    """The PRNG seed of one direction: ``seed*2+1`` for ``down``, ``seed*2+2`` for ``up``.

    >>> direction_seed(7, "down"), direction_seed(7, "up")
    (15, 16)
    """
    if direction == "down":
        return seed * 2 + 1
    if direction == "up":
        return seed * 2 + 2
    raise ValueError(f"direction must be 'down' or 'up', not {direction!r}")


@dataclass
class LinkStats:
    """Counters of one link: packets offered, dropped by random loss, tail-dropped,
    delivered; and the cross traffic's packets offered, tail-dropped and bytes served."""

    sent: int = 0
    lost: int = 0
    tail_dropped: int = 0
    delivered_bytes: int = 0
    cross_sent: int = 0
    cross_dropped: int = 0
    cross_bytes: int = 0

    @property
    def dropped(self) -> int:
        """All packets of the path's own the link dropped (random loss + tail drop)."""
        return self.lost + self.tail_dropped


class CrossArrivals:
    """The arrival times (seconds) of cross-traffic packets, in order (see :class:`CrossTraffic`).

    Poisson at ``lam`` = load * rate / (8 * packet_bytes) per second; ON/OFF: the chain
    starts ON with probability mean_on/(mean_on + mean_off), each period lasts an
    exponential time of its mean, and arrivals are Poisson at ``lam * (on + off) / on``
    within ON periods only.
    """

    def __init__(self, cfg: CrossTraffic, rate_bps: float, rng: random.Random) -> None:
        self._rng = rng
        lam = cfg.load * rate_bps / (8.0 * cfg.packet_bytes)
        self._on_off = cfg.mean_off_s > 0
        if self._on_off:
            on, off = cfg.mean_on_s, cfg.mean_off_s
            self._lam = lam * (on + off) / on
            self._means = (off, on)  # indexed by the state: 0 OFF, 1 ON
            self._on = rng.random() < on / (on + off)
            self._end = rng.expovariate(1.0 / self._means[self._on])
        else:
            self._lam = lam
        self._t = 0.0

    def next(self) -> float:
        """The next arrival time."""
        rng = self._rng
        if not self._on_off:
            self._t += rng.expovariate(self._lam)
            return self._t
        while True:
            if self._on:
                t = self._t + rng.expovariate(self._lam)
                if t <= self._end:
                    self._t = t
                    return t
            # the current period ends (an ON period without a further arrival, or OFF)
            self._t = self._end
            self._on = not self._on
            self._end += rng.expovariate(1.0 / self._means[self._on])


@dataclass
class Link:
    """A stateful one-direction link; :meth:`send` tells when (or whether) a packet arrives.

    ``send`` must be called with non-decreasing ``t``. ``trace`` is the parsed link trace
    when the config has ``link_trace`` (read from its file when not given).

    >>> link = Link(LinkConfig(rate_bps=8e6, buffer_bytes=3000, delay_s=0.01), seed=1)
    >>> link.send(0.0, 1000), link.send(0.0, 1000)   # 1 ms serialisation each
    (0.011, 0.012)
    """

    config: LinkConfig
    seed: int
    trace: LinkTrace | None = None
    stats: LinkStats = field(default_factory=LinkStats)

    def __post_init__(self) -> None:
        cfg = self.config
        self._rng = random.Random(self.seed)
        self._schedule_rng = random.Random(f"rate-schedule/{self.seed}")
        sched = cfg.rate_schedule
        self._phase = self._schedule_rng.uniform(0.0, sched.interval_s) if sched else 0.0
        self._rates: list[float] = []
        self._link_free = 0.0
        self._queue: deque[tuple[float, int]] = deque()  # (depart time, bytes), FIFO
        self._queued = 0
        self._bad = False  # Gilbert-Elliott state
        self._last_t = -math.inf
        self._pos = 0  # link trace: bytes of opportunities used or lost so far
        self._offset_ms = 0
        if cfg.link_trace is not None:
            if self.trace is None:
                self.trace = LinkTrace.read(cfg.link_trace.file)
            offset = cfg.link_trace.offset_ms
            if offset is None:
                offset = random.Random(f"link-trace/{self.seed}").randrange(self.trace.period_ms)
            self._offset_ms = offset
        self._cross = None
        self._cross_next = math.inf
        ct = cfg.cross_traffic
        if ct is not None and ct.load > 0:
            self._cross = CrossArrivals(
                ct, cfg.rate_bps, random.Random(f"cross-traffic/{self.seed}")
            )
            self._cross_next = self._cross.next()

    # -- pieces, each one step of the model ------------------------------------------
    def _lose(self) -> bool:
        ge = self.config.gilbert
        if ge is None:
            return self.config.loss > 0 and self._rng.random() < self.config.loss
        if self._bad:
            self._bad = self._rng.random() >= ge.p_bg
        else:
            self._bad = self._rng.random() < ge.p_gb
        p = ge.loss_bad if self._bad else ge.loss_good
        return p > 0 and self._rng.random() < p

    def rate_at(self, t: float) -> float:
        """The bottleneck rate (bits/s) in force at time ``t`` (seconds; without a link trace)."""
        sched = self.config.rate_schedule
        if sched is None:
            return self.config.rate_bps
        k = math.floor((t + self._phase) / sched.interval_s)
        while len(self._rates) <= k:
            self._rates.append(self._schedule_rng.uniform(sched.lo_bps, sched.hi_bps))
        return self._rates[k]

    @property
    def phase_s(self) -> float:
        """The rate schedule's phase (seconds; 0 without a schedule)."""
        return self._phase

    @property
    def offset_ms(self) -> int:
        """The link trace's start offset (ms; 0 without a trace)."""
        return self._offset_ms

    def queued_bytes(self, t: float) -> int:
        """Bytes at the bottleneck not yet fully serialised at time ``t``."""
        q = self._queue
        while q and q[0][0] <= t:
            self._queued -= q.popleft()[1]
        return self._queued

    def _jitter(self) -> float:
        j = self.config.jitter_s
        extra = self.config.delay_s + (self._rng.uniform(-j, j) if j > 0 else 0.0)
        return extra if extra > 0 else 0.0

    def _serialise(self, t: float, nbytes: int) -> float | None:
        """Queue ``nbytes`` arriving at the bottleneck at ``t``: its departure time, or
        None when the buffer is full (tail drop)."""
        if self.queued_bytes(t) + nbytes > self.config.buffer_bytes:
            return None
        trace = self.trace
        if trace is None:
            start = t if t > self._link_free else self._link_free
            depart = start + 8.0 * nbytes / self.rate_at(start)
        else:
            before = OPPORTUNITY_BYTES * trace.opportunities_before(t * 1000.0 + self._offset_ms)
            pos = self._pos if self._pos > before else before
            self._pos = pos + nbytes
            last = (self._pos - 1) // OPPORTUNITY_BYTES
            depart = (trace.opportunity_ms(last) - self._offset_ms) / 1000.0
            if depart < t:  # rounding: an opportunity at t ms is not before t
                depart = t
        self._link_free = depart
        self._queue.append((depart, nbytes))
        self._queued += nbytes
        return depart

    def advance(self, t: float) -> None:
        """Let the cross traffic that arrives up to time ``t`` into the queue."""
        cross = self.config.cross_traffic
        if self._cross is None or cross is None:
            return
        size = cross.packet_bytes
        st = self.stats
        while self._cross_next <= t:
            st.cross_sent += 1
            if self._serialise(self._cross_next, size) is None:
                st.cross_dropped += 1
            else:
                st.cross_bytes += size
            self._cross_next = self._cross.next()

    # -- the model ----------------------------------------------------------------------
    def send(self, t: float, nbytes: int) -> float | None:
        """Offer a packet of ``nbytes`` at time ``t``; its arrival time, or None if dropped."""
        if t < self._last_t:
            raise ValueError(f"send times must not decrease ({t} < {self._last_t})")
        self._last_t = t
        self.advance(t)
        self.stats.sent += 1
        if self._lose():
            self.stats.lost += 1
            return None
        depart = self._serialise(t, nbytes)
        if depart is None:
            self.stats.tail_dropped += 1
            return None
        self.stats.delivered_bytes += nbytes
        return depart + self._jitter()


@dataclass
class PathModel:
    """Both directions of a path: ``down`` (server -> client) and ``up`` (client -> server)."""

    down: Link
    up: Link

    @classmethod
    def from_config(cls, path: Mapping[str, Any], seed: int) -> PathModel:
        """Build from the run config's ``path`` dict and the run's ``seed``."""
        return cls(
            down=Link(LinkConfig.from_dict(path["down"]), direction_seed(seed, "down")),
            up=Link(LinkConfig.from_dict(path["up"]), direction_seed(seed, "up")),
        )

    @property
    def sent(self) -> int:
        """Packets offered to the path, both directions."""
        return self.down.stats.sent + self.up.stats.sent

    @property
    def dropped(self) -> int:
        """Packets the path dropped, both directions."""
        return self.down.stats.dropped + self.up.stats.dropped
