"""CP-SAT told what the boxes know (statemine/infer/synoptic/boxcuts.py, issue 31): no cut
loses a valid model -- every valid model, renumbered, satisfies the target's CP-SAT model
-- and the deepening's interval always holds the exact minimum of tests/perfume_exact.py."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum, shaped, tiny_logs
from test_synoptic_levelbound import _small_conn_log
from test_synoptic_perfume import write_log
from test_synoptic_timeconflicts import _codes

from statemine.infer.synoptic import boxcuts, perfume_cpsat
from statemine.infer.synoptic.boxbound import box_bound
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.perfume_infer import infer_perfume

pytest.importorskip("ortools", reason="the exact stage needs OR-Tools (statemine[exact])")


def renumbered(model: PartitionModel, anchors: dict[int, list[int]]) -> np.ndarray:
    """Per event its slot in ``model`` renumbered as the cuts assume: an anchor's node
    takes the anchor's slot, every other node of the type the next slot at its first
    event.  AssertionError when two anchors share a node (the cut would be unsound)."""
    log = model.log
    slot = np.full(log.n_events, -1, dtype=np.int64)
    for t in np.unique(log.codes).tolist():
        ev = np.nonzero(log.codes == t)[0]
        own = anchors.get(t, [])
        of: dict[int, int] = {}
        for i, e in enumerate(own):
            p = int(model.part[e])
            assert p not in of, "two anchors in one node"
            of[p] = i
        nxt = len(own)
        for e in ev.tolist():
            p = int(model.part[e])
            if p not in of:
                of[p] = nxt
                nxt += 1
            slot[e] = of[p]
    return slot


def keeps(log, codes, ticks, model: PartitionModel, per_type: np.ndarray) -> bool:
    """True when ``model`` (renumbered, its slots fixed by equalities) satisfies both
    CP-SAT models with every cut that should keep it: the target ``model.n_nodes``
    (at most that many nodes) and the case of its own nodes per type, which
    :func:`boxcuts.survivors` must not have refuted."""
    present = np.bincount(log.codes, minlength=len(log.types)) > 0
    counts = np.bincount(model.node_type[2:], minlength=len(log.types))
    own = {t: int(counts[t]) for t in np.nonzero(present)[0].tolist()}
    assert (per_type <= counts)[present].all()
    cases = boxcuts.survivors(log, codes, ticks, per_type, model.n_nodes, max_cases=5_000)
    assert cases is None or any(all(v[t] >= own[t] for t in own) for v in cases)
    return all(
        _satisfied(model, got)
        for got in (
            boxcuts.target_model(log, codes, ticks, per_type, model.n_nodes),
            boxcuts.case_model(log, codes, ticks, own, model.n_nodes, per_type),
            boxcuts.case_model(
                log, codes, ticks, dict(list(own.items())[:2]), model.n_nodes, per_type
            ),
        )
    )


def _satisfied(model: PartitionModel, got) -> bool:
    """``model`` renumbered satisfies the builder of ``got`` (None: refuted, False)."""
    if got is None:
        return False
    b, cuts = got
    slot = renumbered(model, cuts.anchors)
    for e, s in enumerate(b.slot):
        b.mdl.add(s == int(slot[e]))
    run = perfume_cpsat._run(perfume_cpsat.cp_model(), b, 30.0, 0)
    assert run is not None
    return run[0] in ("OPTIMAL", "FEASIBLE")


@settings(max_examples=30, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]))
def test_cuts_keep_every_minimum_model(tmp_path_factory, traces, shape):
    """Random tiny logs in three shapes: CP-SAT's minimum model (no cuts) and the engine's
    model, renumbered, satisfy their own targets' models with every cut; the settled
    interval holds the exact minimum, and a model found is valid with at most the
    engine's nodes."""
    log = write_log(tmp_path_factory.mktemp("c"), shaped(traces, shape))
    _, codes, ticks = _codes(log)
    engine = infer_perfume(log, codes, ticks, 1)
    per = box_bound(log, codes, ticks).per_type
    assert keeps(log, codes, ticks, engine, per)
    caps = np.bincount(log.codes, minlength=len(log.types))
    best = perfume_cpsat.solve(log, codes, ticks, caps, 30.0)
    assert best.status == "OPTIMAL" and best.model is not None
    assert keeps(log, codes, ticks, best.model, per)
    got = boxcuts.settle(log, codes, ticks, engine.n_nodes, 30.0)
    exact, proven = exact_minimum(log, codes, ticks, engine.n_nodes + 1, budget_s=10)
    assert got.low <= best.nodes <= got.high <= engine.n_nodes
    if proven:
        assert got.low <= exact <= got.high
    if got.model is not None:
        assert perfume_cpsat.valid(got.model, codes, ticks)
        assert got.low == got.high == got.model.n_nodes == best.nodes


