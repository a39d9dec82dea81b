"""The mobile client's random elements (docs/lab-protocol.md, "Client variability"):
per-packet CPU time drawn from a lognormal law, and an application read rate that is
redrawn every interval. Both are seeded from the run's seed, each from its own
generator, so neither depends on the other or on the traffic.

Units: seconds, bits per second. A coefficient of variation (``cv``) of 0 turns the
source off (the value is the mean, no draw).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


def lognormal(rng: random.Random, mean: float, cv: float) -> float:
    """A lognormal draw with the given mean and coefficient of variation (``mean`` if
    ``cv`` is 0): ``exp(mu + sigma*z)``, ``sigma^2 = ln(1 + cv^2)``, ``mu = ln(mean) - sigma^2/2``.

    >>> lognormal(random.Random(1), 2.5, 0.0)
    2.5
    """
    if cv == 0 or mean == 0:
        return mean
    s2 = math.log1p(cv * cv)
    return math.exp(math.log(mean) - s2 / 2 + math.sqrt(s2) * rng.gauss(0.0, 1.0))


def cpu_seed(seed: int) -> str:
    """The seed of the per-packet CPU draws of run ``seed``."""
    return f"client-cpu/{seed}"


def read_seed(seed: int) -> str:
    """The seed of the read-rate draws of run ``seed``."""
    return f"read-rate/{seed}"


@dataclass
class CpuTime:
    """Per-packet CPU time (seconds): lognormal with ``mean_s`` and ``cv``, one draw per packet."""

    mean_s: float
    cv: float
    seed: int
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(cpu_seed(self.seed))

    def draw(self) -> float:
        """The CPU time of the next packet."""
        return lognormal(self._rng, self.mean_s, self.cv)


@dataclass
class ReadRate:
    """The application's read rate (bits/s) over time: ``rate_bps`` times a lognormal
    factor of mean 1 and ``cv``, redrawn every ``interval_s`` from t=0 (drawn lazily, in
    interval order). Data is consumed at the rate of the interval its reading starts in."""

    rate_bps: float
    cv: float
    interval_s: float
    seed: int
    _rng: random.Random = field(init=False, repr=False)
    _factors: list[float] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(read_seed(self.seed))

    def at(self, t: float) -> float:
        """The read rate in force at time ``t`` (seconds)."""
        if self.cv == 0:
            return self.rate_bps
        k = math.floor(t / self.interval_s)
        while len(self._factors) <= k:
            self._factors.append(lognormal(self._rng, 1.0, self.cv))
        return self.rate_bps * self._factors[k]
