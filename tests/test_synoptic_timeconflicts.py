"""Perfume's time conflicts (statemine/infer/synoptic/timeconflicts.py): pairs of events
that no model can put in one node, the lower bound on a time-constrained model's nodes
they give, and the piece-by-piece inference of long logs (perfume_infer.infer_pieces)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perfume_exact import exact_minimum
from perfume_reference import read_model_json, rejected, violated_rows
from shared_data import shared
from test_synoptic_perfume import _reference_graph, traces_strategy, write_log

from statemine.infer.synoptic.graphbounds import max_clique
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.options import parse_args
from statemine.infer.synoptic.perfume import mine_constrained
from statemine.infer.synoptic.perfume_infer import (
    FIRST_FIT_EVENTS,
    first_fit_model,
    first_fit_order,
    infer_perfume,
    infer_pieces,
    longest_first,
    pieces,
    short_traces,
    sub_log,
)
from statemine.infer.synoptic.run import read_log
from statemine.infer.synoptic.timecheck import TimedCodes, exact_ticks, timed_graph, violations
from statemine.infer.synoptic.timeconflicts import (
    _clique,
    conflict_degrees,
    cycle_conflicts,
    perfume_lower_bound,
    timed_sides,
    timed_type_bounds,
)


@pytest.mark.parametrize("block", [1, 300, 8 << 20])
def test_conflict_degrees_count_the_pairs_one_by_one(block, monkeypatch):
    """Degrees in row blocks of any size (one row; a few; all at once) against the
    module doc's rule applied to each pair in plain Python."""
    monkeypatch.setattr("statemine.infer.synoptic.timeconflicts.DEGREE_BLOCK_BYTES", block)
    rng = np.random.default_rng(7)
    for n, k in [(1, 1), (9, 3), (40, 12), (5, 0)]:
        pe, se = rng.normal(size=(n, k)), rng.normal(size=(n, k))
        pe[rng.random((n, k)) < 0.3] = -np.inf  # undefined sides never conflict
        limit = rng.normal(size=k) + 1.0
        want = [sum(_conflicts_one_by_one(pe, se, limit, y, x) for y in range(n)) for x in range(n)]
        assert conflict_degrees(pe, se, limit).tolist() == want


def _conflicts_one_by_one(pn, sn, limit, q, x) -> bool:
    """The module doc's rule for nodes ``q`` and ``x`` in plain Python."""
    return any(
        pn[x, b] + sn[q, b] > limit[b] or pn[q, b] + sn[x, b] > limit[b] for b in range(len(limit))
    )


def _side_values(rng, n: int, k: int, layout: str, undefined: float = 0.3):
    """Random side values (a share ``undefined`` of them -inf) in ``layout`` order ("C"
    or "F"); with most undefined, a conflict has about one witness bound."""
    pn, sn = rng.normal(size=(n, k)), rng.normal(size=(n, k))
    pn[rng.random((n, k)) < undefined] = -np.inf
    sn[rng.random((n, k)) < undefined] = -np.inf
    if layout == "F":
        return np.asfortranarray(pn), np.asfortranarray(sn)
    return pn, sn


