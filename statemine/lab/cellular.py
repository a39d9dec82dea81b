"""Cellular links: link traces in the mahimahi format and a synthetic trace generator.

A **link trace** (mahimahi, Netravali et al., USENIX ATC 2015) lists delivery
opportunities: one line per opportunity for one :data:`OPPORTUNITY_BYTES`-byte packet,
the line a whole number of milliseconds since the start of the trace, non-decreasing
(a value repeated k times: k opportunities in that millisecond). The trace repeats at
its end: loop ``r`` has the opportunities ``T_i + r*P`` where ``P`` is the last
timestamp (the period, ms). :class:`LinkTrace` answers the two questions the path model
asks in O(1): how many opportunities come before a time, and when opportunity ``k`` is.

:func:`synthesize` makes a trace from a :class:`Profile`: a Markov-modulated rate (the
log of the rate follows an AR(1) chain stepped every ``step_ms``) interrupted by
outages (no opportunity at all) that start as a Poisson process and last an exponential
time. :data:`PROFILES` holds profiles fitted to summary statistics of real traces
(:func:`summarize`; the numbers and how they were measured are beside them).
"""

from __future__ import annotations

import math
import os
import random
import stat
from array import array
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import InputError

#: Bytes one delivery opportunity carries (mahimahi's MTU-sized packet).
OPPORTUNITY_BYTES = 1500
#: Longest period a trace may have, ms (one hour): the O(1) lookup table has one entry per ms.
MAX_PERIOD_MS = 3_600_000
#: Most lines a trace file may have (about 1.3 GB/s of capacity over a 1-minute trace).
MAX_LINES = 5_000_000
#: Largest trace file read, bytes.
MAX_FILE_BYTES = 64 * 2**20
#: A gap between consecutive opportunities at least this long is an outage, ms.
OUTAGE_MS = 200
#: Bin of the rate statistics (:func:`summarize`), ms.
BIN_MS = 100
#: Lags (in :data:`BIN_MS` bins) of the rate autocorrelations the multi-scale profiles are
#: fitted to: 0.1-0.5 s and 2-10 s. The lags 1 s and 5 s are left out on purpose: the
#: tests check the generator there (and the CV over 1 s bins), where it was not fitted.
FIT_LAGS = (1, 2, 3, 5, 20, 30, 70, 100)
#: Time constants (s) of the generator's AR(1) components that a fit may weight: from
#: 50 ms to 100 s, so that a profile keeps the traces' memory at 100 ms, 1 s and 10 s.
TIME_CONSTANTS_S = (0.05, 0.15, 0.5, 1.5, 4.0, 10.0, 30.0, 100.0)


class TraceError(ValueError):
    """A malformed trace: ``line`` (1-based, or None) and ``reason``."""

    def __init__(self, line: int | None, reason: str) -> None:
        self.line, self.reason = line, reason
        super().__init__(f"line {line}: {reason}" if line else reason)


