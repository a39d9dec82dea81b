"""statemine.compare (statemine.diff): statistics checked against scipy and brute force, power and false positives."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_diff_data import make_set, one_trace, visit_seconds

from statemine.compare import STATE_COLUMNS, TRANSITION_COLUMNS, diff, transition_test
from statemine.errors import UsageError
from statemine.stats.resampling import bootstrap_delta, holm, permutation_pvalues, pooled_fraction
from statemine.stats.summary import state_stats, visits
from statemine.traces import TraceSet, concat


def matrix(ts: TraceSet) -> np.ndarray:
    return visit_seconds(ts)


# -- a known difference is found; none is not -------------------------------------------
def test_known_difference_is_significant():
    a = make_set("a", 30, seed=1)
    b = make_set("b", 30, seed=2, recovery_mean=0.5)
    d = diff(a, b, label_a="desktop", label_b="mobile", n_perm=999, n_boot=1000)
    assert list(d.states.columns) == STATE_COLUMNS
    assert list(d.transitions.columns) == TRANSITION_COLUMNS
    rec = d.states.set_index("state").loc["Recovery"]
    assert rec["significant"] and rec["delta"] > 0.1
    assert rec["delta_lo"] > 0 and rec["delta_hi"] > rec["delta"] > rec["delta_lo"]
    assert d.ranking().iloc[0]["name"] == "Recovery"
    assert d.notes == []


def test_fractions_match_state_stats():
    a, b = make_set("a", 10, seed=3), make_set("b", 12, seed=4, recovery_mean=0.3)
    d = diff(a, b, n_perm=50, n_boot=0).states.set_index("state")
    for ts, col in ((a, "fraction_a"), (b, "fraction_b")):
        ref = state_stats(ts, n_boot=0).set_index("state")["time_fraction"]
        pd.testing.assert_series_equal(d[col].reindex(ref.index), ref, check_names=False)
    assert np.allclose(d["delta"], d["fraction_b"] - d["fraction_a"])
    assert math.isclose(d["fraction_a"].sum(), 1.0) and math.isclose(d["fraction_b"].sum(), 1.0)


def test_false_positive_rate_near_alpha():
    """No difference: per-state rejections near alpha, Holm family-wise error at most alpha."""
    reps, n, alpha = 400, 8, 0.05
    pool = matrix(make_set("p", 2 * n * reps, seed=11))
    pvals = np.array(
        [
            permutation_pvalues(
                pool[2 * n * r : 2 * n * r + n],
                pool[2 * n * r + n : 2 * n * (r + 1)],
                n_perm=199,
                seed=r,
            )
            for r in range(reps)
        ]
    )
    rate = (pvals <= alpha).mean(axis=0)
    sd = math.sqrt(alpha * (1 - alpha) / reps)
    assert (rate < alpha + 3.5 * sd).all() and (rate > alpha - 3.5 * sd).all(), rate
    fwer = np.mean([(holm(p) < alpha).any() for p in pvals])
    assert fwer < alpha + 3.5 * sd, fwer


def test_transition_false_positive_rate():
    reps, alpha = 300, 0.05
    rng = np.random.default_rng(5)
    rejections = 0
    for _ in range(reps):
        n = rng.integers(10, 60, size=2)
        table = np.vstack([rng.multinomial(k, [0.7, 0.2, 0.1]) for k in n])
        rejections += transition_test(table, rng=rng, n_mc=999)[0] < alpha
    sd = math.sqrt(alpha * (1 - alpha) / reps)
    assert abs(rejections / reps - alpha) < 3.5 * sd


def test_full_diff_false_positives_rare():
    alpha, reps = 0.05, 30
    hits = 0
    for r in range(reps):
        d = diff(
            make_set("a", 10, seed=100 + r),
            make_set("b", 10, seed=500 + r),
            n_perm=199,
            n_boot=0,
            alpha=alpha,
            seed=r,
        )
        hits += bool(d.states["significant"].any())
    assert hits <= 6  # binomial(30, <=0.05): P(X > 6) < 0.001


# -- p-values and intervals against scipy ---------------------------------------------------
def test_permutation_matches_scipy_exact():
    xa = matrix(make_set("a", 4, seed=21))
    xb = matrix(make_set("b", 5, seed=22, recovery_mean=0.4))
    xa, xb = xa[:, :], xb[:, :]
    x = np.vstack([xa, xb])
    ours = permutation_pvalues(xa, xb, n_perm=10_000)  # C(9, 4) = 126 <= 10000: exact
    for j in range(x.shape[1]):

        def stat(ia, ib, j=j):
            fa = x[ia.astype(int), j].sum() / x[ia.astype(int)].sum()
            fb = x[ib.astype(int), j].sum() / x[ib.astype(int)].sum()
            return abs(fb - fa)

        ref = stats.permutation_test(
            (np.arange(4.0), np.arange(4.0, 9.0)),
            stat,
            vectorized=False,
            permutation_type="independent",
            alternative="greater",
            n_resamples=10_000,
        )
        assert ours[j] == pytest.approx(ref.pvalue, rel=1e-12)


def test_random_permutation_close_to_exact():
    xa, xb = (
        matrix(make_set("a", 7, seed=31)),
        matrix(make_set("b", 7, seed=32, recovery_mean=0.25)),
    )
    exact = permutation_pvalues(xa, xb, n_perm=5000)  # C(14, 7) = 3432: exact
    approx = permutation_pvalues(xa, xb, n_perm=3000, seed=1)  # random
    assert np.abs(exact - approx).max() < 0.03
    assert (approx > 0).all()


def test_bootstrap_matches_scipy_bootstrap():
    xa, xb = (
        matrix(make_set("a", 15, seed=41)),
        matrix(make_set("b", 20, seed=42, recovery_mean=0.3)),
    )
    lo, hi = bootstrap_delta(xa, xb, n_boot=4000, seed=3)
    j = 3  # any state column

    def stat(ia, ib):
        ia, ib = ia.astype(int), ib.astype(int)
        return xb[ib, j].sum() / xb[ib].sum() - xa[ia, j].sum() / xa[ia].sum()

    ref = stats.bootstrap(
        (np.arange(15.0), np.arange(20.0)),
        stat,
        vectorized=False,
        paired=False,
        method="percentile",
        n_resamples=4000,
        rng=np.random.default_rng(9),
    )
    width = hi[j] - lo[j]
    assert abs(lo[j] - ref.confidence_interval.low) < 0.1 * width
    assert abs(hi[j] - ref.confidence_interval.high) < 0.1 * width
    assert lo[j] < pooled_fraction(xb)[j] - pooled_fraction(xa)[j] < hi[j]


def test_holm_matches_definition():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.random(rng.integers(1, 8)) ** 2
        m = len(p)
        order = np.argsort(p)
        ref = np.empty(m)
        for rank, i in enumerate(order):
            ref[i] = min(1.0, max((m - r) * p[order[r]] for r in range(rank + 1)))
        assert np.allclose(holm(p), ref)


def test_transition_tests_against_formulas():
    big = np.array([[40, 30, 30], [20, 50, 30]])
    e = big.sum(1, keepdims=True) * big.sum(0) / big.sum()
    chi2 = ((big - e) ** 2 / e).sum()
    assert transition_test(big) == (pytest.approx(stats.chi2.sf(chi2, 2)), "chi2")
    g = 2 * (big * np.log(big / e)).sum()
    assert transition_test(big, test="g") == (pytest.approx(stats.chi2.sf(g, 2)), "g")
    small = np.array([[6, 1], [2, 5]])
    # Fisher by hand: hypergeometric tables at most as likely as the observed one.
    dist = stats.hypergeom(small.sum(), small[:, 0].sum(), small[0].sum())
    probs = dist.pmf(np.arange(0, 9))
    ref = probs[probs <= dist.pmf(small[0, 0]) * (1 + 1e-7)].sum()
    assert transition_test(small) == (pytest.approx(ref), "fisher")
    p, name = transition_test(np.array([[5, 1, 0], [1, 4, 3]]), rng=np.random.default_rng(0))
    assert name == "fisher-mc" and 0 < p < 0.2
    # Row B holds one transition: it lands in column j with probability col_j / 4, so the
    # exact p of B in column 1 is P(col 0) + P(col 1) = 1/4 + 1/4 (scipy returned this one
    # as a length-1 array, which crashed 'statemine diff' on two small logs).
    p, name = transition_test(np.array([[1, 0, 2], [0, 1, 0]]), rng=np.random.default_rng(0))
    assert name == "fisher-mc" and p == pytest.approx(0.5, abs=0.03)
    assert transition_test(np.array([[4, 0], [6, 0]])) == (1.0, "one destination")
    assert transition_test(np.array([[0, 0], [6, 1]]))[1] == "only in B"


def test_transitions_table():
    a = make_set("a", 40, seed=51, p_rto=0.05)
    b = make_set("b", 40, seed=52, p_rto=0.5)
    t = diff(a, b, n_perm=99, n_boot=0).transitions.set_index(["src", "dst"])
    row = t.loc[("CongestionAvoidance", "RetransmissionTimeout")]
    assert row["significant"] and row["delta"] > 0.2 and row["test"] == "chi2"
    ca = t.loc["CongestionAvoidance"]
    assert math.isclose(ca["prob_a"].sum(), 1.0) and math.isclose(ca["prob_b"].sum(), 1.0)
    # counts by hand
    v = visits(a)
    hand = ((v["state"] == "CongestionAvoidance") & (v["next"] == "RetransmissionTimeout")).sum()
    assert row["count_a"] == hand
    assert not t.loc[("SlowStart", "CongestionAvoidance"), "significant"]


# -- bad and odd input ------------------------------------------------------------------------
def test_disjoint_vocabularies_are_labelled():
    a = TraceSet.from_events(
        pd.concat(
            [
                one_trace(f"a{i}", [0, 1, 2 + i], ["slow_start", "recovery", "slow_start"])
                for i in range(3)
            ]
        )
    )
    b = TraceSet.from_events(
        pd.concat(
            [
                one_trace(f"b{i}", [0, 1, 3 + i], ["SlowStart", "Recovery", "SlowStart"])
                for i in range(3)
            ]
        )
    )
    d = diff(a, b, n_perm=99, n_boot=50)
    assert set(d.states["presence"]) == {"only_a", "only_b"}
    assert any("share no state name" in n for n in d.notes)
    assert set(d.only_a["name"]) >= {"slow_start", "recovery", "slow_start -> recovery"}
    assert set(d.only_b.loc[d.only_b["kind"] == "state", "name"]) == {"SlowStart", "Recovery"}
    assert not d.transitions["p_value"].loc[d.transitions["src"] != "INITIAL"].notna().any()
    assert (d.transitions.loc[d.transitions["src"] == "recovery", "test"] == "only in A").all()
    assert not d.states["fraction_a"].isna().any()


def test_one_trace_per_side_is_labelled():
    a = TraceSet.from_events(one_trace("a", [0, 1, 3], ["SlowStart", "Recovery", "SlowStart"]))
    b = TraceSet.from_events(one_trace("b", [0, 2, 3], ["SlowStart", "Recovery", "SlowStart"]))
    d = diff(a, b)
    assert d.states["delta_lo"].isna().all()
    assert (d.states["p_value"] == 1.0).all() and not d.states["significant"].any()
    assert any("no confidence interval" in n for n in d.notes)
    assert any("smallest possible p-value" in n for n in d.notes)


def test_empty_side_is_a_usage_error():
    a = make_set("a", 3, seed=1)
    empty = TraceSet.from_events(pd.DataFrame({"trace": [], "time": [], "state": []}))
    with pytest.raises(UsageError, match="side mobile has no traces"):
        diff(a, empty, label_b="mobile")
    events_only = TraceSet.from_events(
        pd.DataFrame({"trace": ["x"], "time": [0.0], "state": ["Close"], "kind": ["event"]})
    )
    with pytest.raises(UsageError, match="no state lines"):
        diff(events_only, a)
    zero = TraceSet.from_events(one_trace("z", [0.0], ["SlowStart"]))
    with pytest.raises(UsageError, match="no time in any state"):
        diff(a, zero)


def test_zero_length_traces_are_dropped_with_a_note():
    a = make_set("a", 5, seed=1)
    b = TraceSet.from_events(
        pd.concat(
            [
                one_trace("z", [0.0], ["SlowStart"]),
                one_trace("y", [0.0, 1.0], ["SlowStart", "Recovery"]),
            ]
        )
    )
    d = diff(a, b, n_perm=99)
    assert any("last 0 s" in n for n in d.notes)


def test_different_implementations_note():
    a = make_set("a", 4, seed=1, implementation="quic-go")
    b = make_set("b", 4, seed=2, implementation="aioquic")
    assert any("quic-go" in n and "aioquic" in n for n in diff(a, b, n_perm=50).notes)


def test_bad_options():
    a = make_set("a", 3, seed=1)
    for kwargs in ({"alpha": 0}, {"n_perm": 0}, {"transition_test": "x"}, {"n_boot": -1}):
        with pytest.raises(UsageError):
            diff(a, a, **kwargs)


def test_reproducible():
    a, b = make_set("a", 12, seed=1), make_set("b", 12, seed=2)
    d1, d2 = diff(a, b, seed=7, n_perm=500), diff(a, b, seed=7, n_perm=500)
    pd.testing.assert_frame_equal(d1.states, d2.states)
    pd.testing.assert_frame_equal(d1.transitions, d2.transitions)


def test_exact_enumeration_counts_every_relabelling():
    xa = np.array([[1.0, 0.0], [0.0, 1.0]])
    xb = np.array([[2.0, 0.0], [1.0, 1.0], [0.5, 0.5]])
    n_all = 0
    count = np.zeros(2)
    obs = abs(pooled_fraction(xb) - pooled_fraction(xa))
    x = np.vstack([xa, xb])
    for ia in itertools.combinations(range(5), 2):
        ib = [i for i in range(5) if i not in ia]
        count += np.abs(pooled_fraction(x[ib]) - pooled_fraction(x[list(ia)])) >= obs - 1e-12
        n_all += 1
    assert np.allclose(permutation_pvalues(xa, xb), count / n_all)


def test_edge_posthoc_tests_by_hand():
    a = make_set("a", 40, seed=51, p_rto=0.05)
    b = make_set("b", 40, seed=52, p_rto=0.5)
    t = diff(a, b, n_perm=99, n_boot=0).transitions
    ca = t[t["src"] == "CongestionAvoidance"].sort_values("dst")
    out_a, out_b = ca["count_a"].sum(), ca["count_b"].sum()
    raw = []
    for row in ca.itertuples():
        table = np.array([[row.count_a, out_a - row.count_a], [row.count_b, out_b - row.count_b]])
        if stats.contingency.expected_freq(table).min() >= 5:
            raw.append(stats.chi2_contingency(table, correction=False).pvalue)
        else:
            raw.append(stats.fisher_exact(table).pvalue)
    assert np.allclose(ca["p_edge"], holm(np.array(raw)))
    # the flag needs both the source's Holm p and the edge's own
    assert (ca["significant"] == ((ca["p_holm"] < 0.05) & (ca["p_edge"] < 0.05))).all()


def test_one_count_cells_are_not_flagged():
    """A changed source's rare edges (0 vs 1 transitions) are not flagged on their own."""
    rows = []
    for i in range(30):
        rows.append(
            one_trace(
                f"a{i}", [0, 1, 2], ["CongestionAvoidance", "Recovery", "CongestionAvoidance"]
            )
        )
    a = TraceSet.from_events(pd.concat(rows))
    rows = [
        one_trace(f"b{i}", [0, 1, 2], ["CongestionAvoidance", "Recovery", "SlowStart"])
        for i in range(10)
    ]
    rows.append(
        one_trace("b10", [0, 1, 2], ["CongestionAvoidance", "Recovery", "ApplicationLimited"])
    )
    b = TraceSet.from_events(pd.concat(rows))
    t = diff(a, b, n_perm=99, n_boot=0).transitions.set_index(["src", "dst"])
    assert t.loc[("Recovery", "SlowStart"), "significant"]
    assert not t.loc[("Recovery", "ApplicationLimited"), "significant"]
    assert t.loc[("Recovery", "ApplicationLimited"), "p_holm"] < 0.05


