"""statemine.diff's sparse layout (issue 17): past ``DENSE_CELLS`` traces x states cells the
state statistics run on CSR arrays of the visited (trace, state) pairs. Checked against the
dense layout on generated data with many states, each trace visiting few (with strata,
traces of 0 s and states of 0 s), and on a diff the old limit refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from statemine import compare
from statemine.compare import diff, identical_columns, trace_shares
from statemine.errors import UsageError
from statemine.stats.resampling import bootstrap_delta, permutation_pvalues, pooled_fraction
from statemine.traces import TraceSet

#: Columns that are counts, flags, names or p-values (counts over relabellings): equal exactly.
EXACT = [
    "state",
    "p_value",
    "significant",
    "p_holm",
    "traces_a",
    "traces_b",
    "presence",
    "pseudo_replicates",
    "interval_collapsed",
]
#: Sums of seconds and the bootstrap's quantiles: summed in another order (a sparse product
#: instead of BLAS over zeros), equal up to float rounding.
CLOSE = ["fraction_a", "fraction_b", "delta", "delta_lo", "delta_hi", "time_a_s", "time_b_s"]


def sparse_set(
    prefix: str, n_traces: int, n_states: int, seed: int, *, skew: float = 1.3
) -> TraceSet:
    """``n_traces`` traces, each visiting 1-4 of ``n_states`` states (Zipf-like: a few
    states common, most rare), labelled ``impl`` (3 values) for strata. A trace of one
    line lasts 0 s; every trace's last state lasts 0 s (no Close line)."""
    rng = np.random.default_rng(seed)
    lines = rng.integers(1, 6, n_traces)
    n = int(lines.sum())
    trace = np.repeat(np.arange(n_traces), lines)
    rank = np.minimum(rng.zipf(skew, n) - 1, n_states - 1)
    state = rng.permutation(n_states)[rank]
    first = np.r_[0, np.cumsum(lines)[:-1]]
    step = rng.exponential(1.0, n) * (rng.random(n) < 0.95)  # some visits of 0 s
    step[first] = 0.0
    time = np.cumsum(step)
    time -= np.repeat(time[first], lines)
    events = pd.DataFrame(
        {
            "trace": [f"{prefix}{i}" for i in trace],
            "time": time,
            "state": [f"S{s:03d}" for s in state],
        }
    )
    labels = pd.DataFrame(
        {
            "trace": [f"{prefix}{i}" for i in range(n_traces)],
            "impl": rng.choice(["x", "y", "z"], n_traces),
        }
    )
    return TraceSet.from_events(events, labels)


def wide_set(prefix: str, n_traces: int, n_states: int, seed: int) -> TraceSet:
    """``n_traces`` traces over ``n_states`` states, each visiting ``Open`` and then (most
    of them) one other state, up to a Close line: many states, few per trace, and few
    transition tests (each rare state has one destination)."""
    rng = np.random.default_rng(seed)
    other = rng.integers(0, n_states, n_traces)
    ids = [f"{prefix}{i}" for i in range(n_traces)]
    t1, t2 = rng.exponential(1.0, n_traces), rng.exponential(2.0, n_traces)
    events = pd.DataFrame(
        {
            "trace": np.repeat(ids, 3),
            "time": np.c_[np.zeros(n_traces), t1, t1 + t2].ravel(),
            "state": np.c_[
                np.full(n_traces, "Open"), [f"R{s:04d}" for s in other], np.full(n_traces, "")
            ].ravel(),
            "kind": np.tile(["state", "state", "event"], n_traces),
            "event": np.tile(["", "", "Close"], n_traces),
        }
    )
    return TraceSet.from_events(events)


def both_layouts(monkeypatch, a: TraceSet, b: TraceSet, **options):
    """``diff(a, b)`` in the dense layout and in the sparse one (forced)."""
    assert (a.n_traces + b.n_traces) * 200 <= compare.DENSE_CELLS  # dense as configured
    dense = diff(a, b, **options)
    monkeypatch.setattr(compare, "DENSE_CELLS", 0)
    sparse = diff(a, b, **options)
    monkeypatch.undo()
    return dense, sparse


