"""The statistics of ``statemine lab replicate``: the studentized bootstrap interval of a
difference of pooled shares (its coverage on a clustered mixture against a known truth),
the delta-method standard error and the runs needed for a +/-2 point interval (against
textbook formulas), and Silverman's test for modes (known critical bandwidths, its level
under one mode, its power on the clusters of the quic-go v0.65.0 jitter cell)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from statemine.compare import diff
from statemine.stats import modes as md
from statemine.stats.resampling import (
    _ratio_moments,
    bootstrap_delta,
    delta_se2,
    runs_for_halfwidth,
)
from statemine.traces import TraceSet

# A clustered side like quic-go v0.65.0 under jitter (per-run Recovery shares near 1, 11,
# 20 and 28%), its runs longer in some clusters, against a unimodal side near 28%.
CENTERS = np.array([0.01, 0.11, 0.20, 0.28])
PROBS = np.array([0.3, 0.15, 0.45, 0.10])
LENGTHS = np.array([2.0, 4.0, 3.0, 6.0])  # mean run length (s) per cluster


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` runs x (seconds in the state, other seconds) of the clustered side."""
    c = rng.choice(4, size=n, p=PROBS)
    t = LENGTHS[c] * rng.uniform(0.8, 1.2, n)
    s = np.clip(CENTERS[c] + rng.normal(0.0, 0.005, n), 0.0, 1.0)
    return np.c_[s * t, (1 - s) * t]


def unimodal(rng: np.random.Generator, n: int) -> np.ndarray:
    t = 20.0 * rng.uniform(0.8, 1.2, n)
    s = rng.normal(0.28, 0.01, n)
    return np.c_[s * t, (1 - s) * t]


def true_delta() -> float:
    """The pooled share's limit, E[share x length] / E[length] (the share's noise and the
    length's factor are independent of each other and mean-preserving), minus 0.28."""
    return float((PROBS * CENTERS * LENGTHS).sum() / (PROBS * LENGTHS).sum()) - 0.28


def test_the_truth_is_the_limit_of_the_pooled_share():
    x = clustered(np.random.default_rng(0), 400_000)
    assert x[:, 0].sum() / x.sum() - 0.28 == pytest.approx(true_delta(), abs=5e-4)


def test_studentized_interval_covers_a_clustered_mixture_better_than_percentile():
    """300 batches of 20 + 20 runs: the share of 95% intervals holding the true difference.
    The percentile interval is too short with 20 runs of a clustered side (about 0.90);
    the studentized one keeps close to 0.95 (a 300-batch estimate's SD is 0.013)."""
    rng, truth = np.random.default_rng(7), true_delta()
    hits = {"percentile": 0, "studentized": 0}
    for i in range(300):
        xa, xb = unimodal(rng, 20), clustered(rng, 20)
        for method in hits:
            lo, hi = bootstrap_delta(xa, xb, n_boot=999, seed=i, method=method)
            hits[method] += bool(lo[0] <= truth <= hi[0])
    assert hits["studentized"] / 300 >= 0.92
    assert hits["percentile"] / 300 <= 0.92
    assert hits["studentized"] > hits["percentile"]


def test_studentized_interval_is_the_bootstrap_t_formula():
    """The interval against the bootstrap-t recipe written out here with plain loops over
    the same resamples (numpy's PCG64, one stratum per side, as the module doc draws them)."""
    rng = np.random.default_rng(3)
    xa, xb = unimodal(rng, 6), clustered(rng, 7)
    lo, hi = bootstrap_delta(xa, xb, n_boot=300, seed=5, method="studentized")

    def share_se(x):
        t, y = x.sum(axis=1), x[:, 0]
        r, n = y.sum() / t.sum(), len(t)
        return r, math.sqrt(sum((y - r * t) ** 2) / (n - 1) / n / t.mean() ** 2)

    (ra, sa), (rb, sb) = share_se(xa), share_se(xb)
    d, se = rb - ra, math.hypot(sa, sb)
    # one block of draws: per position, an index within its side (6 or 7 rows)
    block = np.random.default_rng(5).integers(
        0, np.array([6] * 6 + [7] * 7), size=(300, 13), dtype=np.int32
    )
    ts = []
    for picks in block:
        (ra_, sa_), (rb_, sb_) = share_se(xa[picks[:6]]), share_se(xb[picks[6:]])
        ts.append((rb_ - ra_ - d) / math.hypot(sa_, sb_))
    q_lo, q_hi = np.quantile(ts, [0.025, 0.975])
    assert lo[0] == pytest.approx(d - q_hi * se, rel=1e-9)
    assert hi[0] == pytest.approx(d - q_lo * se, rel=1e-9)