@pytest.mark.parametrize("whole", [0, 8_192])
def test_without_conflict_keeps_the_rows_one_by_one(whole, monkeypatch):
    """Rows tested on all bounds at once or bounds block by block (4, 8, 16, ...), in
    either memory layout: the rows of no conflict, in the order given, as the rule
    applied to each pair says."""
    from statemine.infer.synoptic.timeconflicts import without_conflict

    monkeypatch.setattr("statemine.infer.synoptic.timeconflicts.WHOLE_TEST_VALUES", whole)
    rng = np.random.default_rng(11)
    cases = [(1, 1, "C", 0.3), (30, 3, "F", 0.3), (60, 40, "F", 0.3), (60, 40, "C", 0.3)]
    cases += [(60, 40, "F", 0.97), (8, 0, "F", 0.3)]
    for n, k, layout, undefined in cases:
        pn, sn = _side_values(rng, n, k, layout, undefined)
        limit = rng.normal(size=k) + 1.5
        for x in range(min(n, 10)):
            rows = rng.permutation(n)[: n // 2 + 1]
            want = [q for q in rows if not _conflicts_one_by_one(pn, sn, limit, q, x)]
            got = without_conflict(pn, sn, rows, limit, pn[x], sn[x])
            assert got.tolist() == want
    # each row conflicts with the last node through one bound alone, bound j for row j
    # (S side for even j, P side for odd): no bound is skipped
    k = 40
    pn = np.full((k + 3, k), -np.inf, order="F")
    sn = np.full((k + 3, k), -np.inf, order="F")
    for j in range(k):
        (pn if j % 2 else sn)[j, j] = 1.0
    pn[-1] = sn[-1] = 1.0
    got = without_conflict(pn, sn, np.arange(k + 2), np.full(k, 1.5), pn[-1], sn[-1])
    assert got.tolist() == [k, k + 1]


@pytest.mark.parametrize("run", [1, 3, 64])
def test_node_runs_keep_the_nodes_one_by_one(run, monkeypatch):
    """:class:`NodeRuns` in runs of 1, 3 or 64 nodes, built node by node or at once,
    renumbered, its nodes' values raised after they were added (merges take maxima):
    the nodes of no conflict in the order added, as the rule applied to each pair says
    (the runs' least values only skip runs that conflict whole)."""
    from statemine.infer.synoptic.timeconflicts import NodeRuns

    monkeypatch.setattr("statemine.infer.synoptic.timeconflicts.RUN_NODES", run)
    monkeypatch.setattr("statemine.infer.synoptic.timeconflicts.WHOLE_TEST_VALUES", 0)
    rng = np.random.default_rng(12)
    for n, k, undefined in [(1, 2, 0.3), (50, 3, 0.3), (200, 12, 0.3), (200, 12, 0.9)]:
        pn, sn = _side_values(rng, n, k, "F", undefined)
        limit = rng.normal(size=k) + 2.0
        if n == 50:  # whole numbers: ties with the limit, which are no conflict
            pn, sn = np.round(pn), np.round(sn)
            limit = np.round(limit)
        ids = rng.permutation(n)[: n - n // 4]
        one = NodeRuns(k)
        for q in ids.tolist():
            one.add(q, pn[q], sn[q])
        whole = NodeRuns.of(ids, pn, sn)
        raised = rng.random((n, k)) < 0.2  # merges after the nodes were added
        pn[raised] += rng.random(int(raised.sum()))
        sn[raised] += rng.random(int(raised.sum()))
        new_id = rng.permutation(n)
        for runs in (one, whole):
            runs.renumber(new_id)
            assert runs.ids.tolist() == new_id[ids].tolist()
        back = np.empty(n, dtype=np.int64)
        back[new_id] = np.arange(n)
        pn2, sn2 = np.asfortranarray(pn[back]), np.asfortranarray(sn[back])  # moved with ids
        for x in range(0, n, max(1, n // 15)):
            want = [int(new_id[q]) for q in ids if not _conflicts_one_by_one(pn, sn, limit, q, x)]
            for runs in (one, whole):
                got = runs.compatible(pn2, sn2, limit, pn[x], sn[x])
                assert got.tolist() == want


def _codes(log: EventLog):
    inv = mine_constrained(log)
    ticks, scale = exact_ticks(log)
    return inv, TimedCodes.from_frame(inv, log.types, scale), ticks


@settings(max_examples=60, deadline=None)
@given(traces_strategy)
def test_a_conflicting_pair_breaks_a_bound_once_merged(tmp_path_factory, traces):
    """Merge two same-type events that conflict (every other event its own node): the
    model breaks some bound, by the engine's checker; so every conflict is real."""
    log = write_log(tmp_path_factory.mktemp("t"), traces)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    if not len(sides.limit):
        return
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    base = np.arange(log.n_events, dtype=np.int64) + 2
    for x in range(log.n_events):
        for y in range(log.n_events):
            if x == y or log.codes[x] != log.codes[y]:
                continue
            if not (sides.p[:, x] + sides.s[:, y] > sides.limit).any():
                continue
            part = base.copy()
            part[y] = part[x]
            model = PartitionModel(log, part, node_type).compact()
            g = timed_graph(model.part, model.node_type, log, ticks)
            assert violations(g, codes, len(log.types)).any(), (x, y)


def assert_valid(model, log, inv):
    """``model`` keeps every mined invariant of ``log`` (``inv``) and accepts each of its
    traces, both checked by the independent reference (:func:`_reference_graph`)."""
    g = _reference_graph(model)
    assert violated_rows(g, inv.to_dict("records")) == []
    traces = [[(t, None) for t in log.trace(k)] for k in range(log.n_traces)]
    assert rejected(g, traces) == []


@settings(max_examples=40, deadline=None)
@given(traces_strategy, st.integers(0, 2**16))
def test_the_time_bound_is_below_every_valid_model(tmp_path_factory, traces, seed):
    """The per-type cliques of conflicting events never exceed the nodes of the engine's
    valid models (checked by the independent reference)."""
    log = write_log(tmp_path_factory.mktemp("b"), traces)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, seed, attempts=1)
    g = _reference_graph(model)
    assert violated_rows(g, inv.to_dict("records")) == []
    sides = timed_sides(log, codes, ticks)
    bound = timed_type_bounds(log, sides, codes, ticks)
    assert (bound >= timed_type_bounds(log, sides)).all()  # cycles only add conflicts
    per_type = np.bincount(model.node_type[model.node_type >= 0], minlength=len(log.types))
    assert (bound <= per_type).all()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_trace_bound_is_the_trace_chain_and_its_clique_cap(tmp_path, seed):
    """A heavy-tailed one-trace log (the benchmark's ``cycles`` kind, 300 events): every
    same-type pair of events conflicts, so each type's bound is its count of events and
    the trace chain (events + 2 nodes) is the smallest valid model, which the engine
    finds; with ``clique_events`` 20 a type's bound is min(count, 20).  The independent
    reference confirms conflicts: the chain with one sampled same-type pair merged breaks
    some mined invariant.  (At 100 events, one of three such logs had a type with a pair
    that does not conflict: 39 of 40.)"""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_perfume import cycles_log

    path = tmp_path / "cycles.log"
    path.write_text(cycles_log(300, np.random.default_rng(seed)))
    log = read_log(parse_args(["-r", "^(?<DTIME>)(?<TYPE>)$", str(path)], "perfume"))
    inv, codes, ticks = _codes(log)
    counts = np.bincount(log.codes, minlength=len(log.types))
    sides = timed_sides(log, codes, ticks)
    assert timed_type_bounds(log, sides, codes, ticks).tolist() == counts.tolist()
    capped = timed_type_bounds(log, sides, codes, ticks, clique_events=20)
    assert capped.tolist() == np.minimum(counts, 20).tolist()
    assert perfume_lower_bound(log, codes, ticks) == log.n_events + 2
    assert infer_perfume(log, codes, ticks, 1).n_nodes == log.n_events + 2
    rng = np.random.default_rng(seed)
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    for _ in range(3):  # the reference takes about 8 s per model of 300 nodes
        x, y = rng.choice(
            np.nonzero(log.codes == log.codes[rng.integers(log.n_events)])[0], 2, replace=False
        )
        part = np.arange(log.n_events, dtype=np.int64) + 2
        part[y] = part[x]
        g = _reference_graph(PartitionModel(log, part, node_type).compact())
        assert violated_rows(g, inv.to_dict("records")), (x, y)


PERFUME_CASES = {"perfume-repo-radius-auth": 8, "perfume-hand-split-latency": 15}


@pytest.mark.parametrize(("case", "nodes"), PERFUME_CASES.items())
def test_time_bound_on_the_oracle_cases(case, nodes, monkeypatch):
    """The bound (with INITIAL and TERMINAL) is at most the real Perfume's valid model
    and equals statemine's: 8 and 15 nodes, so those models are the smallest possible."""
    folder = shared("synoptic-oracle", case)
    monkeypatch.chdir(folder)
    args = json.loads((folder / "case.json").read_text())["args"]
    log = read_log(parse_args(args, "perfume"))
    inv, codes, ticks = _codes(log)
    bound = int(timed_type_bounds(log, timed_sides(log, codes, ticks)).sum()) + 2
    g, traces = read_model_json(folder / "model.json")
    assert violated_rows(g, inv.to_dict("records")) == [] and rejected(g, traces) == []
    assert bound <= len(g)
    assert perfume_lower_bound(log, codes, ticks) == bound  # with cycles: the same
    assert bound == nodes == infer_perfume(log, codes, ticks, 1).n_nodes


def test_pieces_and_sub_logs_cover_the_log():
    log = EventLog.from_sequences([["a"] * n for n in (3, 1, 4, 1, 5, 9, 2, 6)])
    runs = pieces(log, 5)
    assert runs == [(0, 3), (3, 5), (5, 6), (6, 8)]
    assert [sub_log(log, a, b).n_events for a, b in runs] == [8, 6, 9, 8]
    assert sub_log(log, 3, 5).trace(1) == ["a"] * 5
    assert pieces(log, 100) == [(0, 8)]
    assert pieces(log, 8) == [(0, 3), (3, 6), (6, 8)]
    assert pieces(log, 20) == [(0, 8)]  # the rest (11 events) is below half of 20: joined


def _conn_log(tmp_path: Path, n: int) -> EventLog:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_perfume import CONN_MAPPING, CONN_REGEX, interleaved_log

    path = tmp_path / "conn.log"
    path.write_text(interleaved_log(n, np.random.default_rng(n)))
    return read_log(parse_args(["-r", CONN_REGEX, "-m", CONN_MAPPING, str(path)], "perfume"))


def _state_log(tmp_path: Path, n: int) -> EventLog:
    """The benchmark's state log of about ``n`` events (median trace 16-19 events: not
    short-trace), read as ``bench_perfume`` reads it."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_synoptic import REGEX, SEPARATOR, state_log
    from bench_synoptic import write_log as write_states

    path = tmp_path / "states.log"
    write_states(state_log(n, np.random.default_rng(n)), path, np.random.default_rng(0))
    return read_log(parse_args(["-r", REGEX, "-s", SEPARATOR, str(path)], "perfume"))


def test_piece_by_piece_model_of_interleaved_connections(tmp_path):
    """A 900-event log of interleaved connections, every delay distinct: the model (one
    piece of at most ``FIRST_FIT_EVENTS`` events) and the model made in pieces of 300
    events (folds) accept every trace, keep every constrained invariant (reference
    checker), are deterministic for a seed, and have fewer than a third of a node per
    event (the trace-chain fallback they replace: about 0.7)."""
    log = _conn_log(tmp_path, 900)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 3)
    assert np.array_equal(model.part, infer_pieces(log, codes, ticks, 3).part)
    small = infer_pieces(log, codes, ticks, 3, 300)
    assert len(pieces(log, 300)) == 3
    assert np.array_equal(small.part, infer_pieces(log, codes, ticks, 3, 300).part)
    bound = perfume_lower_bound(log, codes, ticks)
    for m in (model, small):
        assert_valid(m, log, inv)
        assert bound <= m.n_nodes < log.n_events / 3


def test_a_known_conflict(tmp_path):
    """``a x b`` twice, x early in one trace and late in the other: a to b takes 11, but
    one x node would let a walk take a's slow way to x (10) then x's slow way on (10)."""
    log = write_log(
        tmp_path, [[("a", "0"), ("x", "1"), ("b", "10")], [("a", "0"), ("x", "10"), ("b", "1")]]
    )
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    x1, x2 = 1, 4
    assert (sides.p[:, x2] + sides.s[:, x1] > sides.limit).any()
    assert timed_type_bounds(log, sides).tolist() == [1, 2, 1]
    assert infer_perfume(log, codes, ticks, 0).n_nodes == 6


@settings(max_examples=60, deadline=None)
@given(traces_strategy)
def test_a_cycle_conflicting_pair_breaks_a_bound_once_merged(tmp_path_factory, traces):
    """Merge two events of one trace that :func:`cycle_conflicts` pairs (every other
    event its own node): the engine's checker finds a broken bound."""
    log = write_log(tmp_path_factory.mktemp("c"), traces)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    base = np.arange(log.n_events, dtype=np.int64) + 2
    for t in range(len(log.types)):
        ev = np.nonzero(log.codes == t)[0]
        pairs = np.argwhere(np.triu(cycle_conflicts(log, codes, sides, ev, ticks)))
        for i, j in pairs.tolist():
            part = base.copy()
            part[ev[j]] = part[ev[i]]
            model = PartitionModel(log, part, node_type).compact()
            g = timed_graph(model.part, model.node_type, log, ticks)
            assert violations(g, codes, len(log.types)).any(), (ev[i], ev[j])


def test_a_cycle_conflict_raises_the_bound_to_the_minimum(tmp_path):
    """``c b b b`` and ``b c c b``: the three ``b`` of the first trace need three nodes
    (one node for two of them is a cycle of positive time on a walk from ``c`` to ``b``,
    whose upper bound then fails); the fourth ``b`` conflicts with them in time.  The
    bound is then the exact minimum (8, by exhaustive search); time conflicts alone
    give 7."""
    log = write_log(
        tmp_path,
        [
            [("c", "3"), ("b", "15"), ("b", "4"), ("b", "1")],
            [("b", "6"), ("c", "5"), ("c", "17"), ("b", "11")],
        ],
    )
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    b = log.types.index("b")
    assert timed_type_bounds(log, sides)[b] == 3
    assert timed_type_bounds(log, sides, codes, ticks)[b] == 4
    ev = np.nonzero(log.codes == b)[0]
    first_trace = log.trace_of[ev] == 0
    conflicts = cycle_conflicts(log, codes, sides, ev, ticks)
    assert conflicts[np.ix_(first_trace, first_trace)].sum() == 6  # 3 pairs, both ways
    assert not conflicts[~first_trace].any()
    model = infer_perfume(log, codes, ticks, 0)
    assert exact_minimum(log, codes, ticks, model.n_nodes) == (8, True)
    assert perfume_lower_bound(log, codes, ticks) == 8 == model.n_nodes


def _partitions(items: list[int]):
    """Every set partition of ``items`` (lists of blocks)."""
    if not items:
        yield []
        return
    head, rest = items[0], items[1:]
    for blocks in _partitions(rest):
        for i in range(len(blocks)):
            yield [*blocks[:i], [head, *blocks[i]], *blocks[i + 1 :]]
        yield [[head], *blocks]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["1", "2", "5"])),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=2,
    )
)
def test_exact_minimum_is_the_brute_force_minimum(tmp_path_factory, traces):
    """tests/perfume_exact.py's pruned search against every partition of the events of
    each type, checked one by one: the same fewest nodes; never below the bound."""
    log = write_log(tmp_path_factory.mktemp("x"), traces)
    _, codes, ticks = _codes(log)
    per_type = [np.nonzero(log.codes == t)[0].tolist() for t in range(len(log.types))]
    node_type = np.concatenate([[-1, -1], log.codes]).astype(np.int64)
    best = log.n_events + 2
    import itertools

    for combo in itertools.product(*[list(_partitions(ev)) for ev in per_type]):
        part = np.zeros(log.n_events, dtype=np.int64)
        nid = 2
        for blocks in combo:
            for block in blocks:
                part[block] = nid
                nid += 1
        if nid >= best:
            continue
        types = np.full(nid, -1, dtype=np.int64)
        types[part] = log.codes
        g = timed_graph(part, types, log, ticks)
        if not violations(g, codes, len(log.types)).any():
            best = nid
    assert node_type.size  # the trace graph (one node per event) is always valid
    got, proven = exact_minimum(log, codes, ticks, log.n_events + 2)
    assert proven and got == best
    assert perfume_lower_bound(log, codes, ticks) <= best


