"""Outcome comparison per scenario cell: Welch's test by hand, percent difference, heatmap."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from statemine.errors import InputError, UsageError
from statemine.outcomes import compare_outcomes, read_results, welch_cell
from statemine.output.heatmap import heatmap


def results(seed: int = 0, runs: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for rate in (1, 10, 100):
        for size in (10_000, 1_000_000):
            for profile in ("desktop", "mobile"):
                slow = 1.5 if profile == "mobile" and size == 1_000_000 else 1.0
                for s in range(runs):
                    base = size * 8 / (rate * 1e6) + 0.05
                    rows.append(
                        {
                            "stack": "aioquic@1.7.2",
                            "profile": profile,
                            "rate_mbps": rate,
                            "object_size_bytes": size,
                            "seed": s,
                            "ok": True,
                            "plt_s": base * slow * (1 + 0.03 * rng.standard_normal()),
                        }
                    )
    return pd.DataFrame(rows)


def welch_by_hand(xa, xb):
    va, vb = np.var(xa, ddof=1) / len(xa), np.var(xb, ddof=1) / len(xb)
    t = (np.mean(xb) - np.mean(xa)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(xa) - 1) + vb**2 / (len(xb) - 1))
    return t, 2 * stats.t.sf(abs(t), df)


def test_cells_match_hand_computation():
    r = results()
    table = compare_outcomes(r, by="profile", a="desktop", b="mobile")
    assert list(table.columns[:2]) == [
        "rate_mbps",
        "object_size_bytes",
    ]  # the varying scenario columns
    assert len(table) == 6
    for row in table.itertuples(index=False):
        cell = r[(r.rate_mbps == row.rate_mbps) & (r.object_size_bytes == row.object_size_bytes)]
        xa = cell.loc[cell.profile == "desktop", "plt_s"].to_numpy()
        xb = cell.loc[cell.profile == "mobile", "plt_s"].to_numpy()
        t, p = welch_by_hand(xa, xb)
        assert row.t == pytest.approx(t) and row.p_value == pytest.approx(p)
        assert row.pct_diff == pytest.approx(100 * (xb.mean() - xa.mean()) / xa.mean())
        assert row.significant == (p < 0.01)
        assert row.significant == (row.object_size_bytes == 1_000_000)


def test_failed_runs_and_small_cells_are_labelled():
    r = results(runs=3)
    r.loc[
        (r.profile == "mobile")
        & (r.rate_mbps == 1)
        & (r.object_size_bytes == 10_000)
        & (r.seed > 0),
        "ok",
    ] = False
    r.loc[(r.rate_mbps == 10) & (r.object_size_bytes == 10_000), "plt_s"] = 2.0
    table = compare_outcomes(r, by="profile", a="desktop", b="mobile").set_index(
        ["rate_mbps", "object_size_bytes"]
    )
    few = table.loc[(1, 10_000)]
    assert few["n_b"] == 1 and math.isnan(few["p_value"]) and not few["significant"]
    assert "fewer than 2 runs" in few["note"]
    flat = table.loc[(10, 10_000)]
    assert "identical runs in A" in flat["note"] and "identical runs in B" in flat["note"]
    assert flat["identical_runs"] and not flat["significant"] and flat["pct_diff"] == 0
    assert math.isnan(flat["t"]) and math.isnan(flat["p_value"])
    assert not table.drop(index=[(10, 10_000)])["identical_runs"].any()


def test_bad_arguments():
    r = results(runs=2)
    with pytest.raises(UsageError, match="no column 'phone'"):
        compare_outcomes(r, by="phone", a="x", b="y")
    with pytest.raises(UsageError, match="profile = 'tablet'"):
        compare_outcomes(r, by="profile", a="desktop", b="tablet")


def test_read_results(tmp_path):
    r = results(runs=2)
    r.to_csv(tmp_path / "results.csv", index=False)
    r.to_parquet(tmp_path / "results.parquet", index=False)
    pd.testing.assert_frame_equal(read_results(tmp_path / "results.parquet"), r)
    assert len(read_results(tmp_path / "results.csv")) == len(r)
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="metric columns"):
        read_results(tmp_path / "bad.csv")
    with pytest.raises(InputError, match="no such file"):
        read_results(tmp_path / "nope.csv")


def test_welch_cell_one_side_constant_zero():
    """A metric that is 0 in every run of a side (no retransmission) is a real constant: tested."""
    out = welch_cell(np.array([0.0, 0.0, 0.0]), np.array([1.2, 1.4, 1.3]))
    t, p = welch_by_hand(np.array([0.0, 0.0, 0.0]), np.array([1.2, 1.4, 1.3]))
    assert out["t"] == pytest.approx(t) and out["p_value"] == pytest.approx(p)
    assert out["note"] == "mean_a is 0: no percent difference"
    assert not out["identical_runs"]


def test_one_side_of_copies_gets_no_welch_statistic():
    """3 + 3 runs, one side copies of one run: 'identical runs', no t, no p (issue 10)."""
    out = welch_cell(np.array([1.0, 1.0, 1.0]), np.array([1.2, 1.4, 1.3]))
    assert out["identical_runs"] and math.isnan(out["t"]) and math.isnan(out["p_value"])
    assert (
        out["note"] == "identical runs in A (3 runs within 0.01%): no test"
        and not out["significant"]
    )
    # the shipped quic-go desktop PLTs of the 3-seed grid, which differ in the 6th digit
    old = welch_cell(
        np.array([0.987051, 0.987049, 0.987052]), np.array([2.096795, 2.096795, 2.096795])
    )
    assert (
        old["identical_runs"] and math.isnan(old["t"]) and "A" in old["note"] and "B" in old["note"]
    )
    # just above the tolerance: a test, equal to Welch by hand
    xa = np.array([1.0, 1.0 + 2e-4, 1.0 - 1e-4])
    ok = welch_cell(xa, np.array([1.2, 1.4, 1.3]))
    assert not ok["identical_runs"] and ok["p_value"] == pytest.approx(
        welch_by_hand(xa, np.array([1.2, 1.4, 1.3]))[1]
    )


def test_heatmap_colours_only_significant_cells():
    table = compare_outcomes(results(), by="profile", a="desktop", b="mobile")
    fig = heatmap(table, rows="rate_mbps", cols="object_size_bytes")
    ax = fig.axes[0]
    data = ax.images[0].get_array()
    # rows: rate descending (100, 10, 1); columns: size ascending
    assert data.mask[:, 0].all() and not data.mask[:, 1].any()
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n.s.") == 3 and all(t.endswith("%") for t in texts if t != "n.s.")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["100", "10", "1"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10k", "1M"]
    sig = table[table.significant].sort_values("rate_mbps", ascending=False)["pct_diff"].to_numpy()
    assert np.allclose(data[:, 1].compressed(), sig)


def test_heatmap_needs_one_cell_per_pair():
    r = results(runs=3)
    r2 = r.assign(stack="quic-go@v0.65.0")
    table = compare_outcomes(pd.concat([r, r2]), by="profile", a="desktop", b="mobile")
    with pytest.raises(UsageError, match="stack"):
        heatmap(table, rows="rate_mbps", cols="object_size_bytes")


def test_rounding_noise_is_no_variance():
    """Deterministic runs that differ only by float rounding must not give a huge t."""
    xa = np.array([1.7750000000000001, 1.775, 1.7750000000000004])
    xb = np.array([1.7757, 1.7757000000000003, 1.7757])
    out = welch_cell(xa, xb)
    assert math.isnan(out["p_value"]) and "identical runs" in out["note"] and not out["significant"]
    real = welch_cell(np.array([1.0, 1.02, 0.99]), np.array([1.1, 1.12, 1.14]))
    assert real["note"] == "" and real["p_value"] < 0.05


def test_heatmap_says_no_test_for_untested_cells():
    r = results(runs=3)
    r.loc[(r.rate_mbps == 10) & (r.object_size_bytes == 10_000), "plt_s"] = 2.0  # identical runs
    table = compare_outcomes(r, by="profile", a="desktop", b="mobile")
    texts = [
        t.get_text()
        for t in heatmap(table, rows="rate_mbps", cols="object_size_bytes").axes[0].texts
    ]
    assert texts.count("no test") == 1 and texts.count("n.s.") == 2


def test_side_values_match_numbers_given_as_text():
    r = results(runs=3).assign(rtt_ms=lambda t: np.where(t.profile == "desktop", 36.0, 112.0))
    by_text = compare_outcomes(
        r, by="rtt_ms", a="36", b="112", cells=["rate_mbps", "object_size_bytes"]
    )
    by_number = compare_outcomes(
        r, by="rtt_ms", a=36, b=112.0, cells=["rate_mbps", "object_size_bytes"]
    )
    pd.testing.assert_frame_equal(by_text, by_number)
    assert (by_text["n_a"] == 3).all()
