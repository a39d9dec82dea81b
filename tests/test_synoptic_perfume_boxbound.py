"""The box bound on Perfume models (statemine/infer/synoptic/boxbound.py, issue 31):
never above the exact minimum of tests/perfume_exact.py, never refutes the node counts of
a valid model, and above ``perfume_lower_bound`` on the benchmark's connection logs."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum, shaped, tiny_logs
from test_synoptic_levelbound import _small_conn_log
from test_synoptic_perfume import write_log
from test_synoptic_timeconflicts import _codes, _conn_log

from statemine.infer.synoptic import boxbound
from statemine.infer.synoptic.graphbounds import largest_clique
from statemine.infer.synoptic.levelbound import _stabbing
from statemine.infer.synoptic.perfume_cpsat import int_ticks, slots_of, type_lows, valid
from statemine.infer.synoptic.perfume_infer import infer_perfume
from statemine.infer.synoptic.timeconflicts import perfume_lower_bound


@settings(max_examples=40, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]))
def test_box_bound_is_at_most_the_exact_minimum_on_tiny_logs(tmp_path_factory, traces, shape):
    """Random tiny logs in three shapes: the bound (with shaving) is at least the per-type bounds' sum
    plus two, at most the engine's valid model and the proven exact minimum, and the
    node counts of the engine's model are never refuted."""
    log = write_log(tmp_path_factory.mktemp("b"), shaped(traces, shape))
    _, codes, ticks = _codes(log)
    got = boxbound.box_bound(log, codes, ticks, probes=20)
    lows = type_lows(log, codes, ticks)
    assert got.bound >= int(lows.sum()) + 2
    model = infer_perfume(log, codes, ticks, 1)
    assert valid(model, codes, ticks) and got.bound <= model.n_nodes
    exact, proven = exact_minimum(log, codes, ticks, model.n_nodes + 1, budget_s=10)
    if proven:
        assert got.bound <= exact


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 18), st.integers(0, 10**6))
def test_box_bound_is_at_most_the_exact_minimum_on_small_connection_logs(tmp_path_factory, n, seed):
    """Random connection logs of 8-25 events: the bound, with and without shaving, is
    at most the exact minimum when proven."""
    log = _small_conn_log(tmp_path_factory.mktemp("c"), n, seed)
    _, codes, ticks = _codes(log)
    got = boxbound.box_bound(log, codes, ticks)
    shaved = boxbound.box_bound(log, codes, ticks, probes=20)
    assert shaved.bound >= got.bound
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=10)
    if proven:
        assert shaved.bound <= exact
        assert boxbound.box_lower_bound(log, codes, ticks) <= exact


def _state(log, codes, ticks):
    fit = int_ticks(ticks, codes)
    assert not isinstance(fit, str)
    return boxbound._state(log, codes, ticks, *fit)


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 40), st.integers(0, 10**6), st.integers(0, 2**16))
def test_a_valid_models_node_counts_are_never_refuted(tmp_path_factory, n, seed, engine_seed):
    """The engine's valid models (seeded) of random connection logs: the budget of
    their own node counts per type is not refuted (with or without shaving), nor is any
    type's count alone."""
    log = _small_conn_log(tmp_path_factory.mktemp("v"), n, seed)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, engine_seed, attempts=1)
    assert valid(model, codes, ticks)
    _, counts = slots_of(model)
    state = _state(log, codes, ticks)
    budget = {t: int(c) for t, c in enumerate(counts.tolist()) if c > 0}
    assert not boxbound.refuted(state, budget)
    assert not boxbound.refuted(state, budget, probes=20)
    for t, c in budget.items():
        assert not boxbound.refuted(state, {t: c})


def test_the_601_event_logs_valid_model_is_not_refuted(tmp_path):
    """The benchmark's 601-event connection log: the engine's valid model (119 nodes)
    is not refuted under its own node counts, each type alone or all together."""
    log = _conn_log(tmp_path, 600)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert valid(model, codes, ticks)
    _, counts = slots_of(model)
    state = _state(log, codes, ticks)
    budget = {t: int(c) for t, c in enumerate(counts.tolist()) if c > 0}
    assert not boxbound.refuted(state, budget)


