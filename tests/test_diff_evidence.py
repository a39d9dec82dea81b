"""The diff never pretends (issue 10, item 5): pseudo-replicates, power, collapsed intervals,
each number checked against a value computed another way (closed forms, plain loops,
numpy percentiles, scipy)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats
from test_diff_data import make_set, visit_seconds

from statemine.compare import IDENTICAL_TOL, diff, identical_columns, trace_shares
from statemine.stats.resampling import bootstrap_delta, permutation_pvalues, pooled_fraction, power
from statemine.traces import TraceSet, concat, save


def copies(
    prefix: str,
    n: int,
    durations: dict[str, float],
    *,
    jitter: float = 0.0,
    seed: int = 0,
    **labels: str,
) -> TraceSet:
    """``n`` traces SlowStart -> Recovery -> CongestionAvoidance with the given durations
    (seconds), each duration times ``1 + jitter * U(-1, 1)`` (0: exact copies)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        t = 0.0
        for state in ("SlowStart", "Recovery", "CongestionAvoidance"):
            rows.append({"trace": f"{prefix}{i}", "time": t, "kind": "state", "state": state})
            t += durations[state] * (1 + jitter * rng.uniform(-1, 1))
        rows.append({"trace": f"{prefix}{i}", "time": t, "kind": "event", "state": "Close"})
    traces = pd.DataFrame({"trace": [f"{prefix}{i}" for i in range(n)], **labels})
    return TraceSet.from_events(pd.DataFrame(rows), traces)


FAST = {"SlowStart": 1.0, "Recovery": 1.0, "CongestionAvoidance": 8.0}
SLOW = {"SlowStart": 1.0, "Recovery": 4.0, "CongestionAvoidance": 5.0}


def matrix(ts: TraceSet) -> np.ndarray:
    return visit_seconds(ts)


# -- pseudo-replicates ----------------------------------------------------------------------
def test_three_identical_runs_a_side_are_flagged_and_underpowered():
    d = diff(copies("a", 3, FAST), copies("b", 3, SLOW), n_perm=999, n_boot=500)
    st = d.states.set_index("state")
    assert st["pseudo_replicates"].all() and not st["significant"].any()
    # the bootstrap can only redraw copies: the interval is the point delta, flagged
    rec = st.loc["Recovery"]
    assert rec["delta_lo"] == pytest.approx(rec["delta"]) == pytest.approx(rec["delta_hi"])
    assert rec["delta"] == pytest.approx(0.4 - 0.1)
    assert st["interval_collapsed"].all()
    assert np.allclose(st["sd_a"], 0, atol=1e-12) and np.allclose(st["sd_b"], 0, atol=1e-12)
    # 3 + 3: C(6, 3) = 20 relabellings, the extreme split and its mirror: 2 / 20
    assert d.min_p == pytest.approx(2 / math.comb(6, 3)) and d.underpowered
    assert d.min_p_holm == pytest.approx(min(1.0, 3 * 2 / math.comb(6, 3)))
    assert rec["p_value"] == pytest.approx(d.min_p)  # reached: perfectly separated sides
    assert d.pseudo_replicated == ["CongestionAvoidance", "Recovery", "SlowStart"]
    assert any(n.startswith("pseudo-replicates: the traces of A") for n in d.notes)
    assert any(n.startswith("underpowered: with 3 + 3 traces") for n in d.notes)
    assert any("collapsed to a point" in n for n in d.notes)


def test_many_copies_give_a_tiny_p_but_are_never_significant():
    """20 + 20 copies: the permutation p hits its floor 1 / (B + 1), which would pass any
    threshold, yet nothing is significant because the runs are copies."""
    d = diff(copies("a", 20, FAST), copies("b", 20, SLOW), n_perm=999, n_boot=200)
    st = d.states.set_index("state")
    assert d.min_p == pytest.approx(1 / 1000) and not d.underpowered
    assert st.loc["Recovery", "p_value"] == pytest.approx(1 / 1000)
    assert st.loc["Recovery", "p_holm"] < 0.01
    assert st.loc["Recovery", "pseudo_replicates"] and not st["significant"].any()
    assert d.ranking().empty


