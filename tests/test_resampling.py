"""The one bootstrap generator (statemine.stats.resampling.Resamples): its draws are the
documented ones (re-drawn here one pick at a time), its dense and sparse products give
the same resample statistics, and its intervals cover known answers at their confidence."""

from __future__ import annotations

import numpy as np
import pytest

from statemine.stats import resampling
from statemine.stats.resampling import (
    ByColumn,
    Resamples,
    bootstrap_delta,
    bootstrap_ratio,
    side_strata,
)


def documented_weights(codes: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The module doc's draws, literally: per resample, per position ``j`` in row order,
    ``rng.integers(0, m_j, dtype=np.int32)`` picks the trace of ``j``'s stratum (its rows
    in row order) that fills the position; a row's weight counts its picks."""
    rng = np.random.default_rng(seed)
    members = {c: np.flatnonzero(codes == c) for c in np.unique(codes)}
    weights = np.zeros((n_boot, len(codes)))
    for i in range(n_boot):
        for c in codes:
            pick = int(rng.integers(0, len(members[c]), dtype=np.int32))
            weights[i, members[c][pick]] += 1
    return weights


def drawn(r: Resamples) -> np.ndarray:
    return np.concatenate([w.astype(float) for _, w in r])  # copies: blocks reuse a buffer


@pytest.mark.parametrize(
    "codes",
    [
        np.zeros(11, np.int64),  # one stratum: the scalar-bound fast path
        np.array([0, 1, 0, 0, 2, 1, 0, 2, 2, 0, 1]),  # interleaved strata, one of size 3
        np.array([0, 0, 0, 1, 2, 2]),  # a stratum of one row: always itself
    ],
)
@pytest.mark.parametrize("batch", [1, 4, 1000])
@pytest.mark.parametrize("keep", [False, True])
def test_resamples_are_the_documented_draws(codes, batch, keep):
    want = documented_weights(codes, 23, seed=9)
    r = Resamples(len(codes), 23, 9, strata=codes)
    r.batch = batch  # blocks of any size draw the same stream
    r._kept = np.concatenate([w.copy() for _, w in r._drawn()]) if keep else None
    got = drawn(r)
    assert np.array_equal(got, want)
    for c in np.unique(codes):  # each stratum keeps its size in every resample
        assert (got[:, codes == c].sum(axis=1) == (codes == c).sum()).all()


def test_kept_weights_equal_drawn_ones(monkeypatch):
    kept = Resamples(300, 40, 3, keep=True)
    assert kept._kept is not None
    monkeypatch.setattr(resampling, "_WEIGHT_BYTES", 0)
    again = Resamples(300, 40, 3, keep=True)
    assert again._kept is None and np.array_equal(drawn(kept), drawn(again))


def test_side_strata_never_mix_sides():
    codes = side_strata(np.array(["x", "y"]), np.array(["x", "x", "y"]), 2, 3)
    assert codes.tolist() == [0, 1, 2, 2, 3]
    assert side_strata(None, None, 2, 2).tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize("integer", [True, False])
def test_dense_and_sparse_products_give_the_same_resample_statistics(integer):
    """The dense matrix product and the gathered sparse sums are one optimisation of the
    same draws: the resampled sums agree (bit for bit on counts, whose sums are exact)."""
    rng = np.random.default_rng(1)
    values = rng.integers(0, 5, (60, 9)) if integer else rng.exponential(1.0, (60, 9))
    matrix = values * (rng.random((60, 9)) < 0.3)
    columns = resampling._dense_by_column(matrix)
    dense = resampling._operand(columns.row, columns.val, columns.bounds, 60)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(resampling, "_DENSE_CELLS", 0)
        mp.setattr(resampling, "_STAT_CELLS", 50)  # several gathered pieces
        sparse = resampling._operand(columns.row, columns.val, columns.bounds, 60)
        assert isinstance(dense, np.ndarray) and isinstance(sparse, resampling._Entries)
        for _, w in Resamples(60, 30, 5):
            a, b = resampling._times(w, dense), resampling._times(w, sparse)
            assert np.array_equal(a, b) if integer else np.allclose(a, b, rtol=1e-13, atol=0)