@pytest.mark.parametrize("gen", [0, 1, 2, 3])
def test_engine_and_bound_against_the_exact_minimum(tmp_path, gen):
    """Small logs of the interleaved-connection shape (20-24 events): bound <= exact
    minimum <= engine's model (seed 1); measured, all three equal on these four."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_perfume import CONN_MAPPING, CONN_REGEX, interleaved_log

    path = tmp_path / "conn.log"
    path.write_text(interleaved_log(20, np.random.default_rng(20_000 + gen)))
    log = read_log(parse_args(["-r", CONN_REGEX, "-m", CONN_MAPPING, str(path)], "perfume"))
    _, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    exact, proven = exact_minimum(log, codes, ticks, model.n_nodes + 1, budget_s=30)
    assert proven
    assert perfume_lower_bound(log, codes, ticks) <= exact <= model.n_nodes
    assert model.n_nodes == exact


def test_first_fit_pieces_on_a_600_event_connection_log(tmp_path):
    """The benchmark's 601-event connection log: each piece's model by first fit in the
    order of :func:`first_fit_order` (longest traces first) gives a valid model
    (reference checker) of 134 nodes, the same for every seed (first fit in the order of
    the time since the connection's start alone: 155; the colouring attempts 167-185
    over seeds 1-5); polished (:func:`~.perfume_infer.polish`, with what is left of the
    piece's work budget, :func:`~.perfume_infer.polish_share`), the engine's model has at
    most 122 (measured 121; main before: 124); the bound is 86 (pairwise conflicts:
    85)."""
    log = _conn_log(tmp_path, 600)
    inv, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    whole = first_fit_model(log, codes, ticks, sides)
    assert np.array_equal(whole.part, first_fit_model(log, codes, ticks, sides).part)
    model = infer_perfume(log, codes, ticks, 1)
    for m in (whole, model):
        assert_valid(m, log, inv)
    assert perfume_lower_bound(log, codes, ticks) == 86  # 85 from pairwise conflicts
    assert whole.n_nodes == 134
    assert model.n_nodes <= 122


def test_first_fit_order_takes_the_longest_traces_first(tmp_path):
    """Events by their trace's length (longest first), then position in the trace, then
    time since the trace's start, then log order; worked out by hand on four traces."""
    traces = [
        [("A", "1"), ("B", "5")],  # events 0-1, length 2
        [("A", "1"), ("B", "2"), ("C", "3")],  # events 2-4, length 3
        [("A", "2"), ("C", "1"), ("B", "1")],  # events 5-7, length 3
        [("A", "1"), ("B", "1")],  # events 8-9, length 2
    ]
    log = write_log(tmp_path, traces)
    ticks, _ = exact_ticks(log)
    # length 3: position 0 (elapsed 0, 0: log order 2, 5), position 1 (elapsed 2 at
    # event 3, 1 at event 6: 6 first), position 2 (5 at event 4, 2 at event 7); then
    # length 2: position 0 (0, 8), position 1 (elapsed 5 at 1, 1 at 9)
    assert first_fit_order(log, ticks).tolist() == [2, 5, 6, 3, 7, 4, 0, 8, 9, 1]


def test_longest_first_reorders_whole_traces(tmp_path):
    """:func:`longest_first`: the traces longest first (ties: log order), each whole and
    in its own order, with every event's index in the original log; the four traces of
    lengths 2, 3, 3, 2 above become 3, 3, 2, 2; the median length (2.5) makes it a
    short-trace log."""
    traces = [
        [("A", "1"), ("B", "5")],
        [("A", "1"), ("B", "2"), ("C", "3")],
        [("A", "2"), ("C", "1"), ("B", "1")],
        [("A", "1"), ("B", "1")],
    ]
    log = write_log(tmp_path, traces)
    moved, idx = longest_first(log)
    assert idx.tolist() == [2, 3, 4, 5, 6, 7, 0, 1, 8, 9]
    assert moved.starts.tolist() == [0, 3, 6, 8, 10]
    assert np.array_equal(moved.codes, log.codes[idx])
    assert np.array_equal(moved.times, log.times[idx])
    assert moved.time_texts() == [log.time_texts()[i] for i in idx]
    assert short_traces(log)


def test_long_trace_logs_keep_the_elapsed_order(tmp_path):
    """A state log (median trace 16 events) is no short-trace log: first fit keeps the
    order of the time since the trace's start (by length it gave 354 nodes instead of
    335 on the benchmark's 622-event state log), and its pieces are not reordered; the
    benchmark's connection log (median 7 events) is a short-trace log."""
    from statemine.infer.synoptic.perfume_infer import elapsed_ticks

    log = _state_log(tmp_path, 300)
    _, codes, ticks = _codes(log)
    assert not short_traces(log)
    assert np.array_equal(
        first_fit_order(log, ticks, False), np.argsort(elapsed_ticks(log, ticks), kind="stable")
    )
    sides = timed_sides(log, codes, ticks)
    assert np.array_equal(
        first_fit_model(log, codes, ticks, sides).part,
        first_fit_model(log, codes, ticks, sides, False).part,
    )
    assert short_traces(_conn_log(tmp_path, 600))


def test_first_fit_on_a_1000_event_connection_log(tmp_path):
    """The benchmark's 1,000-event connection log (one piece): a valid model (reference
    checker) of at most 163 nodes (measured 162, polished; main before: 165; first fit
    alone: 172; first fit ordered by the time since the connection's start alone: 204);
    the bound is 99 (pairwise conflicts: 95)."""
    log = _conn_log(tmp_path, 1000)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert_valid(model, log, inv)
    assert perfume_lower_bound(log, codes, ticks) == 99  # 95 from pairwise conflicts
    assert model.n_nodes <= 163


def test_pieces_of_1000_events_on_a_2000_event_connection_log(tmp_path):
    """The benchmark's 2,000-event connection log: two pieces of ``FIRST_FIT_EVENTS`` =
    1,000 events (traces longest first, :func:`longest_first`), the second folded into
    the first, then polished, give a valid model (reference checker) of at most 278 nodes
    (measured 275, main before 284; unpolished: 295; traces in log order: 313; first fit ordered by the
    time since the connection's start alone: 358; pieces of 400 events: 388); the bound
    is 113 (pairwise conflicts 111; 110 with the greedy clique)."""
    log = _conn_log(tmp_path, 2000)
    inv, codes, ticks = _codes(log)
    model = infer_perfume(log, codes, ticks, 1)
    assert len(pieces(log, FIRST_FIT_EVENTS)) == 2
    assert_valid(model, log, inv)
    assert perfume_lower_bound(log, codes, ticks) == 113
    assert model.n_nodes <= 278


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 9).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 2)),
                min_size=1,
                max_size=20,
            ),
            st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=1, max_size=3),
        )
    )
)
def test_positive_cycle_nodes_match_networkx(case):
    """:func:`~.timecheck.positive_cycle_nodes` (one strongly connected components pass
    when the whole graph has no positive cycle) equals, per blocked row, networkx's
    components of the graph without the blocked nodes' outgoing edges that hold an edge
    of positive largest delta."""
    import networkx as nx

    from statemine.infer.synoptic.timecheck import aggregate_edges, positive_cycle_nodes

    n, edges, blocked_rows = case
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([float(e[2]) for e in edges])
    g = aggregate_edges(n, src, dst, w, w, np.zeros(n, dtype=np.int64))
    blocked = np.array(blocked_rows, dtype=bool)
    got = positive_cycle_nodes(g, blocked)
    for r, mask in enumerate(blocked):
        graph = nx.DiGraph()
        graph.add_nodes_from(range(n))
        kept = [(int(u), int(v), float(x)) for u, v, x in zip(g.src, g.dst, g.wmax) if not mask[u]]
        graph.add_weighted_edges_from(kept)
        want = np.zeros(n, dtype=bool)
        for comp in nx.strongly_connected_components(graph):
            if any(u in comp and v in comp and x > 0 for u, v, x in kept):
                want[list(comp)] = True
        assert np.array_equal(got[r], want)
    assert np.array_equal(
        positive_cycle_nodes(g)[0], positive_cycle_nodes(g, blocked[:1] & False)[0]
    )