def test_rounding_noise_is_still_a_copy_but_real_variation_is_not():
    # 1e-6 relative noise on the durations (the shipped 3-seed quic-go traces differ so)
    noisy = diff(
        copies("a", 5, FAST, jitter=1e-6, seed=1),
        copies("b", 5, SLOW, jitter=1e-6, seed=2),
        n_boot=0,
    )
    assert noisy.states["pseudo_replicates"].all()
    real = diff(
        copies("a", 20, FAST, jitter=0.2, seed=1),
        copies("b", 20, SLOW, jitter=0.2, seed=2),
        n_boot=300,
    )
    st = real.states.set_index("state")
    assert not st["pseudo_replicates"].any() and not st["interval_collapsed"].any()
    assert st.loc["Recovery", "significant"] and real.notes == []
    # sd_a is the standard deviation of each trace's own share, computed by hand
    x = matrix(copies("a", 20, FAST, jitter=0.2, seed=1))
    by_hand = [np.std([row[j] / row.sum() for row in x], ddof=1) for j in range(x.shape[1])]
    names = sorted(FAST)
    assert np.allclose(st.loc[names, "sd_a"], by_hand)


def test_identical_columns_by_hand():
    share = np.array([[0.5, 0.0, 0.2], [0.5, 0.0, 0.3], [0.5 + IDENTICAL_TOL / 2, 0.0, 0.2]])
    assert identical_columns(share).tolist() == [
        True,
        False,
        False,
    ]  # 0 everywhere: a real constant
    assert not identical_columns(share[:1]).any()  # one trace: nothing to compare
    two = np.array([[0.1], [0.1 + 2 * IDENTICAL_TOL]])
    assert not identical_columns(two).any()
    # strata: one stratum of copies is enough
    share = np.array([[0.1], [0.1], [0.2], [0.4]])
    assert identical_columns(share, np.array(["x", "x", "y", "y"], object)).tolist() == [True]
    assert identical_columns(share, np.array(["x", "y", "x", "y"], object)).tolist() == [False]


def test_a_stratum_of_copies_is_flagged():
    a = concat(
        [
            copies("a", 4, FAST, implementation="x"),
            copies("c", 4, FAST, jitter=0.3, seed=3, implementation="y"),
        ]
    )
    b = concat(
        [
            copies("b", 4, SLOW, implementation="x"),
            copies("d", 4, SLOW, jitter=0.3, seed=4, implementation="y"),
        ]
    )
    assert diff(a, b, n_boot=0, strata="implementation").states["pseudo_replicates"].all()
    assert (
        not diff(a.select({"implementation": "y"}), b.select({"implementation": "y"}), n_boot=0)
        .states["pseudo_replicates"]
        .any()
    )


def test_shares_of_each_trace_by_hand():
    x = matrix(make_set("a", 6, seed=5))
    share = trace_shares(x)
    assert np.allclose(share.sum(axis=1), 1.0)
    for i, row in enumerate(x):
        assert np.allclose(share[i], [v / sum(row) for v in row])


# -- power -------------------------------------------------------------------------------
@pytest.mark.parametrize("n_a,n_b", [(2, 2), (3, 3), (3, 4), (4, 4), (5, 3), (6, 6)])
def test_min_p_closed_form_and_reached(n_a, n_b):
    n_all = math.comb(n_a + n_b, n_a)
    expected = (2 if n_a == n_b else 1) / n_all
    min_p, min_holm = power(n_a, n_b, n_perm=10_000, n_tests=4)
    assert min_p == pytest.approx(expected) and min_holm == pytest.approx(min(1.0, 4 * expected))
    # the bound is reached by perfectly separated data (A all below, B all above)
    rng = np.random.default_rng(n_a * 10 + n_b)
    xa = np.c_[rng.uniform(0.0, 0.1, n_a), np.ones(n_a)]
    xb = np.c_[rng.uniform(0.5, 0.6, n_b), np.ones(n_b)]
    assert permutation_pvalues(xa, xb, n_perm=10_000)[0] == pytest.approx(expected)


