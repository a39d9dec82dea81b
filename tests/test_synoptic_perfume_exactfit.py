"""Perfume's exact neighbourhood move (statemine/infer/synoptic/perfume_infer.exact_repack,
issue 31): the events of ``k`` nodes re-placed into at most ``k - 1 + extra`` nodes of
their own or the other nodes of their types, by branch and bound; checked against a brute
force over every placement on tiny neighbourhoods."""

from __future__ import annotations

import gc
import weakref
from itertools import product

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_synoptic_perfume import traces_strategy, write_log
from test_synoptic_timeconflicts import _codes, _conn_log, assert_valid

from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.perfume_infer import (
    _Dissolved,
    _merge_state,
    _restore,
    _TimedMerges,
    exact_descent,
    exact_repack,
    first_fit_model,
    infer_perfume,
    polish,
)
from statemine.infer.synoptic.timecheck import (
    BoundCheck,
    aggregate_edges,
    intr_broken,
    intr_reach,
    intr_reach_merged,
    timed_graph,
    violations,
)
from statemine.infer.synoptic.timeconflicts import perfume_lower_bound, timed_sides


def _valid(model: PartitionModel, codes, ticks) -> bool:
    g = timed_graph(model.part, model.node_type, model.log, ticks)
    return not violations(g, codes, len(model.log.types), any_only=True).any()


def brute_fits(model: PartitionModel, codes, ticks, nodes: np.ndarray, most: int) -> bool:
    """Is there a valid model with the events of ``nodes`` each placed in another node of
    its type or in one of at most ``most`` new nodes, every other event where it was?
    Every placement tried (new nodes as labels per type, checked whole)."""
    log = model.log
    events = np.nonzero(np.isin(model.part, nodes))[0]
    kept = [q for q in range(2, model.n_nodes) if q not in set(nodes.tolist())]
    n0 = model.n_nodes
    choices = []
    for e in events.tolist():
        t = int(log.codes[e])
        own = [q for q in kept if model.node_type[q] == t]
        choices.append(own + [n0 + 100 * t + j for j in range(most)])
    for pick in product(*choices):
        new = sorted({q for q in pick if q >= n0})
        if len(new) > most:
            continue
        part = model.part.copy()
        part[events] = pick
        node_type = np.concatenate([model.node_type, np.full(100 * len(log.types) + most, -1)])
        node_type[np.asarray(pick)] = log.codes[events]
        if _valid(PartitionModel(log, part, node_type).compact(), codes, ticks):
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.integers(0, 2**16), st.booleans(), st.integers(0, 1))
def test_exact_repack_agrees_with_brute_force(tmp_path_factory, traces, seed, fit, extra):
    """On random tiny logs, from the trace graph (one node per event) or first fit's
    model: for a random group of 2-4 same-type nodes (at most 7 events), ``exact_repack``
    finds a placement into at most ``k - 1 + extra`` nodes exactly when the brute force
    does; its model keeps every invariant (reference checker), has at most
    ``n_nodes - 1 + extra`` nodes and moves only the group's events."""
    log = write_log(tmp_path_factory.mktemp("x"), traces)
    inv, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    if fit:
        model = first_fit_model(log, codes, ticks, sides)
    else:
        node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
        model = PartitionModel(log, np.arange(log.n_events, dtype=np.int64) + 2, node_type)
    rng = np.random.default_rng(seed)
    counts = np.bincount(model.node_type[2:], minlength=len(log.types))
    types = np.nonzero(counts >= 2)[0]
    if not types.size:
        return
    t = int(rng.choice(types))
    same = np.nonzero(model.node_type == t)[0]
    group = rng.choice(same, int(rng.integers(2, min(4, len(same)) + 1)), replace=False)
    if np.isin(model.part, group).sum() > 7:
        return
    rank = np.arange(log.n_events)
    budget = [10**6]
    got = exact_repack(model, codes, ticks, sides, group, rank, budget, extra)
    want = brute_fits(model, codes, ticks, group, len(group) - 1 + extra)
    assert (got is not None) == want
    if got is not None:
        assert_valid(got, log, inv)
        assert got.n_nodes <= model.n_nodes - 1 + extra
        stay = ~np.isin(model.part, group)
        # the other events keep their nodes: same partition of them
        a, b = model.part[stay], got.part[stay]
        assert len(set(zip(a.tolist(), b.tolist()))) == len(set(a.tolist()))