def parse_times(text: str) -> np.ndarray:
    """The timestamps (ms, int64) of a trace's text; :class:`TraceError` names the line
    of the first problem (empty, non-numeric, decreasing, all zeros, too long).

    >>> parse_times("0\\n0\\n3\\n").tolist()
    [0, 0, 3]
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise TraceError(None, "empty link trace (one timestamp in ms per line expected)")
    if len(lines) > MAX_LINES:
        raise TraceError(MAX_LINES + 1, f"more than {MAX_LINES} lines")
    for i, ln in enumerate(lines):
        s = ln.strip()
        if not (s.isascii() and s.isdigit()) or len(s) > 12:
            raise TraceError(i + 1, f"not a whole number of milliseconds: {ln[:40]!r}")
    times = np.array([int(s) for s in lines], dtype=np.int64)
    down = np.flatnonzero(np.diff(times) < 0)
    if down.size:
        i = int(down[0]) + 1
        raise TraceError(i + 1, f"timestamps decrease ({times[i - 1]} then {times[i]})")
    if times[-1] == 0:
        raise TraceError(None, "every timestamp is 0: the trace has no duration")
    if times[-1] > MAX_PERIOD_MS:
        raise TraceError(
            len(times), f"the trace lasts {times[-1]} ms, longer than {MAX_PERIOD_MS} ms"
        )
    return times


@dataclass(frozen=True, eq=False)
class LinkTrace:
    """A parsed link trace. ``times_ms`` non-decreasing, ``period_ms = times_ms[-1] > 0``."""

    times_ms: array  # 'q', the opportunities of loop 0, ms
    period_ms: int
    before: array  # 'q', before[c] = number of timestamps < c, for c in 0..period_ms
    at_period: int  # number of timestamps equal to period_ms

    @classmethod
    def from_times(cls, times: np.ndarray) -> LinkTrace:
        """Build from validated timestamps (:func:`parse_times`)."""
        period = int(times[-1])
        counts = np.bincount(times, minlength=period + 1)
        before = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        return cls(
            array("q", times.astype(np.int64).tobytes()),
            period,
            array("q", before.tobytes()),
            int(counts[period]),
        )

    @classmethod
    def read(cls, path: str | Path) -> LinkTrace:
        """Read a trace file; :class:`InputError` names the file and line of a problem."""
        return cls.from_times(read_times(path))

    @property
    def opportunities(self) -> int:
        """Opportunities in one loop of the trace."""
        return len(self.times_ms)

    @property
    def mean_rate_bps(self) -> float:
        """The trace's average capacity, bits per second."""
        return OPPORTUNITY_BYTES * 8.0 * len(self.times_ms) / (self.period_ms / 1000.0)

    def opportunities_before(self, tt_ms: float) -> int:
        """How many opportunities lie strictly before trace time ``tt_ms`` (>= 0), O(1)."""
        p = self.period_ms
        r = math.floor(tt_ms / p)
        x = min(max(tt_ms - r * p, 0.0), float(p))
        c = math.ceil(x)
        n = r * len(self.times_ms) + self.before[c]
        if c == 0 and r > 0:  # loop r-1's opportunities at exactly r*P are not before
            n -= self.at_period
        return n

    def opportunity_ms(self, k: int) -> int:
        """Trace time (ms) of opportunity ``k`` (0-based, counting every loop), O(1)."""
        r, i = divmod(k, len(self.times_ms))
        return self.times_ms[i] + r * self.period_ms


def read_trace_bytes(path: str | Path) -> bytes:
    """The bytes of a link-trace file: a regular file (not a pipe or a device, which could
    block or never end) of at most ``MAX_FILE_BYTES``; errors name the file."""
    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(path, None, "not a regular file (a link trace is a text file)")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(path, None, f"cannot read the link trace: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(path, None, f"link trace larger than {MAX_FILE_BYTES} bytes")
    return data


def read_times(path: str | Path) -> np.ndarray:
    """The timestamps of a trace file (see :func:`parse_times`); errors name the file."""
    path = Path(path)
    data = read_trace_bytes(path)
    try:
        return parse_times(data.decode("ascii"))
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, line, "not a link trace (non-ASCII bytes)") from None
    except TraceError as exc:
        raise InputError(path, exc.line, exc.reason) from None


# -- summary statistics and the synthetic generator ---------------------------------------
@dataclass(frozen=True)
class Summary:
    """What :func:`summarize` measures of a trace (the generator's fitting targets).

    ``mean_mbps``: average capacity; ``cv``: coefficient of variation of the capacity in
    :data:`BIN_MS` bins outside outages; ``lag1``: lag-1 autocorrelation of the log
    capacity of consecutive non-outage bins; ``outages_per_min``: gaps between
    opportunities of at least :data:`OUTAGE_MS`, per minute; ``outage_ms``: their mean
    length; ``rate_acf``: the autocorrelation of the capacity in :data:`BIN_MS` bins at
    each lag of :data:`FIT_LAGS` (pairs of bins both outside outages; () when not
    measured).
    """

    mean_mbps: float
    cv: float
    lag1: float
    outages_per_min: float
    outage_ms: float
    rate_acf: tuple[float, ...] = ()