def test_min_p_monte_carlo_floor_and_strata():
    assert power(20, 20, n_perm=9999) == (pytest.approx(1 / 10_000), pytest.approx(1 / 10_000))
    assert power(20, 20, n_perm=9999, n_tests=6)[1] == pytest.approx(6 / 10_000)
    assert power(3, 3, n_perm=9999, n_tests=100)[1] == 1.0
    # two balanced strata of 3 + 3: C(6, 3)^2 = 400 relabellings, 2 / 400
    g = np.array(["x"] * 3 + ["y"] * 3, object)
    assert power(6, 6, g, g, n_perm=9999)[0] == pytest.approx(2 / 400)
    # a stratum seen on one side only is fixed: 3 + 3 in x, 2 + 0 in y -> unbalanced, 1 / 20
    ga, gb = np.array(["x"] * 3 + ["y"] * 2, object), np.array(["x"] * 3, object)
    assert power(5, 3, ga, gb, n_perm=9999)[0] == pytest.approx(1 / 20)


def test_underpowered_by_holm_alone():
    # 4 + 4: 2 / 70 = 0.029 < 0.05 for one test, but Holm over 3 states makes it 0.086
    d = diff(
        copies("a", 4, FAST, jitter=0.3, seed=1), copies("b", 4, SLOW, jitter=0.3, seed=2), n_boot=0
    )
    assert d.min_p == pytest.approx(2 / 70) and d.min_p_holm == pytest.approx(3 * 2 / 70)
    assert d.underpowered and not d.states["significant"].any()
    assert d.states["p_value"].min() == pytest.approx(2 / 70)
    assert not diff(
        copies("a", 4, FAST, jitter=0.3, seed=1),
        copies("b", 4, SLOW, jitter=0.3, seed=2),
        n_boot=0,
        alpha=0.1,
    ).underpowered


# -- p-values and intervals computed another way --------------------------------------------
def test_permutation_p_by_a_plain_loop():
    xa, xb = matrix(make_set("a", 5, seed=7)), matrix(make_set("b", 4, seed=8, recovery_mean=0.4))
    x = np.vstack([xa, xb])
    obs = np.abs(pooled_fraction(xb) - pooled_fraction(xa))
    count = np.zeros(x.shape[1])
    for chosen in itertools.combinations(range(9), 5):
        in_a = np.isin(np.arange(9), chosen)
        count += np.abs(pooled_fraction(x[~in_a]) - pooled_fraction(x[in_a])) >= obs - 1e-12
    assert np.allclose(permutation_pvalues(xa, xb, n_perm=10_000), count / math.comb(9, 5))


def test_monte_carlo_p_agrees_with_scipy():
    """20 + 20 traces: random relabellings; scipy's permutation_test (its own random
    relabellings) agrees within Monte Carlo error."""
    xa, xb = (
        matrix(make_set("a", 20, seed=9)),
        matrix(make_set("b", 20, seed=10, recovery_mean=0.16)),
    )
    ours = permutation_pvalues(xa, xb, n_perm=4999, seed=1)
    x = np.vstack([xa, xb])
    for j in range(x.shape[1]):

        def stat(ia, ib, j=j):
            ia, ib = ia.astype(int), ib.astype(int)
            return abs(x[ib, j].sum() / x[ib].sum() - x[ia, j].sum() / x[ia].sum())

        ref = stats.permutation_test(
            (np.arange(20.0), np.arange(20.0, 40.0)),
            stat,
            vectorized=False,
            permutation_type="independent",
            alternative="greater",
            n_resamples=4999,
            rng=np.random.default_rng(2),
        ).pvalue
        sd = math.sqrt(max(ref, 1e-3) * (1 - ref) / 4999)
        assert abs(ours[j] - ref) < 5 * sd + 2e-4, (j, ours[j], ref)
        assert ours[j] >= 1 / 5000