def test_same_labels_refused():
    a = make_set("a", 3, seed=1)
    with pytest.raises(UsageError, match="different labels"):
        diff(a, a, label_a="x", label_b="x")


def test_smallest_p_note_counts_the_label_swap():
    big = make_set("b", 3, seed=2, recovery_mean=3.0)
    d = diff(make_set("a", 3, seed=1), big, n_boot=0)
    assert any("smallest possible p-value is 0.10;" in n for n in d.notes)  # 2 / 20
    assert d.states["p_value"].min() >= 0.1  # C(6, 3) = 20 relabellings, two per extreme split
    assert d.underpowered and d.min_p == 0.1
    # 4 + 4: 2 / C(8, 4) = 0.029 < 0.05, but Holm over the states multiplies it past alpha
    four = diff(make_set("a", 4, seed=1), big, n_boot=0)
    assert four.min_p == pytest.approx(2 / 70) and four.underpowered
    assert four.min_p_holm == pytest.approx(min(1, len(four.states) * 2 / 70))
    assert not diff(make_set("a", 8, seed=1), make_set("b", 8, seed=2), n_boot=0).underpowered


# -- stratified comparison ----------------------------------------------------------------
def test_stratified_permutation_by_brute_force():
    xa = np.vstack(
        [matrix(make_set("a", 2, seed=61)), matrix(make_set("c", 2, seed=62, recovery_mean=0.4))]
    )
    xb = np.vstack(
        [matrix(make_set("b", 2, seed=63)), matrix(make_set("d", 3, seed=64, recovery_mean=0.4))]
    )
    ga, gb = (
        np.array(["s1", "s1", "s2", "s2"], object),
        np.array(["s1", "s1", "s2", "s2", "s2"], object),
    )
    x, g = np.vstack([xa, xb]), np.concatenate([ga, gb])
    obs = np.abs(pooled_fraction(xb) - pooled_fraction(xa))
    s1, s2 = np.flatnonzero(g == "s1"), np.flatnonzero(g == "s2")
    count, n_all = np.zeros(x.shape[1]), 0
    for c1 in itertools.combinations(s1, 2):
        for c2 in itertools.combinations(s2, 2):
            in_a = np.zeros(len(x), bool)
            in_a[list(c1) + list(c2)] = True
            count += np.abs(pooled_fraction(x[~in_a]) - pooled_fraction(x[in_a])) >= obs - 1e-12
            n_all += 1
    assert n_all == 60
    ours = permutation_pvalues(xa, xb, strata_a=ga, strata_b=gb, n_perm=100)
    assert np.allclose(ours, count / n_all)
    approx = permutation_pvalues(
        xa, xb, strata_a=ga, strata_b=gb, n_perm=59, seed=2
    )  # random within strata
    assert np.abs(approx - count / n_all).max() < 0.25 and (approx > 0).all()