def _exact_repack_of_a_tiny_log(tmp_path):
    """``exact_repack`` on a two-trace log's model of one node per event, moving the
    nodes of its first event's type: a function of the budget (a one-item list)."""
    traces = [[("a", 1), ("b", 2), ("a", 3)], [("a", 2), ("b", 1), ("a", 1)]]
    log = write_log(tmp_path, traces)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    model = PartitionModel(log, np.arange(log.n_events, dtype=np.int64) + 2, node_type)
    group = np.nonzero(model.node_type == model.node_type[2])[0][:3]
    rank = np.arange(log.n_events)
    return lambda budget: exact_repack(model, codes, ticks, sides, group, rank, budget)


def test_exact_repack_stops_when_its_checks_run_out(tmp_path):
    """With no merge checks left the move gives None (deterministic, a count)."""
    assert _exact_repack_of_a_tiny_log(tmp_path)([0]) is None


def test_exact_repack_leaves_nothing_for_the_cyclic_collector(tmp_path, monkeypatch):
    """Once the move returns, its neighbourhood's merge state is freed by reference
    counting alone (the collector off): a search that held itself in a reference cycle
    kept every dead search's arrays until the collector ran (522 MiB on a 10,007-event
    one-trace log)."""
    repack = _exact_repack_of_a_tiny_log(tmp_path)
    made = []
    of = _Dissolved.of

    def watched(*args, **kwargs):
        hood = of(*args, **kwargs)
        made.append(weakref.ref(hood.merges))
        return hood

    monkeypatch.setattr(_Dissolved, "of", watched)
    gc.collect()
    gc.disable()
    try:
        for budget in ([10**6], [1]):  # a search that ends, one that runs out
            repack(budget)
        assert len(made) == 2 and all(ref() is None for ref in made)
    finally:
        gc.enable()


def _per_event_merges(log: EventLog) -> tuple[_TimedMerges, list[tuple[int, int]]]:
    """Merge trials on ``log``'s model of one node per event (the trace graph), and its
    same-type node pairs ``(q, p)``, ``q < p``."""
    _, codes, ticks = _codes(log)
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    model = PartitionModel(log, np.arange(log.n_events, dtype=np.int64) + 2, node_type)
    pairs = [
        (q, p)
        for q in range(2, model.n_nodes)
        for p in range(q + 1, model.n_nodes)
        if node_type[q] == node_type[p]
    ]
    return _TimedMerges(model, codes, ticks), pairs


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_a_doomed_merge_always_fails(tmp_path_factory, traces, seed):
    """``_TimedMerges.doomed`` (a walk into one node continued out of the other passes a
    bound) is never wrong: from the trace graph, with random merges made on the way, every
    same-type pair it calls doomed fails the full merge check, and the merges it lets
    through are decided by that check alone."""
    merges, pairs = _per_event_merges(write_log(tmp_path_factory.mktemp("d"), traces))
    rng = np.random.default_rng(seed)
    for k in rng.permutation(len(pairs)).tolist():
        q, p = pairs[k]
        if merges.group[q] != q or merges.group[p] != p:
            continue
        if merges.doomed(q, p):
            event("doomed")
            state = _merge_state(merges)
            assert not merges.merge(q, p)
            _restore(merges, state)
        elif rng.random() < 0.5:
            merges.merge(q, p)


