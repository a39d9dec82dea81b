"""The joint relaxation's lower bound on Perfume models
(statemine/infer/synoptic/jointbound.py, issue 31): never above the exact minimum of
tests/perfume_exact.py nor the engine's valid models, each relaxed constraint met by
the walk values of valid models computed another way (networkx), and above
``perfume_lower_bound`` on the benchmark's connection logs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum
from test_synoptic_perfume import write_log
from test_synoptic_perfume_cpsat import shaped, tiny_logs
from test_synoptic_timeconflicts import _codes, _conn_log

from statemine.infer.synoptic import jointbound, perfume_cpsat
from statemine.infer.synoptic.perfume_infer import infer_perfume
from statemine.infer.synoptic.timeconflicts import perfume_lower_bound

pytest.importorskip("ortools", reason="the joint bound needs OR-Tools (statemine[exact])")


@settings(max_examples=30, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]), st.booleans())
def test_joint_bound_is_below_the_exact_minimum(tmp_path_factory, traces, shape, conflicts):
    """On random tiny logs (``source``: each trace starts with an ``s`` found nowhere else;
    ``loop``: a positive cycle possible), deepened from the per-type bounds alone (not
    from ``perfume_lower_bound``), with and without the conflict pairs: the bound is at
    most the nodes of the engine's model (valid by its checker) and of CP-SAT's optimum,
    and at most the proven exact minimum of tests/perfume_exact.py."""
    log = write_log(tmp_path_factory.mktemp("j"), shaped(traces, shape))
    _, codes, ticks = _codes(log)
    got = jointbound.joint_bound(log, codes, ticks, 20.0, start=0, conflicts=conflicts)
    lows = perfume_cpsat.type_lows(log, codes, ticks)
    assert got.bound >= int(lows.sum()) + 2 == got.start
    assert all(name in ("INFEASIBLE", "OPTIMAL", "FEASIBLE") for _, name in got.status)
    model = infer_perfume(log, codes, ticks, 1)
    assert perfume_cpsat.valid(model, codes, ticks) and got.bound <= model.n_nodes
    counts = np.bincount(log.codes, minlength=len(log.types))
    best = perfume_cpsat.solve(log, codes, ticks, counts, 30.0)
    assert best.status == "OPTIMAL" and got.bound <= best.nodes
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=20)
    if proven:
        assert got.bound <= exact == best.nodes
        full = jointbound.joint_bound(log, codes, ticks, 20.0, start=0, full=True)
        assert full.bound == exact  # the deepened exact formulation reaches the minimum


def _walk_values(model, ticks: np.ndarray, a: int, kind: str) -> dict[int, float]:
    """Per node, the walk value of the module doc of jointbound, by networkx on the
    model's edges (largest deltas for upper kinds, smallest for lower): the longest
    (``upper``, ``first``) or shortest (``lower``) walk time from an ``a`` node (``first``:
    from a starting ``a`` node through nodes that are no ``a``), over walks of at most
    as many edges as nodes (a longer walk repeats a node: on a positive cycle, +inf)."""
    log = model.log
    part, types = model.part, model.node_type
    lo: dict[tuple[int, int], float] = {}
    hi: dict[tuple[int, int], float] = {}
    for e in np.nonzero(~log.is_last)[0].tolist():
        key = (int(part[e]), int(part[e + 1]))
        d = float(ticks[e + 1] - ticks[e])
        lo[key] = min(lo.get(key, d), d)
        hi[key] = max(hi.get(key, d), d)
    g: nx.DiGraph = nx.DiGraph()
    g.add_edges_from(hi)
    g.add_nodes_from(np.unique(part).tolist())
    a_nodes = [v for v in g if types[v] == a]
    if kind == "first":
        start = {int(part[e]) for e in log.starts[:-1].tolist()}
        seen, todo = set(start), list(start)
        while todo:  # reached from INITIAL through nodes that are no a
            v = todo.pop()
            if types[v] == a:
                continue
            for w in g.successors(v):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        a_nodes = [v for v in a_nodes if v in seen]
    val = {v: 0.0 for v in a_nodes}
    for _ in range(len(g) + 1):
        new = dict(val)
        for (u, v), d in (lo if kind == "lower" else hi).items():
            if u not in val or (kind == "first" and types[v] == a):
                continue
            x = val[u] + d
            if kind == "lower":
                new[v] = min(new.get(v, np.inf), x)
            else:
                new[v] = max(new.get(v, -np.inf), x)
        val = new
    if kind != "lower":  # still growing after |nodes| rounds: a positive cycle
        more = dict(val)
        for (u, v), d in hi.items():
            if u in val and not (kind == "first" and types[v] == a):
                more[v] = max(more.get(v, -np.inf), val[u] + d)
        val = {v: (np.inf if more[v] > val.get(v, -np.inf) else x) for v, x in more.items()}
    return val


@settings(max_examples=30, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]), st.integers(0, 2**16))
def test_valid_models_meet_every_relaxed_constraint(tmp_path_factory, traces, shape, seed):
    """The soundness argument checked on valid models (the engine's, seeded): each
    node's walk values, computed by :func:`_walk_values` (not by jointbound), meet every
    cap, floor, zero and step constraint of ``jointbound.systems`` at the events that
    constrain them, each value clamped to the domain ``[0, top]``."""
    log = write_log(tmp_path_factory.mktemp("w"), shaped(traces, shape))
    _, codes, ticks = _codes(log)
    fit = perfume_cpsat.int_ticks(ticks, codes)
    assert not isinstance(fit, str)
    model = infer_perfume(log, codes, ticks, seed, attempts=1)
    assert perfume_cpsat.valid(model, codes, ticks)
    d = np.zeros(log.n_events)
    d[:-1] = ticks[1:] - ticks[:-1]
    for s in jointbound.systems(log, codes, fit[1]):
        val = _walk_values(model, ticks, s.a, s.kind)
        at = [float(np.clip(val.get(int(p), s.top), 0, s.top)) for p in model.part]
        for e in np.nonzero(s.zero)[0].tolist():
            assert at[e] == 0
        for e in np.nonzero(s.limit >= 0)[0].tolist():
            assert at[e] <= s.limit[e] if s.kind != "lower" else at[e] >= s.limit[e]
        for e in np.nonzero(s.step)[0].tolist():
            if s.kind == "lower":
                assert at[e + 1] <= at[e] + d[e]
            else:
                assert at[e + 1] >= at[e] + d[e]


def test_joint_bound_raises_the_bound_of_a_100_event_connection_log(tmp_path):
    """The benchmark's 100-event connection log (107 events; exact minimum 59, proven in
    tests/test_synoptic_perfume_cpsat.py): ``perfume_lower_bound`` says 50; the joint
    relaxation 52, with the conflict pairs 55 (each total below INFEASIBLE, the last
    OPTIMAL: the relaxation's exact minimum); never above the engine's valid 59."""
    log = _conn_log(tmp_path, 100)
    _, codes, ticks = _codes(log)
    assert perfume_lower_bound(log, codes, ticks) == 50
    plain = jointbound.joint_bound(log, codes, ticks, 30.0, seed=1)
    assert plain.start == 50 and plain.bound == 52
    assert plain.status == [(50, "INFEASIBLE"), (51, "INFEASIBLE"), (52, "OPTIMAL")]
    got = jointbound.joint_bound(log, codes, ticks, 30.0, seed=1, conflicts=True)
    assert got.bound == 55 and got.status[-1] == (55, "OPTIMAL")
    assert infer_perfume(log, codes, ticks, 1).n_nodes == 59


def test_deepened_exact_formulation_proves_the_minimum_of_an_82_event_log(tmp_path):
    """``full=True`` on the 80-event connection log (82 events): the exact formulation
    under a total of ``c`` nodes is INFEASIBLE for 38-41 and OPTIMAL at 42, the exact
    minimum (tests/test_synoptic_perfume_cpsat.py); ``ceiling`` stops the deepening."""
    log = _conn_log(tmp_path, 80)
    _, codes, ticks = _codes(log)
    got = jointbound.joint_bound(log, codes, ticks, 30.0, seed=1, full=True)
    assert got.start == 38 and got.bound == 42
    assert [c for c, name in got.status if name == "INFEASIBLE"] == [38, 39, 40, 41]
    capped = jointbound.joint_bound(log, codes, ticks, 30.0, seed=1, full=True, ceiling=40)
    assert capped.bound == 40 and len(capped.status) == 2


def test_per_type_bounds_from_the_type_relaxation_raise_the_joint_bound(tmp_path):
    """The 120-event connection log (124 events; exact minimum 52,
    docs/synoptic-engine.md): the joint relaxation alone proves 48 (``perfume_lower_bound``
    47); given the per-type bounds of ``type_relaxation_bound`` (48 in all) as ``lows``
    it proves 49, never above the engine's valid 53."""
    log = _conn_log(tmp_path, 120)
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert perfume_cpsat.valid(model, codes, ticks) and model.n_nodes == 53
    assert jointbound.joint_bound(log, codes, ticks, 30.0, seed=1).bound == 48
    _, counts = perfume_cpsat.slots_of(model)
    tb = perfume_cpsat.type_relaxation_bound(log, codes, ticks, counts, 10.0, 1)
    assert tb.bound == 48
    got = jointbound.joint_bound(log, codes, ticks, 30.0, tb.bound, 1, lows=tb.per_type)
    assert got.bound == 49 and got.status == [(48, "INFEASIBLE"), (49, "OPTIMAL")]