def test_dense_logs_go_on_in_smaller_pieces(tmp_path, monkeypatch):
    """A state log of about 1,900 events, every delay distinct: the first piece (about
    ``FIRST_FIT_EVENTS`` events) has more than ``FOLD_NODES`` nodes by first fit, so the
    rest goes in pieces of about ``PIECE_EVENTS`` events (first fit's cost per event grows
    with the piece), not one piece of the remaining ~900; the model stays valid."""
    import statemine.infer.synoptic.perfume_infer as perfume_infer

    log = _state_log(tmp_path, 1900)
    inv, codes, ticks = _codes(log)
    sizes: list[tuple[int, int]] = []
    real = perfume_infer.first_fit_model

    def recording(sub, *args, **kwargs):
        model = real(sub, *args, **kwargs)
        start = kwargs.get("start")  # a run placed into the open model: its own events
        sizes.append((sub.n_events - (0 if start is None else start.log.n_events), model.n_nodes))
        return model

    monkeypatch.setattr(perfume_infer, "first_fit_model", recording)
    model = infer_pieces(log, codes, ticks, 1)
    assert sizes[0][0] >= perfume_infer.FIRST_FIT_EVENTS
    assert sizes[0][1] > perfume_infer.FOLD_NODES
    assert len(sizes) >= 3
    assert all(n < 1.5 * perfume_infer.PIECE_EVENTS for n, _ in sizes[1:])
    assert sum(n for n, _ in sizes) == log.n_events
    g = _reference_graph(model)
    assert violated_rows(g, inv.to_dict("records")) == []