def _doomed_one_by_one(merges: _TimedMerges, k: int, keep: int, gone: int) -> bool:
    """The former ``_TimedMerges._doomed_pairs`` / ``_doomed_first`` of bound group ``k``
    (statemine before session 25), one pair at a time, kept as the reference
    :meth:`~_TimedMerges.doomed_among` is checked against."""
    fix, onward = merges.bounds.fix, merges.onward
    assert fix is not None and onward is not None
    upper, first, sources, _, _ = merges.bounds.groups[k]
    totals, reach, out = fix.totals[k], fix.reach[k], onward[k]
    own = sources == merges.node_type[keep]
    for a, b in ((keep, gone), (gone, keep)):
        if first:
            assert reach is not None
            if (own & reach[:, a] & (out[:, b] > 0)).any():
                return True
            if ((np.where(own, -np.inf, totals[:, a]) + out[:, b]) > 0).any():
                return True
            continue
        better = np.maximum if upper else np.minimum
        start = np.where(own, 0.0, -np.inf if upper else np.inf)
        total = better(totals[:, a], start) + out[:, b]
        if (total > 0).any() if upper else (total < 0).any():
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_doomed_among_every_candidate_is_the_pairwise_rule(tmp_path_factory, traces, seed):
    """:meth:`_TimedMerges.doomed_among` (every candidate of an event at once) answers for
    each candidate what the former one-pair rule does, from the trace graph with random
    merges made on the way."""
    merges, pairs = _per_event_merges(write_log(tmp_path_factory.mktemp("a"), traces))
    doomed = _check_doomed_among(merges, pairs, np.random.default_rng(seed), 12)
    event("some doomed" if doomed else "none doomed")


def test_doomed_among_on_always_precedes_bounds(tmp_path):
    """The same on the benchmark's 124-event connection log, whose AlwaysPrecedes upper
    bounds give first-``a`` groups (random logs seldom have them)."""
    merges, pairs = _per_event_merges(_conn_log(tmp_path, 120))
    assert any(group[1] for group in merges.bounds.groups)
    assert _check_doomed_among(merges, pairs, np.random.default_rng(5), 60) > 0


def test_doomed_among_in_polishing_trials(tmp_path):
    """The same in polishing's trials on the 124-event connection log: first fit's model
    with 2-4 nodes of one type dissolved (:class:`_Dissolved`), every dissolved event's
    candidates (the kept nodes of its type) checked, then first fit made.  Here merged
    nodes reach further than the trace graph's, and every rule of AlwaysPrecedes'
    first-``a`` groups dooms candidates."""
    log = _conn_log(tmp_path, 120)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    model = first_fit_model(log, codes, ticks, sides)
    assert model is not None
    rng = np.random.default_rng(3)
    doomed = 0
    for _ in range(20):
        t = rng.choice(np.unique(model.node_type[2:]))
        same = np.nonzero(model.node_type == t)[0]
        nodes = rng.permutation(same)[: rng.integers(2, 5)]
        hood = _Dissolved.of(model, codes, ticks, sides, nodes, np.arange(log.n_events))
        merges = hood.merges
        for p in range(model.n_nodes, merges.fine.n):
            keeps = np.asarray(hood.own[int(merges.node_type[p])], dtype=np.int64)
            doomed += _check_doomed_among(merges, [(int(q), p) for q in keeps], rng, 0, [p])
    assert doomed > 0


def test_doomed_among_a_later_a_made_a_first_a(tmp_path):
    """AlwaysPrecedes ``a`` -> ``b`` within 3 (the first trace), and a valid model where
    the second trace's second ``a`` reaches that ``b`` in 102 through a ``c`` node the
    traces share: no first ``a`` starts that walk, until that ``a`` is merged with a first ``a``
    (the rule of the rows of the merged nodes' own type, either way round)."""
    traces = [[("a", 1), ("c", 1), ("b", 2)], [("a", 1), ("a", 1), ("c", 100)]]
    log = write_log(tmp_path, traces)
    _, codes, ticks = _codes(log)
    part = np.array([2, 3, 4, 5, 6, 3], dtype=np.int64)  # the c events share node 3
    node_type = np.r_[-1, -1, log.codes[[0, 1, 2, 3, 4]]].astype(np.int64)
    merges = _TimedMerges(PartitionModel(log, part, node_type), codes, ticks)
    assert not violations(merges.fine, codes, len(log.types)).any()
    first_a, later_a = 2, 6
    assert merges.doomed_among(np.array([first_a]), later_a).tolist() == [True]
    assert merges.doomed_among(np.array([later_a]), first_a).tolist() == [True]
    pairs = [(first_a, later_a), (later_a, first_a), (5, later_a)]
    assert _check_doomed_among(merges, pairs, np.random.default_rng(0), 0, [later_a]) == 2
    assert _check_doomed_among(merges, pairs, np.random.default_rng(0), 0, [first_a]) == 1


