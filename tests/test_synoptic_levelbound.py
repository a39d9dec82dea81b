"""The level bound (statemine/infer/synoptic/levelbound.py): walks over several nodes
timed from every trace's first event; the relaxation's premises on a valid model, the
stabbing limits, and the bound against the exact minimum."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum
from test_synoptic_timeconflicts import _codes, _conn_log, assert_valid

from statemine.infer.synoptic.bounds import type_lower_bounds
from statemine.infer.synoptic.levelbound import (
    _stabbing,
    level_bound,
    level_intervals,
    source_type,
)
from statemine.infer.synoptic.options import parse_args
from statemine.infer.synoptic.perfume_infer import infer_perfume
from statemine.infer.synoptic.run import read_log
from statemine.infer.synoptic.timeconflicts import (
    perfume_lower_bound,
    timed_sides,
    timed_type_bounds,
)


def _longest_walks(part, log, ticks, sources):
    """Per node, the longest walk time from a node in ``sources``, every edge counting
    its largest delta (Bellman-Ford; the models here have no positive cycle)."""
    same = log.trace_of[1:] == log.trace_of[:-1]
    delta = np.diff(ticks.astype(np.float64))[same]
    edges: dict[tuple[int, int], float] = {}
    for u, v, d in zip(part[:-1][same].tolist(), part[1:][same].tolist(), delta.tolist()):
        edges[(u, v)] = max(edges.get((u, v), -np.inf), d)
    h = np.full(int(part.max()) + 1, -np.inf)
    h[sources] = 0.0
    for _ in range(len(h)):
        changed = False
        for (u, v), d in edges.items():
            if h[u] + d > h[v]:
                h[v] = h[u] + d
                changed = True
        if not changed:
            return h
    raise AssertionError("positive cycle")


def test_a_valid_model_keeps_the_levels(tmp_path):
    """The engine's valid model of the benchmark's 601-event connection log (reference
    checker): each event's node's longest walk time from an Init node lies in the
    event's ``[lo, hi]``, and a type has at least as many nodes as distinct such
    times: the premises of the argument, checked on a model."""
    log = _conn_log(tmp_path, 600)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    a = source_type(log)
    assert a is not None and log.types[a] == "Init"
    lo, hi = level_intervals(log, codes, ticks, a)
    assert np.isfinite(hi).all()
    h = _longest_walks(model.part, log, ticks, np.unique(model.part[log.codes == a]))
    pi = h[model.part]
    assert (lo <= pi).all() and (pi <= hi).all()
    for t in range(len(log.types)):
        on = log.codes == t
        assert len(np.unique(pi[on])) <= len(np.unique(model.part[on]))


def _stab_sets(lo, hi, m):
    """Every ``m``-point stabbing of the intervals among their endpoints (an optimal
    stabbing can always move its points onto endpoints: not all, so this only checks
    the limits on those found)."""
    points = sorted(set(lo.tolist()) | set(hi.tolist()))
    for combo in itertools.combinations(points, m):
        c = np.asarray(combo)
        if all(((c >= a) & (c <= b)).any() for a, b in zip(lo, hi)):
            yield c


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6)), min_size=1, max_size=7))
def test_stabbing_limits(intervals):
    """Both greedy stabbings use the fewest points (brute force), and every stabbing
    with that many points has its i-th point between theirs."""
    lo = np.array([a for a, _ in intervals], dtype=float)
    hi = lo + np.array([w for _, w in intervals], dtype=float)
    early, late = _stabbing(lo, hi)
    m = len(early)
    assert len(late) == m
    assert not list(_stab_sets(lo, hi, m - 1)) if m > 1 else True
    found = list(_stab_sets(lo, hi, m))
    assert any(np.array_equal(s, early) for s in found)
    assert any(np.array_equal(s, late) for s in found)
    for s in found:
        assert (early <= s).all() and (s <= late).all()


def _small_conn_log(tmp_path: Path, n: int, seed: int):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_perfume import CONN_MAPPING, CONN_REGEX, interleaved_log

    path = tmp_path / "conn.log"
    path.write_text(interleaved_log(n, np.random.default_rng(seed)))
    return read_log(parse_args(["-r", CONN_REGEX, "-m", CONN_MAPPING, str(path)], "perfume"))


def test_levels_raise_the_bound_to_the_exact_minimum(tmp_path):
    """A 27-event connection log: pairwise conflicts (cliques, colourings) and the
    untimed bound give 23 nodes; the levels refute every model of 23, so the bound is
    24, the exact minimum (tests/perfume_exact.py, proven) and the engine's model."""
    log = _small_conn_log(tmp_path, 20, 22_003)
    assert log.n_events == 27
    _, codes, ticks = _codes(log)
    per_type = timed_type_bounds(log, timed_sides(log, codes, ticks), codes, ticks)
    per_type = np.maximum(per_type, type_lower_bounds(log, codes.untimed))
    assert int(per_type.sum()) + 2 == 23
    assert level_bound(log, codes, ticks, per_type) == 1
    model = infer_perfume(log, codes, ticks, 1)
    assert exact_minimum(log, codes, ticks, model.n_nodes + 1, budget_s=60) == (24, True)
    assert perfume_lower_bound(log, codes, ticks) == 24 == model.n_nodes


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 18), st.integers(0, 10**6))
def test_the_bound_is_at_most_the_exact_minimum_on_small_connection_logs(tmp_path_factory, n, seed):
    """Random connection logs of 8-25 events (every trace starts with Init, so the
    levels apply): bound <= exact minimum whenever the search proves it."""
    log = _small_conn_log(tmp_path_factory.mktemp("l"), n, seed)
    _, codes, ticks = _codes(log)
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=10)
    if proven:
        assert perfume_lower_bound(log, codes, ticks) <= exact


def test_no_source_type_no_levels(tmp_path):
    """Without a type that starts every trace and occurs nowhere else the levels add
    nothing."""
    from test_synoptic_perfume import write_log

    log = write_log(tmp_path, [[("a", "0"), ("b", "3")], [("b", "0"), ("a", "2")]])
    assert source_type(log) is None
    _, codes, ticks = _codes(log)
    assert level_bound(log, codes, ticks, np.ones(2, dtype=np.int64)) == 0
