"""Are per-run values clustered? Silverman's bandwidth test for the number of modes.

Silverman (1981), "Using kernel density estimates to investigate multimodality", JRSS B
43:97-99; the smoothed bootstrap as in Efron & Tibshirani (1993), section 16.5. Written
from the paper, no code taken from elsewhere.

With a Gaussian kernel, the number of modes of the kernel density estimate
``f_h(x) = mean(phi((x - x_i) / h)) / h`` never grows as the bandwidth ``h`` grows
(Silverman's theorem), so the **critical bandwidth** ``h_k`` -- the smallest ``h`` whose
estimate has at most ``k`` modes -- is well defined and found by bisection. A large
``h_k`` means the data need much smoothing to look ``k``-modal: evidence of more than
``k`` modes. Its p-value comes from a smoothed bootstrap from ``f_{h_k}`` rescaled to the
sample's variance: ``y_i = mean + (x*_i - mean + h_k e_i) / sqrt(1 + h_k^2 / var)``
(``x*`` resampled, ``e`` standard normal); p = the share of bootstrap samples whose
estimate at ``h_k`` has more than ``k`` modes. The test is conservative (Hall & York
2001): a small p is strong evidence, a large one is not proof of one mode.

:func:`modes` tests ``k = 1, 2, ...`` in turn and stops at the first ``k`` not rejected;
the modes it reports are those of the estimate at that ``h_k``.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

#: Points of the grid the density is evaluated on (modes are counted there).
GRID = 512
#: Bisection steps for the critical bandwidth (relative precision ~ 2^-40).
STEPS = 40
#: Bootstrap samples evaluated at a time (samples x runs x grid cells, 8 bytes each).
_BLOCK_CELLS = 1 << 22


class Modes(NamedTuple):
    """What :func:`modes` found: ``k`` modes (the first count not rejected at ``alpha``),
    their ``locations`` (ascending, the values' unit), ``sizes``: the values in each
    mode's basin (split at the estimate's minima between modes), the critical bandwidth
    of each tested count and its p-value (``bandwidths[j]``, ``p_values[j]`` for ``j + 1``
    modes)."""

    k: int
    locations: tuple[float, ...]
    sizes: tuple[int, ...]
    bandwidths: tuple[float, ...]
    p_values: tuple[float, ...]

    @property
    def clustered(self) -> bool:
        """At least two modes holding two values or more each (not one outlying value)."""
        return sum(n >= 2 for n in self.sizes) >= 2


def _grid(x: np.ndarray, h: float) -> np.ndarray:
    """The evaluation grid of the estimate of ``x`` at bandwidth ``h``: 3 h past either end
    (no mode lies outside the data's range)."""
    return np.linspace(x.min() - 3 * h, x.max() + 3 * h, GRID)


def density(x: np.ndarray, h: float | np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The Gaussian kernel density estimate of the rows of ``x`` (samples x values, or one
    sample) at ``grid``, up to its constant factor (``sum exp(-((g - x_i) / h)^2 / 2)``)."""
    x = np.atleast_2d(x)
    h = np.reshape(np.asarray(h, float), (-1, 1, 1))
    z = (grid[None, None, :] - x[:, :, None]) / h
    return np.exp(-0.5 * z * z).sum(axis=1)


def peaks(f: np.ndarray) -> np.ndarray:
    """Where each row of ``f`` (samples x grid) has a local maximum: a boolean mask of the
    grid points ``1 ..`` (samples x grid - 1) marking the points a rise reaches (through a
    plateau, if any) and a fall leaves."""
    f = np.atleast_2d(f)
    d = np.sign(np.diff(f, axis=1))
    last = np.zeros_like(d)  # the last nonzero slope up to each step: plateaus carry it
    prev = np.zeros(len(d))
    for j in range(d.shape[1]):
        prev = np.where(d[:, j] != 0, d[:, j], prev)
        last[:, j] = prev
    falls = np.c_[d[:, 1:] < 0, np.ones((len(d), 1), bool)]  # the grid's last point: rising into it
    return (last > 0) & falls


def mode_count(f: np.ndarray) -> np.ndarray:
    """The local maxima of each row of ``f`` (samples x grid), see :func:`peaks`.

    >>> mode_count(np.array([[0, 1, 0, 2, 2, 0], [0, 1, 2, 3, 2, 1], [0, 1, 1, 2, 1, 0]])).tolist()
    [2, 1, 1]
    """
    return peaks(f).sum(axis=1)


def _modes_at(x: np.ndarray, h: float) -> int:
    return int(mode_count(density(x, h, _grid(x, h)))[0])


def critical_bandwidth(x: np.ndarray, k: int) -> float:
    """The smallest bandwidth (the values' unit) whose Gaussian estimate of ``x`` has at
    most ``k`` modes on the :data:`GRID` points (a dip shallower than the grid resolves is
    not seen: ~1e-4 relative near a merge); 0 when ``x`` has at most ``k`` distinct values.

    >>> round(critical_bandwidth(np.array([0.0, 1.0]), 1), 3)   # two equal bumps merge at h = d / 2
    0.5
    """
    x = np.asarray(x, float)
    if len(np.unique(x)) <= k:
        return 0.0
    lo, hi = 0.0, float(x.max() - x.min())  # at h >= the range the estimate is unimodal
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        if _modes_at(x, mid) <= k:
            hi = mid
        else:
            lo = mid
    return hi


def silverman_p(x: np.ndarray, k: int, h: float, *, n_boot: int, seed: int) -> float:
    """The smoothed-bootstrap p-value of "at most ``k`` modes" at critical bandwidth ``h``
    (module doc); 1 when ``h`` is 0."""
    x = np.asarray(x, float)
    n = len(x)
    if h <= 0 or n < 3:
        return 1.0
    rng = np.random.default_rng(seed)
    mean, var = x.mean(), x.var()
    scale = 1.0 / np.sqrt(1.0 + h * h / var)
    block = max(1, _BLOCK_CELLS // (n * GRID))
    more = 0
    for start in range(0, n_boot, block):
        b = min(block, n_boot - start)
        picks = x[rng.integers(0, n, size=(b, n))]
        y = mean + (picks - mean + h * rng.standard_normal((b, n))) * scale
        lo, hi = y.min(axis=1) - 3 * h, y.max(axis=1) + 3 * h
        grids = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, GRID)[None, :]
        z = (grids[:, None, :] - y[:, :, None]) / h
        f = np.exp(-0.5 * z * z).sum(axis=1)
        more += int((mode_count(f) > k).sum())
    return more / n_boot


def modes(
    values: np.ndarray,
    *,
    alpha: float = 0.05,
    n_boot: int = 999,
    seed: int = 0,
    max_modes: int = 6,
) -> Modes:
    """Silverman's test for ``k = 1, 2, ...`` modes of ``values`` (one per run): ``k`` is the
    first count whose p-value is at least ``alpha`` (or ``max_modes``); the locations are
    the modes of the estimate at its critical bandwidth. Fewer than 3 distinct values: one
    mode per distinct value is all that can be said, untested (p-values empty).

    >>> m = modes(np.r_[np.linspace(0.0, 0.02, 8), np.linspace(0.2, 0.22, 8)], seed=1)
    >>> m.k, [round(v, 2) for v in m.locations], m.sizes, m.clustered
    (2, [0.01, 0.21], (8, 8), True)
    """
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    distinct = np.unique(x)
    if len(distinct) < 3:
        sizes = tuple(int((x == v).sum()) for v in distinct)
        return Modes(len(distinct), tuple(map(float, distinct)), sizes, (), ())
    hs: list[float] = []
    ps: list[float] = []
    k = 1
    while True:
        h = critical_bandwidth(x, k)
        hs.append(h)
        ps.append(silverman_p(x, k, h, n_boot=n_boot, seed=seed + k))
        if ps[-1] >= alpha or k >= max_modes:
            break
        k += 1
    h = hs[-1]
    if h <= 0:
        sizes = tuple(int((x == v).sum()) for v in distinct)
        return Modes(k, tuple(map(float, distinct)), sizes, tuple(hs), tuple(ps))
    grid = _grid(x, h)
    f = density(x, h, grid)[0]
    at = np.flatnonzero(peaks(f)[0]) + 1
    # each basin ends at the lowest point of the estimate between two neighbouring modes
    cuts = [grid[a + int(np.argmin(f[a : b + 1]))] for a, b in itertools.pairwise(at)]
    counts = np.bincount(np.searchsorted(cuts, x), minlength=len(at))
    return Modes(
        len(at), tuple(map(float, grid[at])), tuple(map(int, counts)), tuple(hs), tuple(ps)
    )
