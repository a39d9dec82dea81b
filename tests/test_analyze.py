"""State and transition statistics, each checked against an independent computation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from statemine.stats.resampling import bootstrap_ratio
from statemine.stats.summary import state_stats, transition_stats, visits
from statemine.traces import TraceSet


def make(rows, traces=None):
    """rows: (trace, time, state[, kind])"""
    frame = pd.DataFrame(rows, columns=["trace", "time", "state", "kind"][: len(rows[0])])
    return TraceSet.from_events(frame, traces)


def three_state():
    # On paper: SlowStart 0-2 (2 s), Recovery 2-3 (1 s), CongestionAvoidance 3-7 (4 s);
    # a LossDetected event at 2.5 must not split Recovery. Total 7 s.
    return make(
        [
            ("a", 0.0, "SlowStart", "state"),
            ("a", 2.0, "Recovery", "state"),
            ("a", 2.5, "LossDetected", "event"),
            ("a", 3.0, "CongestionAvoidance", "state"),
            ("a", 7.0, "Close", "event"),
        ],
        pd.DataFrame({"trace": ["a"], "end": [7.0]}),
    )


def test_three_state_fractions_by_hand():
    s = state_stats(three_state(), n_boot=0).set_index("state")
    assert s.loc["SlowStart", "time_fraction"] == pytest.approx(2 / 7)
    assert s.loc["Recovery", "time_fraction"] == pytest.approx(1 / 7)
    assert s.loc["CongestionAvoidance", "time_fraction"] == pytest.approx(4 / 7)
    assert s["time_fraction"].sum() == pytest.approx(1.0)
    assert s.loc["Recovery", "dwell_mean"] == pytest.approx(1.0)
    assert "LossDetected" not in s.index and "Close" not in s.index
    assert s["visits"].tolist() == [1, 1, 1]


def test_end_rules():
    ts = make(
        [("a", 0.0, "SlowStart"), ("a", 1.0, "Recovery"), ("b", 0.0, "SlowStart")],
        pd.DataFrame({"trace": ["a", "b"], "end": [4.0, np.nan]}),
    )
    # close: a's Recovery lasts to its explicit end 4.0; b has one line -> no time.
    s = state_stats(ts, n_boot=0).set_index("state")
    assert s.loc["Recovery", "time_s"] == pytest.approx(3.0)
    assert s.loc["SlowStart", "time_s"] == pytest.approx(1.0)
    # last-state: the final state gets no time.
    s = state_stats(ts, end="last-state", n_boot=0).set_index("state")
    assert s.loc["Recovery", "time_s"] == 0.0
    assert s.loc["SlowStart", "time_fraction"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        state_stats(ts, end="bogus")


def test_last_line_of_any_kind_ends_trace_without_close():
    ts = make([("a", 0.0, "SlowStart", "state"), ("a", 3.0, "LossDetected", "event")])
    assert state_stats(ts, n_boot=0)["time_s"].tolist() == [3.0]


def test_collapse_repeats():
    ts = make(
        [
            ("a", 0.0, "SlowStart"),
            ("a", 1.0, "SlowStart"),
            ("a", 2.0, "Recovery"),
            ("a", 3.0, "Recovery"),
        ]
    )
    plain = transition_stats(ts, n_boot=0)
    assert ("SlowStart", "SlowStart") in set(zip(plain.src, plain.dst))
    merged = transition_stats(ts, collapse_repeats=True, n_boot=0)
    assert set(zip(merged.src, merged.dst)) == {
        ("INITIAL", "SlowStart"),
        ("SlowStart", "Recovery"),
        ("Recovery", "TERMINAL"),
    }
    s = state_stats(ts, collapse_repeats=True, n_boot=0).set_index("state")
    assert s.loc["SlowStart", "visits"] == 1 and s.loc["SlowStart", "dwell_mean"] == 2.0


def naive_stats(rows_by_trace, ends):
    """Independent re-implementation with plain Python loops."""
    time_in = defaultdict(float)
    counts = defaultdict(int)
    for trace, rows in rows_by_trace.items():
        states = [(t, s) for t, s, k in rows if k == "state"]
        last_line = max(t for t, _, _ in rows)
        end = ends.get(trace, last_line)
        counts[("INITIAL", states[0][1])] += 1
        for i, (t, s) in enumerate(states):
            nxt_t = states[i + 1][0] if i + 1 < len(states) else max(end, t)
            time_in[s] += nxt_t - t
            counts[(s, states[i + 1][1] if i + 1 < len(states) else "TERMINAL")] += 1
    total = sum(time_in.values())
    fractions = {s: v / total for s, v in time_in.items()}
    out = defaultdict(int)
    for (a, _), c in counts.items():
        out[a] += c
    probs = {k: c / out[k[0]] for k, c in counts.items()}
    return fractions, probs, counts


def random_traces(seed, n_traces=30):
    rng = np.random.default_rng(seed)
    names = ["SlowStart", "CongestionAvoidance", "Recovery", "ApplicationLimited"]
    rows_by_trace = {}
    for i in range(n_traces):
        n = int(rng.integers(1, 15))
        times = np.cumsum(rng.exponential(1.0, n))
        rows = [
            (float(t), names[int(rng.integers(0, 4))], "state" if rng.random() < 0.8 else "event")
            for t in times
        ]
        rows[0] = (rows[0][0], rows[0][1], "state")
        rows_by_trace[f"t{i}"] = rows
    return rows_by_trace


@pytest.mark.parametrize("seed", range(5))
def test_against_naive_loops(seed):
    rows_by_trace = random_traces(seed)
    ends = {"t0": 1000.0}
    frame = pd.DataFrame(
        [(tr, t, s, k) for tr, rows in rows_by_trace.items() for t, s, k in rows],
        columns=["trace", "time", "state", "kind"],
    )
    ts = TraceSet.from_events(
        frame,
        pd.DataFrame(
            {"trace": list(rows_by_trace), "end": [ends.get(t, np.nan) for t in rows_by_trace]}
        ),
    )
    fractions, probs, counts = naive_stats(rows_by_trace, ends)
    s = state_stats(ts, n_boot=0).set_index("state")
    for state, f in fractions.items():
        assert s.loc[state, "time_fraction"] == pytest.approx(f)
    t = transition_stats(ts, n_boot=0)
    got = {(a, b): (c, p) for a, b, c, p in zip(t.src, t.dst, t["count"], t.probability)}
    assert set(got) == set(counts)
    for key, c in counts.items():
        assert got[key][0] == c and got[key][1] == pytest.approx(probs[key])
    assert t.groupby("src")["probability"].sum().to_numpy() == pytest.approx(1.0)


def test_markov_chain_estimates_approach_truth():
    """A generated continuous-time chain: the estimates converge to the true values."""
    rng = np.random.default_rng(7)
    names = np.array(["SlowStart", "CongestionAvoidance", "Recovery"])
    P = np.array([[0.0, 0.7, 0.3], [0.0, 0.2, 0.8], [0.1, 0.9, 0.0]])
    mean_dwell = np.array([0.5, 2.0, 0.25])
    rows = []
    for trace in range(400):
        state, t = 0, 0.0
        for _ in range(60):
            rows.append((f"c{trace}", t, names[state]))
            t += rng.exponential(mean_dwell[state])
            state = rng.choice(3, p=P[state])
        rows.append((f"c{trace}", t, "Close"))
    frame = pd.DataFrame(rows, columns=["trace", "time", "state"])
    frame["kind"] = np.where(frame["state"] == "Close", "event", "state")
    ts = TraceSet.from_events(frame)
    # Stationary distribution of the embedded chain, weighted by mean dwell time.
    w, v = np.linalg.eig(P.T)
    pi = np.real(v[:, np.argmin(abs(w - 1))])
    pi /= pi.sum()
    truth = pi * mean_dwell / (pi * mean_dwell).sum()
    s = state_stats(ts, n_boot=200).set_index("state")
    for name, f in zip(names, truth):
        assert s.loc[name, "time_fraction"] == pytest.approx(f, abs=0.02)
        assert (
            s.loc[name, "time_fraction_lo"]
            <= s.loc[name, "time_fraction"]
            <= s.loc[name, "time_fraction_hi"]
        )
    t = transition_stats(ts, n_boot=0)
    for a in range(3):
        for b in range(3):
            if P[a, b] == 0:
                continue
            row = t[(t.src == names[a]) & (t.dst == names[b])]
            # out of a: the chain's P plus a small share to TERMINAL (last state of a trace)
            assert row.probability.iloc[0] == pytest.approx(P[a, b], abs=0.03)


def test_bootstrap_matches_scipy_percentile_interval():
    rng = np.random.default_rng(1)
    num = rng.exponential(1.0, size=(60, 1))
    den = num + rng.exponential(2.0, size=(60, 1))
    lo, hi = bootstrap_ratio(num, den, n_boot=4000, seed=3)
    ref = scipy.stats.bootstrap(
        (num[:, 0], den[:, 0]),
        lambda a, b, axis=-1: a.sum(axis) / b.sum(axis),
        paired=True,
        vectorized=True,
        n_resamples=4000,
        method="percentile",
        random_state=np.random.default_rng(4),
    )
    assert lo[0] == pytest.approx(ref.confidence_interval.low, abs=0.015)
    assert hi[0] == pytest.approx(ref.confidence_interval.high, abs=0.015)
    # reproducible for a seed; NaN with one row
    assert (
        bootstrap_ratio(num, den, n_boot=100, seed=3)[0][0]
        == bootstrap_ratio(num, den, n_boot=100, seed=3)[0][0]
    )
    assert np.isnan(bootstrap_ratio(num[:1], den[:1])[0]).all()


def test_mean_trace_fraction_by_hand():
    ts = make(
        [
            ("a", 0.0, "SlowStart"),
            ("a", 1.0, "Recovery"),
            ("a", 2.0, "Close"),
            ("b", 0.0, "SlowStart"),
            ("b", 9.0, "Close"),
        ]
    )
    s = state_stats(ts, n_boot=0).set_index("state")
    # a: SlowStart 1/2, Recovery 1/2, Close 0; b: SlowStart 1 -> mean over traces
    assert s.loc["SlowStart", "mean_trace_fraction"] == pytest.approx((0.5 + 1.0) / 2)
    assert s.loc["SlowStart", "time_fraction"] == pytest.approx(10 / 11)


def test_visits_table():
    v = visits(three_state())
    assert v["state"].tolist() == ["SlowStart", "Recovery", "CongestionAvoidance"]
    assert v["duration"].tolist() == [2.0, 1.0, 4.0]
    assert v["next"].tolist() == ["Recovery", "CongestionAvoidance", "TERMINAL"]


@pytest.mark.parametrize("collapse_repeats", [False, True])
@pytest.mark.parametrize("end", ["close", "last-state"])
def test_per_trace_statistics_are_the_visits_sums(collapse_repeats, end):
    """The per-trace statistics (diff's map per side, the timelines' and lab findings'
    trace_state_times) hold, bit for bit, the traces x states seconds summed one visit at a
    time from visits(), and the traces per state counted from visits() in pandas."""
    from test_diff_data import visit_seconds

    from statemine.stats import StatsOptions, map_traces
    from statemine.stats.summary import trace_state_times
    from statemine.traces import load

    ts = load(Path(__file__).resolve().parent / "data/diff/quic-go-mobile-servers.parquet")
    opts = StatsOptions(collapse_repeats=collapse_repeats, end=end)
    v = visits(ts, opts)
    p = map_traces(ts, opts)
    table = trace_state_times(ts, opts)
    oracle = visit_seconds(ts, collapse_repeats=collapse_repeats, end=end)
    assert list(table.columns) == list(p.names) == sorted(set(v["state"].astype(str)))
    assert list(table.index) == ts.traces["trace"].astype(str).tolist()
    assert np.array_equal(table.to_numpy(), oracle)
    assert np.array_equal(p.trace_state_seconds(), oracle)
    nunique = v.groupby("state", observed=True)["trace"].nunique().reindex(p.names)
    assert p.traces_per_state().tolist() == nunique.tolist()