def test_stratified_diff_pools_implementations():
    a = concat(
        [
            make_set("a", 3, seed=1, implementation="x"),
            make_set("c", 3, seed=2, implementation="y", recovery_mean=1.0),
        ]
    )
    b = concat(
        [
            make_set("b", 3, seed=3, implementation="x", recovery_mean=0.8),
            make_set("d", 3, seed=4, implementation="y", recovery_mean=3.0),
        ]
    )
    plain = diff(a, b, n_boot=0)
    strat = diff(a, b, n_boot=0, strata="implementation")
    assert np.allclose(plain.states["delta"], strat.states["delta"])  # same fractions, other test
    # 3 + 3 per stratum: C(6, 3)^2 = 400 relabellings, smallest p 2/400
    assert strat.states["p_value"].min() >= 2 / 400 - 1e-12
    assert not any("smallest possible" in n for n in strat.notes)
    with pytest.raises(UsageError, match="no trace label 'stack'"):
        diff(a, b, strata="stack")
    lonely = diff(
        a, concat([make_set("e", 3, seed=5, implementation="z")]), strata="implementation", n_boot=0
    )
    assert any("one side only" in n for n in lonely.notes)


def test_traces_without_the_stratum_label_form_their_own_stratum():
    """A trace lacking the --strata label is compared within its side's unlabelled stratum:
    the same p-values and intervals as giving those traces an explicit label of their own."""
    a = concat([make_set("a", 3, seed=1, role="x"), make_set("c", 3, seed=2)])
    b = concat([make_set("b", 3, seed=3, role="x", recovery_mean=0.8), make_set("d", 3, seed=4)])
    filled = [
        TraceSet(ts.events, ts.traces.assign(role=ts.traces["role"].fillna("elsewhere")))
        for ts in (a, b)
    ]
    got = diff(a, b, strata="role", n_boot=200, seed=3)
    want = diff(*filled, strata="role", n_boot=200, seed=3)
    cols = ["p_value", "p_holm", "delta_lo", "delta_hi"]
    assert got.states[cols].equals(want.states[cols])
    assert got.states["p_value"].min() >= 2 / 400 - 1e-12  # two strata of 3 + 3 a side