@settings(max_examples=12, deadline=None)
@given(st.integers(8, 40), st.integers(0, 10**6), st.integers(0, 2**16))
def test_settled_interval_holds_the_uncut_optimum_on_connection_logs(
    tmp_path_factory, n, seed, engine_seed
):
    """Random connection logs of 8-41 events: the settled interval (split and whole, up
    to one above the engine's model; by the tree of partial cases, each node above the
    last level given too little time to answer, so the tree splits) holds CP-SAT's optimum of the formulation without
    any cut (caps: every event a node of its own) whenever that is OPTIMAL, a settled
    minimum comes with a valid model of the optimum's size (the cuts keep a smallest
    model), and the engine's valid model (seeded) keeps its targets' cuts."""
    log = _small_conn_log(tmp_path_factory.mktemp("s"), n, seed)
    _, codes, ticks = _codes(log)
    engine = infer_perfume(log, codes, ticks, engine_seed)
    assert keeps(log, codes, ticks, engine, box_bound(log, codes, ticks).per_type)
    caps = np.bincount(log.codes, minlength=len(log.types))
    plain = perfume_cpsat.solve(log, codes, ticks, caps, 20.0)
    for split, tree in ((True, False), (False, False), (True, True)):
        # one above the engine's: when the engine is at the minimum, CP-SAT must find it
        got = boxcuts.settle(
            log, codes, ticks, engine.n_nodes + 1, 20.0, split=split, tree=tree, node_budget=0.05
        )
        assert got.low <= got.high <= engine.n_nodes + 1
        if plain.status == "OPTIMAL":
            assert got.low <= plain.nodes
            if got.low == got.high:
                assert got.model is not None and got.model.n_nodes == plain.nodes
        if got.model is not None:
            assert perfume_cpsat.valid(got.model, codes, ticks)


def _answer(got) -> str:
    """A case's verdict: "CUTS" (refuted without CP-SAT), else CP-SAT's status solved to
    the end (one worker, 30 deterministic s), a model found checked against its counts."""
    if got is None:
        return "CUTS"
    b, _ = got
    run = perfume_cpsat._run(perfume_cpsat.cp_model(), b, 30.0, 0)
    assert run is not None
    name = run[0]
    return "FEASIBLE" if name in ("OPTIMAL", "FEASIBLE") else name


def same_verdicts(log, codes, ticks, target: int, limit: int = 24) -> list[str]:
    """Every budget vector of ``target`` (:func:`boxcuts.maximal_vectors`, the first
    ``limit``, and each with its first type only, a partial case) asked both ways: the
    case built alone (:func:`boxcuts.case_model`) and on one base model per target
    (:func:`boxcuts.case_on_base`, the settle path): the same verdict, and a model the
    cheap case finds has exactly the case's counts.  Returns the verdicts."""
    per = box_bound(log, codes, ticks).per_type
    present = np.bincount(log.codes, minlength=len(log.types)) > 0
    types = np.nonzero(present)[0].tolist()
    full = list(itertools.islice(boxcuts.maximal_vectors(per, types, target), limit))
    cases = full + [dict(list(v.items())[:1]) for v in full[:4]]
    base = boxcuts._base_for(log, codes, ticks, cases, target, per)
    out = []
    for v in cases:
        old = _answer(boxcuts.case_model(log, codes, ticks, v, target, per))
        got = boxcuts.case_on_base(base, log, codes, ticks, v, target, per)
        assert old == _answer(got), (v, target)
        if got is not None and old == "FEASIBLE":
            b, _ = got
            run = perfume_cpsat._run(perfume_cpsat.cp_model(), b, 30.0, 0)
            assert run is not None and run[1] is not None  # FEASIBLE: CP-SAT's values
            model = perfume_cpsat._model_of(b, run[1])
            counts = np.bincount(model.node_type[2:], minlength=len(log.types))
            assert all(counts[t] == m for t, m in v.items())
            assert counts.sum() + 2 == target
        out.append(old)
    return out