def assert_same_result(dense, sparse) -> None:
    ds, ss = dense.states, sparse.states
    assert list(ds.columns) == list(ss.columns)
    # rows are ranked by |delta|: a tie broken by rounding would reorder, so align by state
    ss = ss.set_index("state").loc[ds["state"]].reset_index()
    for column in EXACT:
        assert ds[column].tolist() == ss[column].tolist(), column
    for column in [*CLOSE, "sd_a", "sd_b"]:
        assert np.allclose(ds[column], ss[column], rtol=1e-12, atol=1e-15, equal_nan=True), column
    pd.testing.assert_frame_equal(dense.transitions, sparse.transitions)
    pd.testing.assert_frame_equal(dense.only_a, sparse.only_a)
    pd.testing.assert_frame_equal(dense.only_b, sparse.only_b, check_exact=False, rtol=1e-12)
    assert dense.notes == sparse.notes
    assert (dense.min_p, dense.min_p_holm, dense.underpowered) == (
        sparse.min_p,
        sparse.min_p_holm,
        sparse.underpowered,
    )


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    n_a=st.integers(2, 120),
    n_b=st.integers(2, 120),
    n_states=st.integers(2, 150),
    strata=st.booleans(),
)
@example(seed=10, n_a=2, n_b=2, n_states=5, strata=False)  # side B: every trace 0 s
def test_sparse_layout_equals_dense(monkeypatch, seed, n_a, n_b, n_states, strata):
    """Generated sides give the same diff in both layouts; a side whose every trace lasts
    0 s (a few traces of one line, or of visits of 0 s: CI's README run drew one) is
    refused by both alike."""
    a = sparse_set("a", n_a, n_states, seed)
    b = sparse_set("b", n_b, n_states, seed + 1, skew=1.6)
    options = dict(n_perm=199, n_boot=97, seed=seed, strata=("impl",) if strata else ())
    try:
        diff(a, b, **options)
    except UsageError as refused:
        assert "has no time in any state" in str(refused)
        with monkeypatch.context() as sparse_only:
            sparse_only.setattr(compare, "DENSE_CELLS", 0)
            with pytest.raises(UsageError, match="has no time in any state"):
                diff(a, b, **options)
        return
    assert_same_result(*both_layouts(monkeypatch, a, b, **options))


def test_exact_permutations_and_pseudo_replicates_equal(monkeypatch):
    """Few traces (every relabelling enumerated) and copied traces (pseudo-replicates,
    collapsed intervals) give the same flags and exact p-values in both layouts."""
    one = sparse_set("a", 1, 30, 5).events[["trace", "time", "state"]]
    a = TraceSet.from_events(pd.concat([one.assign(trace=f"a{i}") for i in range(4)]))
    b = sparse_set("b", 5, 30, 6)
    dense, sparse = both_layouts(monkeypatch, a, b, n_perm=9999, n_boot=200)
    assert dense.states["pseudo_replicates"].any()
    assert_same_result(dense, sparse)


