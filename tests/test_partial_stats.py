"""Statistics as map and reduce (issue 17 part 2): the tables of merged per-partition
statistics equal the single-machine tables exactly, whatever the partitions, their
grouping and their order; the merge is associative and commutative."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statemine
from statemine.stats import StatsOptions, map_traces, merge
from statemine.stats.partial import PartialStats
from statemine.stats.tables import tables
from statemine.traces import TraceSet

STATES = ["SlowStart", "CongestionAvoidance", "Recovery", "ApplicationLimited", "Idle"]


def random_traceset(rng: np.random.Generator, n_traces: int) -> TraceSet:
    """Traces of random state and event lines (repeats, zero-length visits, traces with
    events only, explicit ends or none)."""
    rows, ends = [], []
    for t in range(n_traces):
        n = int(rng.integers(0, 15))
        times = np.cumsum(rng.exponential(1.0, n) * (rng.random(n) < 0.85))
        for time in times:
            if rng.random() < 0.15:
                rows.append((f"t{t}", float(time), "Loss", "event"))
            else:
                state = STATES[int(rng.integers(len(STATES) - (t % 2)))]
                rows.append((f"t{t}", float(time), state, "state"))
        if not n:
            rows.append((f"t{t}", 0.0, "Open", "event"))
        last = float(times[-1]) if n else 0.0
        ends.append(last + float(rng.exponential(2.0)) if rng.random() < 0.5 else np.nan)
    events = pd.DataFrame(rows, columns=["trace", "time", "state", "kind"])
    traces = pd.DataFrame({"trace": [f"t{t}" for t in range(n_traces)], "end": ends})
    return TraceSet.from_events(events, traces)


def assert_identical(got: tuple[pd.DataFrame, ...], want: tuple[pd.DataFrame, ...]) -> None:
    """Equal tables, bit for bit (what the CSV files show)."""
    for g, w in zip(got, want):
        pd.testing.assert_frame_equal(g, w, check_exact=True)
        assert g.to_csv() == w.to_csv()
        assert g.attrs == w.attrs


def partitions(ts: TraceSet, labels: np.ndarray, options: StatsOptions) -> list[PartialStats]:
    """One PartialStats per label value: any subset of the traces, numbered by position."""
    out = []
    for value in np.unique(labels):
        mask = labels == value
        out.append(map_traces(ts.subset(mask), options, rows=np.flatnonzero(mask)))
    return out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n_traces=st.integers(1, 25),
    n_parts=st.integers(1, 6),
    collapse=st.booleans(),
    end=st.sampled_from(["close", "last-state"]),
    n_boot=st.sampled_from([0, 50]),
    budget=st.sampled_from([1 << 20, 20]),
)
def test_merged_partitions_give_the_tables_of_the_whole(
    seed, n_traces, n_parts, collapse, end, n_boot, budget
):
    rng = np.random.default_rng(seed)
    ts = random_traceset(rng, n_traces)
    if not (ts.events["kind"] == "state").any():
        return
    opts = StatsOptions(
        collapse_repeats=collapse, end=end, n_boot=n_boot, seed=seed, dwell_budget=budget
    )
    whole = statemine.summarize(ts, opts)
    parts = partitions(ts, rng.integers(0, n_parts, n_traces), opts)
    shuffled = [parts[i] for i in rng.permutation(len(parts))]
    assert_identical(tables(merge(*shuffled), opts), whole)
    # any grouping: a left fold, a right fold, a random tree
    left = functools.reduce(merge, shuffled)
    right = functools.reduce(lambda a, b: merge(b, a), reversed(shuffled))
    assert_identical(tables(left, opts), whole)
    assert_identical(tables(right, opts), whole)
    assert_same_statistics(left, right)


def assert_same_statistics(a: PartialStats, b: PartialStats) -> None:
    """Equal statistics: every array equal, the dwell times as a multiset per state."""
    for f in dataclasses.fields(PartialStats):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "dwell":
            assert (x.sketch_keys is None) == (y.sketch_keys is None) and x.n == y.n
            if x.sketch_keys is None:
                sx = sorted(zip(x.state.tolist(), x.seconds.tolist()))
                assert sx == sorted(zip(y.state.tolist(), y.seconds.tolist()))
            else:
                assert np.array_equal(x.sketch_keys, y.sketch_keys)
                assert np.array_equal(x.sketch_counts, y.sketch_counts)
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def test_contiguous_partitions_by_rank_and_pickling():
    """Partitions numbered by rank (``part``), as a store's partitions would be, shipped
    through pickle (as to and from dask workers)."""
    ts = random_traceset(np.random.default_rng(7), 30)
    opts = StatsOptions(n_boot=200, seed=3)
    cuts = [0, 4, 5, 17, 30]
    parts = []
    for rank, (a, b) in enumerate(itertools.pairwise(cuts)):
        mask = np.zeros(30, bool)
        mask[a:b] = True
        parts.append(pickle.loads(pickle.dumps(map_traces(ts.subset(mask), opts, part=rank))))
    merged = merge(*reversed(parts))
    assert merged.n_traces == 30 and merged.n_events == len(ts.events)
    assert_identical(tables(merged, opts), statemine.summarize(ts, opts))


def test_merge_refuses_a_trace_twice():
    ts = random_traceset(np.random.default_rng(1), 5)
    p = map_traces(ts)
    with pytest.raises(ValueError, match="two merged partitions"):
        merge(p, p)
    with pytest.raises(ValueError, match="ascending"):
        map_traces(ts, rows=np.array([4, 3, 2, 1, 0]))


def test_streamed_logs_merge_with_trace_sets(tmp_path):
    """The streamed fold of logs is a map step too: logs folded alone and merged with a
    trace set's statistics give the tables of everything read together."""
    from statemine.parse.statemine_log import scan_files
    from statemine.stats.stream import fold_scanned

    log = tmp_path / "a.log"
    log.write_text(
        "STATEMINE t=0 conn=x state=SlowStart\nSTATEMINE t=1.5 conn=x state=Recovery\n"
        "STATEMINE t=2 conn=y state=SlowStart\nSTATEMINE t=4 conn=x event=Close\n"
        "STATEMINE t=4.25 conn=y state=CongestionAvoidance\n"
    )
    other = random_traceset(np.random.default_rng(2), 6)
    opts = StatsOptions(n_boot=100)
    streamed = fold_scanned(scan_files([log]), opts, files=[log], part=0)
    merged = merge(map_traces(other, opts, part=1), streamed)
    whole = statemine.concat([statemine.read(log), other])
    assert merged.n_traces == whole.n_traces
    got, want = tables(merged, opts), statemine.summarize(whole, opts)
    for g, w in zip(got, want):  # streamed sums add block by block: equal within rounding
        pd.testing.assert_frame_equal(g, w, check_exact=False, rtol=1e-12, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), n_parts=st.integers(1, 4))
def test_diff_of_merged_partitions_is_the_diff_of_the_whole(seed, n_parts):
    """diff_stats on each side's merged partitions (as on dask workers) gives diff's result."""
    from statemine.compare import diff, diff_stats
    from statemine.stats import CompareOptions

    rng = np.random.default_rng(seed)
    a, b = random_traceset(rng, 9), random_traceset(rng, 7)
    opts = CompareOptions(n_perm=99, n_boot=40, seed=seed)
    try:
        want = diff(a, b, opts, label_a="a", label_b="b")
    except statemine.UsageError:  # a side without state lines or time: nothing to merge
        return
    sides = [
        (merge(*partitions(ts, rng.integers(0, n_parts, ts.n_traces), opts)), ts.traces)
        for ts in (a, b)
    ]
    got = diff_stats(*sides, opts, label_a="a", label_b="b")
    for name in ("states", "transitions", "only_a", "only_b"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True)
    assert got.notes == want.notes and got.min_p == want.min_p