def test_boxes_raise_the_bound_of_the_107_event_connection_log(tmp_path):
    """The benchmark's 100-event connection log (107 events; exact minimum 59,
    tests/test_synoptic_perfume_cpsat.py): ``perfume_lower_bound`` 50 (the per-type
    bounds 48 plus the levels' 2); with the boxes 55 (the joint relaxation with the
    conflict pairs, solved exactly by CP-SAT, also 55).  Fails on the code before
    this module (no ``boxes`` option, 50)."""
    log = _conn_log(tmp_path, 100)
    _, codes, ticks = _codes(log)
    assert log.n_events == 107
    assert perfume_lower_bound(log, codes, ticks) == 50
    got = boxbound.box_bound(log, codes, ticks)
    assert got.complete and got.bound == 55
    assert boxbound.box_lower_bound(log, codes, ticks) == 55


def test_shaving_raises_the_bound_of_the_124_event_connection_log(tmp_path):
    """The benchmark's 120-event connection log (124 events; exact minimum 52): the
    boxes alone 50 (47 before them), with shaving 51 (what the joint relaxation with
    the conflict pairs proves, solved exactly by CP-SAT)."""
    log = _conn_log(tmp_path, 120)
    _, codes, ticks = _codes(log)
    assert log.n_events == 124
    assert boxbound.box_bound(log, codes, ticks).bound == 50
    assert boxbound.box_bound(log, codes, ticks, probes=100).bound == 51


def test_anchoring_places_forced_events_and_refutes():
    """Two anchors (disjoint in system 0), an event that meets only the first: it is
    placed there and the region narrows; an event meeting neither refutes."""
    lo = np.array([[0.0, 10.0, 1.0], [0.0, 0.0, 2.0]])
    hi = np.array([[2.0, 12.0, 5.0], [9.0, 9.0, 3.0]])
    conf = np.zeros((3, 3), dtype=bool)
    assert boxbound.anchor(lo, hi, conf, 2) is False
    assert lo[:, 0].tolist() == [1.0, 2.0] and hi[:, 0].tolist() == [2.0, 3.0]
    assert lo[:, 2].tolist() == lo[:, 0].tolist()
    lo2 = np.array([[0.0, 10.0, 5.0]])
    hi2 = np.array([[2.0, 12.0, 6.0]])
    assert boxbound.anchor(lo2, hi2, np.zeros((3, 3), dtype=bool), 2) is True
    assert boxbound.anchor(lo2.copy(), hi2.copy(), np.zeros((3, 3), dtype=bool), 3) is False
    # a conflict with the only compatible anchor refutes as well
    conf[0, 2] = conf[2, 0] = True
    lo = np.array([[0.0, 10.0, 1.0]])
    hi = np.array([[2.0, 12.0, 5.0]])
    assert boxbound.anchor(lo, hi, conf, 2) is True


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6)), min_size=2, max_size=8))
def test_the_clique_is_a_largest_one(pairs):
    """:func:`~.graphbounds.largest_clique` (what anchoring takes) on random interval
    disjointness graphs: a clique, as large as the most pairwise disjoint intervals
    (brute force)."""
    lo = np.array([float(a) for a, _ in pairs])
    hi = lo + np.array([float(w) for _, w in pairs])
    adj = boxbound.disjoint(lo[None, :], hi[None, :])
    np.fill_diagonal(adj, False)
    got, proven = largest_clique(adj)
    assert proven
    assert all(adj[u, v] for u, v in itertools.combinations(got, 2))
    best = max(
        (
            len(s)
            for r in range(1, len(pairs) + 1)
            for s in itertools.combinations(range(len(pairs)), r)
            if all(adj[u, v] for u, v in itertools.combinations(s, 2))
        ),
        default=0,
    )
    assert len(got) == best == len(_stabbing(lo, hi)[0])