def test_dense_and_sparse_intervals_are_identical_on_counts():
    rng = np.random.default_rng(2)
    num = rng.integers(0, 4, (40, 12)) * (rng.random((40, 12)) < 0.4)
    den = num.sum(axis=1, keepdims=True) + 1
    dense = bootstrap_ratio(num, den, n_boot=200, seed=7)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(resampling, "_DENSE_CELLS", 0)
        mp.setattr(resampling, "_STAT_CELLS", 600)  # three columns per group
        mp.setattr(resampling, "_WEIGHT_BYTES", 0)  # weights drawn again per group
        sparse = bootstrap_ratio(num, den, n_boot=200, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(dense, sparse))


def test_ratio_interval_from_the_documented_draws():
    """bootstrap_ratio = numpy's percentiles of the ratios of the documented weights."""
    rng = np.random.default_rng(3)
    num = rng.exponential(1.0, (25, 3)) * (rng.random((25, 3)) < 0.5)
    den = num.sum(axis=1, keepdims=True) + rng.random((25, 1))
    lo, hi = bootstrap_ratio(num, den, n_boot=150, seed=4, confidence=0.8)
    w = documented_weights(np.zeros(25, np.int64), 150, seed=4)
    with np.errstate(invalid="ignore"):
        stats = (w @ num) / (w @ den)
    ref_lo, ref_hi = np.nanpercentile(stats, [10, 90], axis=0)
    assert np.allclose(lo, ref_lo, rtol=1e-12, atol=0) and np.allclose(
        hi, ref_hi, rtol=1e-12, atol=0
    )


def test_stratified_delta_from_the_documented_draws():
    rng = np.random.default_rng(6)
    xa, xb = rng.exponential(1.0, (8, 3)), rng.exponential(1.0, (7, 3))
    ga, gb = np.array(list("xxyyxyxy"), object), np.array(list("yxyxxyy"), object)
    lo, hi = bootstrap_delta(xa, xb, strata_a=ga, strata_b=gb, n_boot=120, seed=2)
    w = documented_weights(side_strata(ga, gb, 8, 7), 120, seed=2)
    wa, wb = w[:, :8], w[:, 8:]
    deltas = wb @ xb / (wb @ xb.sum(axis=1))[:, None] - wa @ xa / (wa @ xa.sum(axis=1))[:, None]
    ref_lo, ref_hi = np.percentile(deltas, [2.5, 97.5], axis=0)
    assert np.allclose(lo, ref_lo, rtol=1e-12, atol=1e-15)
    assert np.allclose(hi, ref_hi, rtol=1e-12, atol=1e-15)


def test_intervals_cover_the_known_fractions():
    """Coverage on data with a known answer: per trace, seconds in state S ~ Exp(mean m_S)
    and elsewhere ~ Exp(m_O), so a side's pooled fraction of S estimates m_S / (m_S + m_O):
    0.25 on side A (1 s, 3 s), 0.5 on side B (2 s, 2 s), a difference of 0.25. Over 300
    data sets of 40 + 40 traces, the 90% intervals (400 resamples) hold the true value in
    0.84 to 0.95 of them (0.9 within 3.5 standard errors, allowing the percentile
    bootstrap's slight under-coverage at n = 40)."""
    rng = np.random.default_rng(2026)
    hits_delta = hits_ratio = 0
    reps = 300
    for r in range(reps):
        xa = np.column_stack([rng.exponential(1.0, 40), rng.exponential(3.0, 40)])
        xb = np.column_stack([rng.exponential(2.0, 40), rng.exponential(2.0, 40)])
        lo, hi = bootstrap_delta(xa, xb, n_boot=400, seed=r, confidence=0.9)
        hits_delta += lo[0] <= 0.25 <= hi[0]
        lo, hi = bootstrap_ratio(
            xa[:, :1], xa.sum(axis=1, keepdims=True), n_boot=400, seed=r, confidence=0.9
        )
        hits_ratio += lo[0] <= 0.25 <= hi[0]
    assert 0.84 <= hits_delta / reps <= 0.95, hits_delta / reps
    assert 0.84 <= hits_ratio / reps <= 0.95, hits_ratio / reps


def test_by_column_types():
    """bootstrap_ratio's dense input becomes the by-column entries bootstrap_by_column takes."""
    m = np.array([[0.0, 2.0], [1.0, 0.0], [3.0, 4.0]])
    c = resampling._dense_by_column(m)
    assert isinstance(c, ByColumn) and c.bounds.tolist() == [0, 2, 4]
    assert c.row.tolist() == [1, 2, 0, 2] and c.val.tolist() == [1.0, 3.0, 2.0, 4.0]