def test_stratified_false_positive_rate():
    reps, n, alpha = 300, 6, 0.05
    fast = matrix(make_set("p", n * reps * 2, seed=71))
    slow = matrix(make_set("q", n * reps * 2, seed=72, recovery_mean=1.0))
    ga = gb = np.array(["fast"] * n + ["slow"] * n, object)
    hits = np.zeros(fast.shape[1])
    for r in range(reps):
        lo = 2 * n * r
        xa = np.vstack([fast[lo : lo + n], slow[lo : lo + n]])
        xb = np.vstack([fast[lo + n : lo + 2 * n], slow[lo + n : lo + 2 * n]])
        hits += permutation_pvalues(xa, xb, strata_a=ga, strata_b=gb, n_perm=199, seed=r) <= alpha
    sd = math.sqrt(alpha * (1 - alpha) / reps)
    assert (np.abs(hits / reps - alpha) < 3.5 * sd).all(), hits / reps


def test_one_stratum_is_the_plain_bootstrap():
    xa, xb = matrix(make_set("a", 8, seed=81)), matrix(make_set("b", 9, seed=82))
    same_a, same_b = np.array(["s"] * 8, object), np.array(["s"] * 9, object)
    plain = bootstrap_delta(xa, xb, n_boot=300, seed=4)
    strat = bootstrap_delta(xa, xb, strata_a=same_a, strata_b=same_b, n_boot=300, seed=4)
    assert np.allclose(plain, strat)


def test_mixed_implementations_suggest_strata():
    a = concat(
        [make_set("a", 3, seed=1, implementation="x"), make_set("c", 3, seed=2, implementation="y")]
    )
    b = concat(
        [make_set("b", 3, seed=3, implementation="x"), make_set("d", 3, seed=4, implementation="y")]
    )
    assert any("--strata implementation" in n for n in diff(a, b, n_boot=0).notes)
    assert not any("--strata" in n for n in diff(a, b, n_boot=0, strata="implementation").notes)