def test_functions_take_either_layout():
    """The resampling functions and the per-trace helpers on a dense array and on its CSR
    form: the same numbers (exactly for the counts and flags)."""
    from scipy.sparse import csr_array

    rng = np.random.default_rng(3)
    xa = rng.exponential(1.0, (40, 25)) * (rng.random((40, 25)) < 0.1)
    xb = rng.exponential(1.0, (30, 25)) * (rng.random((30, 25)) < 0.1)
    xa[:, 0] += 1.0  # every row lasts > 0 s
    xb[:, 0] += 1.0
    ga, gb = rng.choice(["p", "q"], 40), rng.choice(["p", "q"], 30)
    sa, sb = csr_array(xa), csr_array(xb)
    assert np.allclose(pooled_fraction(sa), pooled_fraction(xa), rtol=1e-13)
    kw = dict(strata_a=ga, strata_b=gb, seed=4)
    assert np.array_equal(
        permutation_pvalues(sa, sb, n_perm=499, **kw), permutation_pvalues(xa, xb, n_perm=499, **kw)
    )
    for got, want in zip(
        bootstrap_delta(sa, sb, n_boot=300, **kw), bootstrap_delta(xa, xb, n_boot=300, **kw)
    ):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-15)
    shares = trace_shares(sa)
    assert np.allclose(shares.toarray(), trace_shares(xa), rtol=1e-13, atol=0)
    assert np.allclose(compare._sd(shares), compare._sd(trace_shares(xa)), rtol=1e-12)
    flat = trace_shares(np.vstack([xa[:5]] * 3))  # rows i, i + 5, i + 10: copies
    copies = np.tile(list("pqrst"), 3)  # strata of copies
    for strata in (None, copies, np.repeat(list("pqr"), 5)):
        assert np.array_equal(
            identical_columns(csr_array(flat), strata), identical_columns(flat, strata)
        )
    assert identical_columns(flat, copies).sum() >= 1 and not identical_columns(flat).any()


def test_past_the_old_limit_runs_sparse(monkeypatch):
    """A diff past the old refusal (2^22 traces x states cells) now runs, in the sparse
    layout, and its numbers equal those of the same diff made dense by raising the bound
    (the states' fractions checked against a direct computation too)."""
    a, b = wide_set("a", 8_000, 400, 8), wide_set("b", 8_000, 400, 9)
    assert 16_000 * 401 > 1 << 22  # refused before
    sparse = diff(a, b, n_perm=19, n_boot=9)
    assert len(sparse.states) == 401
    monkeypatch.setattr(compare, "DENSE_CELLS", 1 << 24)
    dense = diff(a, b, n_perm=19, n_boot=9)
    assert_same_result(dense, sparse)
    ev = a.events[a.events["kind"] == "state"]
    seconds = ev.assign(d=-ev.groupby("trace", observed=True)["time"].diff(-1))
    seconds["d"] = seconds["d"].fillna(
        a.events["time"].groupby(a.events["trace"]).transform("max") - seconds["time"]
    )
    per_state = seconds.groupby(seconds["state"].astype(str))["d"].sum()
    got = sparse.states.set_index("state")["fraction_a"]
    want = per_state / per_state.sum()
    assert np.allclose(got.reindex(want.index), want, rtol=1e-9)


def test_too_many_states_is_still_refused():
    """Past MAX_STATES distinct states (an id in the state field) diff still refuses."""
    ids = pd.DataFrame(
        {"trace": np.arange(5000) // 2, "time": np.arange(5000) % 2, "state": np.arange(5000)}
    )
    many = TraceSet.from_events(ids.astype({"trace": str, "state": str}))
    with pytest.raises(
        compare.InputError, match=r"^5014 distinct states: diff compares at most 4096"
    ):
        diff(many, sparse_set("b", 50, 20, 2), n_perm=9, n_boot=0)


def test_report_trace_pick_is_the_same_from_sparse_pairs(monkeypatch):
    """The report's trace of median share (per side and per stratum) from the visited
    pairs alone, as past DENSE_CELLS, is the one the dense table gives."""
    from statemine.output.sides import traceset_side
    from statemine.stats.options import CompareOptions

    side = traceset_side(sparse_set("a", 300, 40, 11), CompareOptions())
    sides = [side, side.select({"impl": "y"})]
    states = [*side.partial.names[:12], "NoSuchState"]
    dense = [s.share_pick(state) for s in sides for state in states]
    monkeypatch.setattr(compare, "DENSE_CELLS", 0)
    sparse = [s.share_pick(state) for s in sides for state in states]
    assert [t for t, _ in dense] == [t for t, _ in sparse]
    assert np.allclose([v for _, v in dense], [v for _, v in sparse], rtol=1e-12, atol=0)
    assert len({t for t, _ in dense}) > 3  # the picks differ by state: the test can fail