def _group_rule(merges: _TimedMerges, k: int, keeps: np.ndarray, gone: int) -> np.ndarray:
    """Bound group ``k``'s rule alone (:meth:`~_TimedMerges._doomed_group`) per keep."""
    out = np.zeros(len(keeps), dtype=bool)
    merges._doomed_group(k, np.asarray(keeps, dtype=np.int64), gone, out)
    return out


def _check_doomed_among(
    merges: _TimedMerges,
    pairs,
    rng: np.random.Generator,
    tries: int,
    nodes: list[int] | None = None,
) -> int:
    """:meth:`~_TimedMerges.doomed_among` against :func:`_doomed_one_by_one` for the
    candidates of ``tries`` random nodes (or of ``nodes``), each followed by a merge that
    holds; the number of doomed candidates met."""
    doomed = 0
    for p in rng.permutation(merges.fine.n)[:tries].tolist() if nodes is None else nodes:
        keeps = np.array([q for q, r in pairs if r == p and merges.group[q] == q], dtype=np.int64)
        if merges.group[p] != p or not len(keeps):
            continue
        got = merges.doomed_among(keeps, p)
        if merges.bounds.fix is None:
            assert not got.any()
            continue
        want = np.zeros(len(keeps), dtype=bool)
        for k in range(len(merges.bounds.groups)):
            one = [_doomed_one_by_one(merges, k, q, p) for q in keeps.tolist()]
            assert _group_rule(merges, k, keeps, p).tolist() == one
            want |= one
        assert got.tolist() == want.tolist()
        doomed += int(want.sum())
        free = keeps[~got]
        if len(free):
            merges.merge(int(free[0]), p)
    return doomed


def test_merges_doomed_on_always_precedes_bounds_fail(tmp_path):
    """The benchmark's 124-event connection log, one node per event: every same-type
    merge that AlwaysPrecedes' first-``a`` upper bounds' rule calls doomed
    fails the full check, and some of them are not seen by the every-pair rule (the
    filter is sound, and not idle)."""
    merges, pairs = _per_event_merges(_conn_log(tmp_path, 120))
    first = [k for k, group in enumerate(merges.bounds.groups) if group[1]]
    assert first, "the log has AlwaysPrecedes upper bounds"
    only_first = 0
    for q, p in pairs:
        if not merges.doomed(q, p) or not any(
            _group_rule(merges, k, np.array([q]), p)[0] for k in first
        ):
            continue
        state = _merge_state(merges)
        assert not merges.merge(q, p), (q, p)
        _restore(merges, state)
        only_first += not any(
            _group_rule(merges, k, np.array([q]), p)[0]
            for k in range(len(merges.bounds.groups))
            if k not in first
        )
    assert only_first > 0