def binned_rates(times: np.ndarray, bin_ms: int = BIN_MS) -> tuple[np.ndarray, np.ndarray]:
    """``(rates, live)``: the capacity (Mbit/s) in each whole ``bin_ms`` bin of one loop of
    a trace, and whether the bin is outside outages (a bin that an outage -- a gap of at
    least :data:`OUTAGE_MS` -- covers entirely is outage time, not a rate of zero)."""
    period = int(times[-1])
    gaps = np.diff(times)
    nbins = period // bin_ms
    counts = np.bincount(times // bin_ms, minlength=nbins + 1)[:nbins].astype(float)
    covered = np.zeros(nbins + 1, dtype=int)
    for start, length in zip(times[:-1][gaps >= OUTAGE_MS], gaps[gaps >= OUTAGE_MS]):
        first, last = -(-(start + 1) // bin_ms), (start + length) // bin_ms  # inside the gap
        if last > first:
            covered[first] += 1
            covered[last] -= 1
    live = np.cumsum(covered)[:nbins] == 0
    return counts * OPPORTUNITY_BYTES * 8 / (bin_ms / 1000.0) / 1e6, live


def rate_autocorrelation(rates: np.ndarray, live: np.ndarray, lag: int) -> float:
    """Pearson correlation of ``rates[i]`` and ``rates[i + lag]`` over the pairs of bins
    that are both live (NaN with fewer than 3 pairs or no variation)."""
    both = live[:-lag] & live[lag:]
    a, b = rates[:-lag][both], rates[lag:][both]
    if a.size < 3 or a.std() == 0 or b.std() == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def rate_cv(times: np.ndarray, bin_ms: int) -> float:
    """Coefficient of variation of the capacity over live ``bin_ms`` bins."""
    rates, live = binned_rates(times, bin_ms)
    r = rates[live]
    return float(r.std() / r.mean()) if r.size and r.mean() > 0 else 0.0


def summarize(times: np.ndarray) -> Summary:
    """Summary statistics of one loop of a trace (timestamps in ms)."""
    period = int(times[-1])
    mean = OPPORTUNITY_BYTES * 8 * len(times) / (period / 1000.0) / 1e6
    gaps = np.diff(times)
    outage = gaps[gaps >= OUTAGE_MS]
    all_rates, is_live = binned_rates(times)
    rates = all_rates[is_live]
    cv = float(rates.std() / rates.mean()) if rates.size and rates.mean() > 0 else 0.0
    logs = np.log(np.maximum(rates, OPPORTUNITY_BYTES * 8 / (BIN_MS / 1000.0) / 1e6 / 2))
    lag1 = (
        float(np.corrcoef(logs[:-1], logs[1:])[0, 1]) if logs.size > 2 and logs.std() > 0 else 0.0
    )
    return Summary(
        mean,
        cv,
        lag1,
        outage.size / (period / 60_000.0),
        float(outage.mean()) if outage.size else 0.0,
        tuple(rate_autocorrelation(all_rates, is_live, k) for k in FIT_LAGS),
    )


@dataclass(frozen=True)
class Profile:
    """Parameters of :func:`synthesize` (rates in Mbit/s, times in ms).

    Outside outages the rate is ``exp(x)`` Mbit/s with ``x`` an AR(1) chain stepped every
    ``step_ms``: ``x' = mu + rho*(x - mu) + sqrt(1 - rho^2)*sigma*z``, ``z ~ N(0, 1)``;
    its stationary law is lognormal with mean ``mean_mbps`` and coefficient of variation
    ``cv`` (``sigma^2 = ln(1 + cv^2)``, ``mu = ln(mean_mbps) - sigma^2/2``). Outages start
    at rate ``outages_per_min`` per minute of live time (a Poisson process; the fitted
    profiles divide the measured rate by the live share, so that the rate per minute of
    trace matches) and last
    :data:`OUTAGE_MS` plus an exponential time, ``outage_ms`` on average (so that every
    outage is one by :func:`summarize`'s definition).

    ``scales`` (empty: the one AR(1) above, as before) makes the log rate a sum of
    independent AR(1) components, one per ``(share, time_constant_s)``: each stepped every
    ``step_ms`` with correlation ``exp(-step/time_constant)`` per step and a stationary
    variance of ``share * sigma^2``; the rest of the variance, ``1 - sum(shares)``, is
    white noise redrawn every step (``rho`` is then unused). The autocorrelation of the
    log rate at lag ``k`` steps is ``sum(share * exp(-k*step/time_constant))``, so a few
    components keep a trace's memory at 100 ms, 1 s and 10 s. Steps stay on the
    ``step_ms`` grid across outages.
    """

    mean_mbps: float
    cv: float
    rho: float
    outages_per_min: float
    outage_ms: float
    step_ms: int = BIN_MS
    scales: tuple[tuple[float, float], ...] = ()


#: Profiles fitted to the real traces of ../shared/cellular-traces (Saturator recordings
#: published with mahimahi). Measured once with :func:`summarize` on the .down files
#: (mean capacity; CV and lag-1 autocorrelation of the log capacity over 100 ms bins
#: outside outages; outages = gaps >= 200 ms between opportunities, per minute, and their
#: mean length); these are facts about the traces, not the traces. ``mean_mbps`` is the
#: mean of the live (non-outage) rate, set so that the overall mean (outages included)
#: matches the trace. tests/test_lab_cellular.py checks these numbers against the files
#: where they are present, and the generator's output against them everywhere.
PROFILES: dict[str, Profile] = {}  # filled below by _fitted()


def stationary(profile: Profile) -> tuple[float, float]:
    """``(mu, sigma)`` of the log rate's stationary normal law."""
    s2 = math.log1p(profile.cv**2)
    return math.log(profile.mean_mbps) - s2 / 2, math.sqrt(s2)


def fit_scales(rate_acf: tuple[float, ...], cv: float) -> tuple[tuple[float, float], ...]:
    """The ``scales`` of a :class:`Profile` whose rate has autocorrelation ``rate_acf`` at
    :data:`FIT_LAGS` (100 ms bins) and coefficient of variation ``cv``: the rate's
    correlations are turned into the log rate's (for a lognormal rate,
    ``rho_log = ln(1 + rho*cv^2) / ln(1 + cv^2)``), then matched in least squares by
    non-negative shares of :data:`TIME_CONSTANTS_S` plus white noise, the shares summing
    to 1 (a heavily weighted row of the non-negative least squares). Shares below 0.005
    are dropped."""
    from scipy.optimize import nnls

    s2 = math.log1p(cv**2)
    target = [math.log1p(max(r, -0.99) * math.expm1(s2)) / s2 for r in rate_acf]
    lags = np.asarray(FIT_LAGS, dtype=float)[:, None]
    decay = np.exp(-BIN_MS / 1000.0 / np.asarray(TIME_CONSTANTS_S))[None, :]
    design = np.hstack([decay**lags, np.zeros((len(FIT_LAGS), 1))])  # last: white noise
    design = np.vstack([design, np.full((1, design.shape[1]), 100.0)])
    shares, _ = nnls(design, np.array([*target, 100.0]))
    return tuple(
        (round(float(w), 4), tau) for w, tau in zip(shares[:-1], TIME_CONSTANTS_S) if w >= 0.005
    )


#: Delivery opportunities per ms at 1 Mbit/s.
_PER_MS_AT_1MBPS = 1e6 / 8 / OPPORTUNITY_BYTES / 1000


def _outage_end(rng: random.Random, start: float, profile: Profile) -> float:
    """When an outage beginning at ``start`` (ms) ends: at least :data:`OUTAGE_MS`, plus an
    exponential remainder of mean ``outage_ms - OUTAGE_MS`` (one draw of ``rng``)."""
    return start + OUTAGE_MS + rng.expovariate(1.0 / max(profile.outage_ms - OUTAGE_MS, 1.0))


def synthesize(profile: Profile, duration_s: float, seed: int) -> np.ndarray:
    """A synthetic trace of ``duration_s`` seconds (timestamps in ms, int64, the last
    one at the end of the trace so it loops with period ``duration_s``).

    Within a step of ``step_ms`` at rate ``R`` Mbit/s, ``R*step_ms/12`` opportunities are
    spread evenly (the fraction carried to the next step), so a rate below one packet per
    step still gets through.
    """
    if profile.scales:
        return _synthesize_scales(profile, duration_s, seed)
    rng = random.Random(f"cellular/{seed}")
    mu, sigma = stationary(profile)
    rho, step = profile.rho, profile.step_ms
    end_ms = round(duration_s * 1000)
    per_ms = _PER_MS_AT_1MBPS
    out_rate = profile.outages_per_min / 60_000.0  # per ms
    x = rng.gauss(mu, sigma)
    next_outage = rng.expovariate(out_rate) if out_rate > 0 else math.inf
    times: list[int] = []
    carry = 0.0
    t = 0.0
    while t < end_ms:
        if t >= next_outage:
            t = _outage_end(rng, next_outage, profile)
            next_outage = t + rng.expovariate(out_rate)
            carry = 0.0
            continue
        span = min(step, next_outage - t, end_ms - t)
        want = math.exp(x) * per_ms * span + carry
        n = int(want)
        carry = want - n
        times.extend(int(t + span * (j + 1) / (n + 1)) for j in range(n))
        t += span
        x = mu + rho * (x - mu) + math.sqrt(1 - rho * rho) * sigma * rng.gauss(0.0, 1.0)
    times.append(end_ms)
    return np.array(times, dtype=np.int64)


def _synthesize_scales(profile: Profile, duration_s: float, seed: int) -> np.ndarray:
    """:func:`synthesize` for a profile with ``scales`` (several AR(1) components and white
    noise in the log rate; steps aligned to the ``step_ms`` grid)."""
    rng = random.Random(f"cellular/{seed}")
    mu, sigma = stationary(profile)
    step = profile.step_ms
    parts = [
        (math.exp(-step / 1000.0 / tau), math.sqrt(share) * sigma) for share, tau in profile.scales
    ]
    noise = math.sqrt(max(0.0, 1.0 - sum(share for share, _ in profile.scales))) * sigma
    end_ms = round(duration_s * 1000)
    per_ms = _PER_MS_AT_1MBPS
    out_rate = profile.outages_per_min / 60_000.0  # per ms
    xs = [rng.gauss(0.0, sd) for _, sd in parts]
    white = rng.gauss(0.0, noise)
    next_outage = rng.expovariate(out_rate) if out_rate > 0 else math.inf
    times: list[int] = []
    carry = 0.0
    t = 0.0
    k = 0  # index of the current step: [k*step, (k+1)*step)
    while t < end_ms:
        if t >= next_outage:
            t = _outage_end(rng, next_outage, profile)
            next_outage = t + rng.expovariate(out_rate)
            carry = 0.0
        else:
            span = min((k + 1) * step - t, next_outage - t, end_ms - t)
            want = math.exp(mu + sum(xs) + white) * per_ms * span + carry
            n = int(want)
            carry = want - n
            times.extend(int(t + span * (j + 1) / (n + 1)) for j in range(n))
            t += span
        while t >= (k + 1) * step:  # the steps the time passed (outages included)
            k += 1
            xs = [
                a * x + math.sqrt(1 - a * a) * sd * rng.gauss(0.0, 1.0)
                for (a, sd), x in zip(parts, xs)
            ]
            white = rng.gauss(0.0, noise)
    times.append(end_ms)
    return np.array(times, dtype=np.int64)


def format_trace(times: np.ndarray) -> str:
    """The mahimahi text of timestamps: one per line."""
    return "\n".join(map(str, times.tolist())) + "\n"


def _fitted() -> dict[str, Profile]:
    """Each trace's one-scale profile under its name (the generator that made the shipped
    traces/cellular runs, unchanged) and its multi-scale profile under ``NAME@multiscale``
    (the traces' memory at 100 ms, 1 s and 10 s; :func:`fit_scales`)."""
    out = {}
    for name, (_, s) in MEASURED.items():
        live_share = max(1e-3, 1.0 - s.outages_per_min * s.outage_ms / 60_000.0)
        one = Profile(
            s.mean_mbps / live_share, s.cv, s.lag1, s.outages_per_min / live_share, s.outage_ms
        )
        out[name] = one
        out[f"{name}{MULTI_SCALE}"] = replace(one, scales=FITTED_SCALES[name])
    return out


#: Suffix of the multi-scale profiles (``synthetic:verizon-lte-down@multiscale``).
MULTI_SCALE = "@multiscale"


#: Each profile's source file (under ../shared/cellular-traces) and its :func:`summarize`
#: figures (mean Mbit/s overall, CV, lag-1 autocorrelation of the log rate, outages per
#: minute, mean outage ms; rate autocorrelation at FIT_LAGS, added 2026-11-28), rounded;
#: measured on 2026-11-24 with statemine's summarize().
MEASURED: dict[str, tuple[str, Summary]] = {
    "verizon-lte-down": (
        "Verizon-LTE-short.down",
        Summary(
            5.028,
            0.696,
            0.780,
            2.143,
            466.0,
            (0.865, 0.814, 0.793, 0.752, 0.546, 0.483, 0.232, 0.069),
        ),
    ),
    "verizon-lte-up": (
        "Verizon-LTE-short.up",
        Summary(
            5.946,
            0.574,
            0.802,
            1.714,
            704.8,
            (0.862, 0.797, 0.749, 0.684, 0.433, 0.357, 0.223, 0.111),
        ),
    ),
    "tmobile-lte-down": (
        "TMobile-LTE-short.down",
        Summary(
            16.703,
            0.654,
            0.632,
            3.858,
            567.4,
            (0.824, 0.756, 0.712, 0.645, 0.329, 0.315, 0.065, -0.017),
        ),
    ),
    "tmobile-lte-up": (
        "TMobile-LTE-short.up",
        Summary(
            13.318,
            0.630,
            0.880,
            0.429,
            724.0,
            (0.926, 0.903, 0.885, 0.862, 0.741, 0.76, 0.746, 0.722),
        ),
    ),
    "att-lte-driving-down": (
        "ATT-LTE-driving-2016.down",
        Summary(
            4.560,
            0.975,
            0.685,
            11.0,
            426.2,
            (0.754, 0.639, 0.567, 0.489, 0.243, 0.165, -0.051, 0.062),
        ),
    ),
    "att-lte-driving-up": (
        "ATT-LTE-driving-2016.up",
        Summary(
            1.910,
            1.091,
            0.419,
            10.0,
            815.3,
            (0.694, 0.496, 0.451, 0.474, 0.174, 0.099, 0.053, 0.169),
        ),
    ),
    "tmobile-umts-driving-down": (
        "TMobile-UMTS-driving.down",
        Summary(
            2.020,
            0.708,
            0.864,
            10.728,
            734.0,
            (0.911, 0.888, 0.871, 0.841, 0.677, 0.592, 0.403, 0.286),
        ),
    ),
    "tmobile-umts-driving-up": (
        "TMobile-UMTS-driving.up",
        Summary(
            0.943,
            0.410,
            0.766,
            7.281,
            812.4,
            (0.781, 0.774, 0.738, 0.677, 0.526, 0.467, 0.348, 0.316),
        ),
    ),
}
#: :func:`fit_scales` of each profile's ``MEASURED`` rate autocorrelation and CV, written
#: out so that importing this module does not run the fit (scipy);
#: tests/test_cellular_memory.py checks that the fit gives these. (share, time constant s)
FITTED_SCALES: dict[str, tuple[tuple[float, float], ...]] = {
    "verizon-lte-down": ((0.1177, 0.05), (0.6088, 4.0), (0.2735, 10.0)),
    "verizon-lte-up": ((0.0398, 0.05), (0.2604, 0.5), (0.0379, 1.5), (0.2916, 4.0), (0.3424, 10.0)),
    "tmobile-lte-down": (
        (0.0851, 0.05),
        (0.0702, 0.15),
        (0.0295, 0.5),
        (0.2526, 1.5),
        (0.5534, 4.0),
    ),
    "tmobile-lte-up": ((0.1536, 0.5), (0.8164, 100.0)),
    "att-lte-driving-down": ((0.0779, 0.05), (0.1905, 0.15), (0.4583, 1.5), (0.2733, 4.0)),
    "att-lte-driving-up": (
        (0.2109, 0.05),
        (0.0512, 0.15),
        (0.1992, 0.5),
        (0.3954, 1.5),
        (0.1433, 100.0),
    ),
    "tmobile-umts-driving-down": (
        (0.0146, 0.05),
        (0.0322, 0.5),
        (0.0656, 1.5),
        (0.7689, 10.0),
        (0.0749, 30.0),
    ),
    "tmobile-umts-driving-up": ((0.1257, 0.5), (0.051, 1.5), (0.3261, 4.0), (0.3353, 100.0)),
}
PROFILES.update(_fitted())