def test_bootstrap_interval_by_numpy_percentile():
    """The interval is the numpy percentile of the deltas of the documented draws
    (statemine.stats.resampling: per resample, one ``int32`` pick per position, A's
    positions then B's, each within its side), drawn here one pick at a time and summed
    trace by trace."""
    xa, xb = matrix(make_set("a", 7, seed=11)), matrix(make_set("b", 9, seed=12, recovery_mean=0.3))
    lo, hi = bootstrap_delta(xa, xb, n_boot=400, seed=5, confidence=0.9)
    rng = np.random.default_rng(5)
    deltas = []
    for _ in range(400):
        a_rows = [int(rng.integers(0, 7, dtype=np.int32)) for _ in range(7)]  # with repeats
        b_rows = [int(rng.integers(0, 9, dtype=np.int32)) for _ in range(9)]
        deltas.append(
            xb[b_rows].sum(axis=0) / xb[b_rows].sum() - xa[a_rows].sum(axis=0) / xa[a_rows].sum()
        )
    ref_lo, ref_hi = np.percentile(np.array(deltas), [5, 95], axis=0)
    assert np.allclose(lo, ref_lo) and np.allclose(hi, ref_hi)


def test_identical_distributions_false_positives_stay_rare():
    """Same distribution on both sides, 20 + 20 traces: the Holm family-wise rate of
    'significant' stays near alpha, nothing is flagged as a copy or underpowered."""
    hits, reps, alpha = 0, 40, 0.05
    for r in range(reps):
        d = diff(
            make_set("a", 20, seed=1000 + r),
            make_set("b", 20, seed=2000 + r),
            n_perm=199,
            n_boot=0,
            alpha=alpha,
            seed=r,
        )
        assert not d.underpowered and not d.states["pseudo_replicates"].any()
        hits += bool(d.states["significant"].any())
    assert hits <= 6  # binomial(40, 0.05): P(X > 6) < 0.02


# -- printed summary and report -----------------------------------------------------------
def test_cli_summary_says_underpowered_and_copies(tmp_path):
    from statemine.cli import main

    save(copies("a", 3, FAST), tmp_path / "a.parquet")
    save(copies("b", 3, SLOW), tmp_path / "b.parquet")
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp_path / "a.parquet"),
            str(tmp_path / "b.parquet"),
            "--out",
            str(tmp_path / "out"),
            "--no-svg",
            "--bootstrap",
            "50",
        ],
    )
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "0 significant change(s)" in flat
    assert "power: smallest possible p 0.1, 0.3 after Holm over the states: UNDERPOWERED" in flat
    assert (
        "pseudo-replicates (identical runs, never significant): CongestionAvoidance, Recovery, SlowStart"
        in flat
    )
    table = pd.read_csv(tmp_path / "out" / "states_diff.csv")
    assert table["pseudo_replicates"].all() and table["interval_collapsed"].all()


def test_cli_summary_numbers_match_the_table(tmp_path):
    from statemine.cli import main

    a = copies("a", 12, FAST, jitter=0.2, seed=1)
    b = copies("b", 12, SLOW, jitter=0.2, seed=2)
    save(a, tmp_path / "a.parquet")
    save(b, tmp_path / "b.parquet")
    res = CliRunner().invoke(
        main,
        [
            "diff",
            str(tmp_path / "a.parquet"),
            str(tmp_path / "b.parquet"),
            "--out",
            str(tmp_path / "out"),
            "--no-svg",
            "--bootstrap",
            "300",
        ],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    d = diff(a, b, n_boot=300).states.set_index("state")
    rec = d.loc["Recovery"]
    # the pooled shares by hand: 12 traces of 1 + 1 + 8 s (times jitter) vs 1 + 4 + 5 s
    xa = matrix(a)
    assert rec["fraction_a"] == pytest.approx(xa[:, 1].sum() / xa.sum())
    line = next(ln for ln in res.output.splitlines() if "Recovery" in ln)
    assert f"{rec['fraction_a']:.1%}" in line and f"{rec['fraction_b']:.1%}" in line
    # the difference in percentage points (statemine.units), its interval in the same unit
    pp = [100 * rec[k] for k in ("delta", "delta_lo", "delta_hi")]
    assert f"{pp[0]:+.1f} [{pp[1]:+.1f}, {pp[2]:+.1f}] pp" in line
    assert f"{rec['p_holm']:.2g}" in line
    flat = " ".join(res.output.split())
    assert (
        f"power: smallest possible p {1 / 10_000:.3g}, {3 / 10_000:.3g} after Holm over the states"
        in flat
    )
