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
   every ``interval_s`` seconds from t=0; a packet is serialised at the rate of the
   interval in which its serialisation starts.

Determinism: loss and jitter draws come from one ``random.Random`` per direction, seeded
with :func:`direction_seed`; the rate schedule comes from a second generator of the same
seed so that it does not depend on the traffic. The same config, seed and sequence of
``send`` calls always give the same deliveries.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

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
        raise PathValueError(prefix + extra[0], f"unknown key (known: {', '.join(sorted(allowed))})")


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
    def from_dict(cls, d: Mapping[str, Any]) -> "Gilbert":
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
            raise PathValueError("rate_schedule.hi_bps", f"must be >= lo_bps ({self.lo_bps}), not {self.hi_bps}")
        if self.interval_s <= 0:
            raise PathValueError("rate_schedule.interval_s", f"must be > 0, not {self.interval_s}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RateSchedule":
        """Build from ``{"lo_bps": .., "hi_bps": .., "interval_s": 1.0}``."""
        if not isinstance(d, Mapping):
            raise PathValueError("rate_schedule", "must be a table of lo_bps, hi_bps, interval_s")
        _unknown(d, {"lo_bps", "hi_bps", "interval_s"}, "rate_schedule.")
        for key in ("lo_bps", "hi_bps"):
            if key not in d:
                raise PathValueError(f"rate_schedule.{key}", "is required")
        return cls(**{k: _number(d, k, "rate_schedule.") for k in d})


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

    KEYS = ("rate_bps", "buffer_bytes", "delay_s", "jitter_s", "loss", "gilbert", "rate_schedule")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LinkConfig":
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
        return cls(
            rate_bps=_number(d, "rate_bps"),
            buffer_bytes=int(buffer),
            delay_s=_number(d, "delay_s"),
            jitter_s=_number(d, "jitter_s") if d.get("jitter_s") is not None else 0.0,
            loss=_number(d, "loss") if d.get("loss") is not None else 0.0,
            gilbert=Gilbert.from_dict(gilbert) if gilbert is not None else None,
            rate_schedule=RateSchedule.from_dict(schedule) if schedule is not None else None,
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
    """Counters of one link: packets offered, dropped by random loss, tail-dropped, delivered."""

    sent: int = 0
    lost: int = 0
    tail_dropped: int = 0
    delivered_bytes: int = 0

    @property
    def dropped(self) -> int:
        """All packets the link dropped (random loss + tail drop)."""
        return self.lost + self.tail_dropped


@dataclass
class Link:
    """A stateful one-direction link; :meth:`send` tells when (or whether) a packet arrives.

    ``send`` must be called with non-decreasing ``t``.

    >>> link = Link(LinkConfig(rate_bps=8e6, buffer_bytes=3000, delay_s=0.01), seed=1)
    >>> link.send(0.0, 1000), link.send(0.0, 1000)   # 1 ms serialisation each
    (0.011, 0.012)
    """

    config: LinkConfig
    seed: int
    stats: LinkStats = field(default_factory=LinkStats)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._schedule_rng = random.Random(f"rate-schedule/{self.seed}")
        self._rates: list[float] = []
        self._link_free = 0.0
        self._queue: deque[tuple[float, int]] = deque()  # (depart time, bytes), FIFO
        self._queued = 0
        self._bad = False  # Gilbert-Elliott state
        self._last_t = -math.inf

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
        """The bottleneck rate (bits/s) in force at time ``t`` (seconds)."""
        sched = self.config.rate_schedule
        if sched is None:
            return self.config.rate_bps
        k = int(t // sched.interval_s)
        while len(self._rates) <= k:
            self._rates.append(self._schedule_rng.uniform(sched.lo_bps, sched.hi_bps))
        return self._rates[k]

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

    # -- the model ----------------------------------------------------------------------
    def send(self, t: float, nbytes: int) -> float | None:
        """Offer a packet of ``nbytes`` at time ``t``; its arrival time, or None if dropped."""
        if t < self._last_t:
            raise ValueError(f"send times must not decrease ({t} < {self._last_t})")
        self._last_t = t
        self.stats.sent += 1
        if self._lose():
            self.stats.lost += 1
            return None
        if self.queued_bytes(t) + nbytes > self.config.buffer_bytes:
            self.stats.tail_dropped += 1
            return None
        start = t if t > self._link_free else self._link_free
        depart = start + 8.0 * nbytes / self.rate_at(start)
        self._link_free = depart
        self._queue.append((depart, nbytes))
        self._queued += nbytes
        self.stats.delivered_bytes += nbytes
        return depart + self._jitter()


@dataclass
class Path:
    """Both directions of a path: ``down`` (server -> client) and ``up`` (client -> server)."""

    down: Link
    up: Link

    @classmethod
    def from_config(cls, path: Mapping[str, Any], seed: int) -> "Path":
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