def test_diff_takes_the_interval_option():
    def side(prefix, shares):
        import pandas as pd

        rows = [
            pd.DataFrame({"trace": f"{prefix}{i}", "time": [0.0, s, 1.0], "state": ["A", "B", "A"]})
            for i, s in enumerate(shares)
        ]
        return TraceSet.from_events(pd.concat(rows))

    a, b = side("a", [0.2, 0.3, 0.25, 0.4]), side("b", [0.5, 0.7, 0.6, 0.65])
    pct = diff(a, b, n_perm=50, n_boot=200).states.set_index("state")
    stu = diff(a, b, n_perm=50, n_boot=200, interval="studentized").states.set_index("state")
    assert pct.loc["A", "delta"] == stu.loc["A", "delta"]
    assert (pct.loc["A", "delta_lo"], pct.loc["A", "delta_hi"]) != (
        stu.loc["A", "delta_lo"],
        stu.loc["A", "delta_hi"],
    )
    with pytest.raises(Exception, match="interval must be one of"):
        diff(a, b, n_perm=50, interval="bca")


def test_delta_se_with_weights_is_the_formula_on_the_repeated_runs():
    rng = np.random.default_rng(1)
    x = clustered(rng, 9)
    w = np.array([0, 2, 1, 1, 0, 3, 1, 0, 1], float)
    got = delta_se2(_ratio_moments(x, x.sum(axis=1)), w)
    rep = np.repeat(x, w.astype(int), axis=0)
    t, n = rep.sum(axis=1), len(rep)
    for j in range(2):
        r = rep[:, j].sum() / t.sum()
        expect = ((rep[:, j] - r * t) ** 2).sum() / (n - 1) / n / t.mean() ** 2
        assert got[j] == pytest.approx(expect, rel=1e-12)
    # equal run lengths: the variance of the per-run shares over n
    x = np.c_[[0.1, 0.3, 0.2, 0.6], [0.9, 0.7, 0.8, 0.4]] * 5.0
    se2 = delta_se2(_ratio_moments(x, x.sum(axis=1)), np.ones(4))[0]
    assert se2 == pytest.approx(np.var([0.1, 0.3, 0.2, 0.6], ddof=1) / 4)


def test_runs_for_halfwidth_is_the_smallest_n_reaching_it():
    rng = np.random.default_rng(2)
    xa, xb = unimodal(rng, 20), clustered(rng, 20)
    n = runs_for_halfwidth(xa, xb, 0.02)

    def var(x):  # n x the delta-method variance: the linearized residuals' variance
        t = x.sum(axis=1)
        e = (x[:, 0] - x[:, 0].sum() / t.sum() * t) / t.mean()
        return e @ e / (len(t) - 1)

    z = NormalDist().inv_cdf(0.975)
    half = lambda m: z * math.sqrt((var(xa) + var(xb)) / m)  # noqa: E731
    assert half(n) <= 0.02 < half(n - 1)
    assert n > 20  # clusters 1-28% apart: more runs than a batch of 20


# -- Silverman's test ---------------------------------------------------------------------
def test_mode_count_and_critical_bandwidth_of_two_points():
    # two equal Gaussian bumps d apart are one mode exactly when h >= d / 2
    for d in (1.0, 3.0, 0.02):
        h = md.critical_bandwidth(np.array([0.0, d]), 1)
        assert h == pytest.approx(d / 2, rel=2e-3)
    grid = np.linspace(-1, 2, 512)
    assert md.mode_count(md.density(np.array([0.0, 1.0]), 0.45, grid))[0] == 2
    assert md.mode_count(md.density(np.array([0.0, 1.0]), 0.55, grid))[0] == 1
    assert md.critical_bandwidth(np.array([1.0, 1.0, 2.0]), 2) == 0.0


def test_critical_bandwidth_is_where_the_count_changes():
    x = clustered(np.random.default_rng(4), 30)[:, 0]
    for k in (1, 2, 3):
        h = md.critical_bandwidth(x, k)
        grid = np.linspace(x.min() - 3 * h, x.max() + 3 * h, md.GRID)
        assert md.mode_count(md.density(x, h * 1.001, grid))[0] <= k
        assert md.mode_count(md.density(x, h * 0.99, grid))[0] > k


def test_one_mode_is_rarely_rejected():
    """Level under the null: normal samples of 20 (the least favourable are not these, and
    the test is conservative): at most about alpha of them rejected."""
    rng = np.random.default_rng(11)
    rejected = 0
    for i in range(60):
        x = rng.normal(0.2, 0.02, 20)
        h = md.critical_bandwidth(x, 1)
        rejected += md.silverman_p(x, 1, h, n_boot=199, seed=i) < 0.05
    assert rejected <= 6


def test_clusters_of_the_jitter_cell_are_found():
    """40 runs of the four-cluster side: more than one mode, each found near a center, and
    a unimodal side of 40 runs: one."""
    rng = np.random.default_rng(5)
    x = clustered(rng, 40)
    share = x[:, 0] / x.sum(axis=1)
    m = md.modes(share, seed=1)
    assert m.k >= 2 and m.clustered and sum(m.sizes) == 40
    assert all(np.min(np.abs(CENTERS - loc)) < 0.03 for loc in m.locations)
    assert m.p_values[0] < 0.05
    y = unimodal(rng, 40)
    assert md.modes(y[:, 0] / y.sum(axis=1), seed=1).k == 1