def test_exact_cliques_raise_the_bound_on_a_2000_event_connection_log(tmp_path):
    """The benchmark's 2,000-event connection log: the greedy clique of
    ApplicationLimited's conflict graph (time and cycles; main's ``_clique``) has 16 events, the largest
    (networkx enumerates every maximal clique) 17, and the colouring search proves 17
    nodes are needed; the pairwise part of the bound rises from 110 (greedy cliques) to
    111, and the levels (levelbound.py) add 2."""
    import networkx as nx

    log = _conn_log(tmp_path, 2000)
    _, codes, ticks = _codes(log)
    sides = timed_sides(log, codes, ticks)
    t = log.types.index("ApplicationLimited")
    ev = np.nonzero(log.codes == t)[0]
    adj = np.zeros((ev.size, ev.size), dtype=bool)
    for k in range(len(sides.limit)):
        c = sides.p[k, ev][:, None] + sides.s[k, ev][None, :] > sides.limit[k]
        adj |= c | c.T
    adj |= cycle_conflicts(log, codes, sides, ev, ticks)
    np.fill_diagonal(adj, False)
    largest = max(len(c) for c in nx.find_cliques(nx.from_numpy_array(adj)))
    assert _clique(adj) == 16 and largest == 17 == max_clique(adj)[0]
    per_type = timed_type_bounds(log, sides, codes, ticks)
    assert per_type[t] == 17
    assert int(per_type.sum()) + 2 == 111
    assert perfume_lower_bound(log, codes, ticks) == 113


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2", "4", "7"])),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    ),
    st.booleans(),
)
def test_the_bound_is_at_most_the_exact_minimum(tmp_path_factory, traces, source):
    """On random tiny logs (three types, up to 12 events; with ``source``, each trace
    starts with an ``s`` found nowhere else, so the levels of levelbound.py apply) the
    bound never passes the fewest nodes of any valid model (tests/perfume_exact.py,
    proven)."""
    if source:
        traces = [[("s", "0"), *trace] for trace in traces]
    log = write_log(tmp_path_factory.mktemp("m"), traces)
    _, codes, ticks = _codes(log)
    exact, proven = exact_minimum(log, codes, ticks, log.n_events + 3, budget_s=20)
    if proven:
        assert perfume_lower_bound(log, codes, ticks) <= exact