@settings(max_examples=60, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_merge_checks_keep_the_walks_of_a_check_from_scratch(tmp_path_factory, traces, seed):
    """After each merge ``_TimedMerges`` keeps (its checks start from the model before:
    walk totals and first-``a`` reach), its :class:`BoundCheck` state equals one made
    from scratch on the merged model: the same totals and reach per bound group; and
    on every merge tried, IntrBy's walks grown from the model's before equal those
    found from scratch (so a merge breaks IntrBy exactly when it would from scratch)."""
    merges, pairs = _per_event_merges(write_log(tmp_path_factory.mktemp("w"), traces))
    codes = merges.codes
    rng = np.random.default_rng(seed)
    for k in rng.permutation(len(pairs)).tolist():
        q, p = pairs[k]
        if merges.group[q] != q or merges.group[p] != p:
            continue
        f, group = merges.fine, merges.group
        if merges.intr is not None:
            trial = np.where(group == p, q, group)
            g = aggregate_edges(f.n, trial[f.src], trial[f.dst], f.wmin, f.wmax, f.node_type)
            grown = intr_reach_merged(g, codes, merges.intr, q, p)
            assert np.array_equal(grown, intr_reach(g, codes))
            event("IntrBy broken" if intr_broken(g, codes, grown).any() else "IntrBy kept")
        if not merges.merge(q, p):
            continue
        event("merged")
        group = merges.group
        g = aggregate_edges(f.n, group[f.src], group[f.dst], f.wmin, f.wmax, f.node_type)
        fresh, kept = BoundCheck(g, codes, merges.n_types).fix, merges.bounds.fix
        assert fresh is not None and kept is not None
        for a, b in zip(kept.totals + kept.reach, fresh.totals + fresh.reach, strict=True):
            assert (a is None and b is None) or np.array_equal(a, b)
        if merges.intr is not None:
            assert np.array_equal(merges.intr, intr_reach(g, codes))


@settings(max_examples=30, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_the_exact_stage_only_shrinks_the_polished_model(tmp_path_factory, traces, seed):
    """``polish`` with its exact stage gives a valid model (reference checker) with at
    most the nodes of ``polish`` without it (same seed: the search before it is the
    same), and ``exact_descent`` alone never grows a model."""
    log = write_log(tmp_path_factory.mktemp("e"), traces)
    inv, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    start = first_fit_model(log, codes, ticks, sides)
    plain = polish(start, codes, ticks, sides, np.random.default_rng(seed), 200, 0.0)
    exact = polish(start, codes, ticks, sides, np.random.default_rng(seed), 200, 1.0)
    assert_valid(exact, log, inv)
    assert exact.n_nodes <= plain.n_nodes
    rank = np.arange(log.n_events)
    down = exact_descent(start, codes, ticks, sides, np.random.default_rng(seed), 300, rank)
    assert_valid(down, log, inv)
    assert down.n_nodes <= start.n_nodes


def test_fewer_nodes_on_the_601_event_connection_log(tmp_path):
    """The benchmark's 601-event connection log, seed 1: a valid model (reference
    checker) of at most 118 nodes (119 before the merges that must fail on
    AlwaysPrecedes' bounds were skipped, 121 before those on the other bounds were and
    the exact stage added; bound 97, best model known 112)."""
    log = _conn_log(tmp_path, 600)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    assert model.n_nodes <= 118


@pytest.mark.slow
def test_fewer_nodes_on_the_1000_event_connection_log(tmp_path):
    """The benchmark's 1,000-event connection log (one piece), seed 1: a valid model
    (reference checker) of at most 145 nodes (141; 154 before the merges that must fail
    on AlwaysPrecedes' bounds were skipped, 162 before those on the other bounds were;
    bound 105, best model known 128).  About 15 CPU s."""
    log = _conn_log(tmp_path, 1000)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    assert model.n_nodes <= 145


@pytest.mark.slow
def test_fewer_nodes_on_the_2000_event_connection_log(tmp_path):
    """The benchmark's 2,000-event connection log (two runs placed into one model, polished
    after each), seed 1: a valid model (reference checker) of at most 208 nodes (202;
    221 before the merges that must fail on AlwaysPrecedes' bounds were skipped, 227
    polished once at the end, 237 before the folds skipped merges that must fail and
    polishing ended with coarsening; bound 121).  About 20 CPU s."""
    log = _conn_log(tmp_path, 2000)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    assert model.n_nodes <= 208


@pytest.mark.slow
def test_fewer_nodes_on_the_5003_event_connection_log(tmp_path):
    """The benchmark's 5,003-event connection log (five runs in one model, polished after
    each), seed 1: a valid model (reference checker) of at most 282 nodes (275; 301 before
    the merges that must fail on AlwaysPrecedes' bounds were skipped, 341 polished once at
    the end, with each run's events placed by first fit straight into the open
    model, helper "fold18"; 389 when each run's own model was folded in, 404 before that,
    530 before polishing; proved bound 124, ``perfume_lower_bound`` 119).  About 50 CPU s."""
    log = _conn_log(tmp_path, 5000)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    assert perfume_lower_bound(log, codes, ticks) == 119  # 117 from pairwise conflicts
    assert model.n_nodes <= 282