@settings(max_examples=25, deadline=None)
@given(tiny_logs, st.sampled_from(["none", "source", "loop"]))
def test_cheap_cases_answer_as_the_cases_built_alone(tmp_path_factory, traces, shape):
    """Random tiny logs: at the exact minimum and one above, every case asked on one
    base model per target gets the verdict of the case built alone."""
    log = write_log(tmp_path_factory.mktemp("q"), shaped(traces, shape))
    _, codes, ticks = _codes(log)
    caps = np.bincount(log.codes, minlength=len(log.types))
    best = perfume_cpsat.solve(log, codes, ticks, caps, 30.0)
    assert best.status == "OPTIMAL"
    for target in (best.nodes, best.nodes + 1):
        same_verdicts(log, codes, ticks, target)


def test_cheap_cases_tell_cases_apart(tmp_path):
    """A 27-event connection log (minimum 24): at 25 nodes some cases have a model and
    others have none, and each cheap case answers as the case built alone -- so the
    cheap path cannot ignore a case's counts or caps (its base model allows them all)."""
    log = _small_conn_log(tmp_path, 20, 22_003)
    _, codes, ticks = _codes(log)
    verdicts = same_verdicts(log, codes, ticks, 25, limit=40)
    assert "FEASIBLE" in verdicts and {"INFEASIBLE", "CUTS"} & set(verdicts)


@settings(max_examples=15, deadline=None)
@given(st.integers(8, 40), st.integers(0, 10**6), st.integers(0, 3))
def test_tree_reaches_every_case(tmp_path_factory, n, seed, above):
    """Random connection logs: when no node above the last level answers, the tree's
    leaves are exactly :func:`boxcuts.survivors`' cases (each once), so closing them all
    refutes what the list of cases refutes; a node closed above the last level closes
    no leaf outside its counts."""
    log = _small_conn_log(tmp_path_factory.mktemp("t"), n, seed)
    _, codes, ticks = _codes(log)
    per = box_bound(log, codes, ticks).per_type
    target = int(np.maximum(per, 0).sum()) + 2 + above
    state = boxcuts.box_state(log, codes, ticks)
    cases = boxcuts.survivors(log, codes, ticks, per, target, max_cases=10**6)
    assert cases is not None
    leaves: list[dict[int, int]] = []

    def ask(counts: dict[int, int], last: bool) -> str:
        if last:
            leaves.append(counts)
            return "INFEASIBLE"
        return "UNKNOWN"

    answers, done = boxcuts.tree_target(state, per, target, ask)
    assert done and answers.get("INFEASIBLE", 0) == len(leaves)
    key = sorted(tuple(sorted(v.items())) for v in leaves)
    assert key == sorted(tuple(sorted(v.items())) for v in cases)
    if not cases:
        return
    first = min(cases[0])  # close the branch of the first case's first count

    def closing(counts: dict[int, int], last: bool) -> str:
        if len(counts) == 1 and counts[first] == cases[0][first]:
            return "INFEASIBLE"
        if last:
            assert counts[first] != cases[0][first]
            return "INFEASIBLE"
        return "UNKNOWN"

    boxcuts.tree_target(state, per, target, closing)
