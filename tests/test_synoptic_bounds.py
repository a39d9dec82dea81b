"""The lower bound on model size (statemine.infer.synoptic.bounds): never above the
smallest model found by enumerating every partition of a tiny log, never above the real
Synoptic's node count on the oracle cases, and reached by the engine on generated event
logs where it is proven optimal."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_data import shared

from statemine.infer.synoptic import infer_log
from statemine.infer.synoptic.bounds import (
    colour_classes,
    invariant_sides,
    node_lower_bound,
    type_lower_bounds,
)
from statemine.infer.synoptic.check import InvariantCodes, check_model, violated
from statemine.infer.synoptic.invariants import mine, mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel


def codes_of(log: EventLog, inv) -> InvariantCodes:
    return InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})


def set_partitions(items: list[int]):
    """Every partition of ``items`` into blocks (lists)."""
    if not items:
        yield []
        return
    head, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for k in range(len(part)):
            yield [*part[:k], [head, *part[k]], *part[k + 1 :]]
        yield [[head], *part]


def smallest_model(log: EventLog, codes: InvariantCodes) -> int:
    """Fewest nodes of any partition of the events into single-type nodes on which every
    invariant holds (every such model accepts its traces), by enumeration."""
    per_type = [
        list(set_partitions(np.nonzero(log.codes == t)[0].tolist())) for t in range(len(log.types))
    ]
    best = None
    for choice in itertools.product(*per_type):
        blocks = [b for part in choice for b in part]
        if best is not None and len(blocks) + 2 >= best:
            continue
        part = np.empty(log.n_events, dtype=np.int64)
        node_type = np.full(len(blocks) + 2, -1, dtype=np.int64)
        for k, b in enumerate(blocks):
            part[b] = k + 2
            node_type[k + 2] = log.codes[b[0]]
        model = PartitionModel(log, part, node_type)
        adj = model.edge_counts() > 0
        if not violated(adj, node_type, codes, len(log.types), trim=False).any():
            best = len(blocks) + 2
    assert best is not None  # the trace graph itself satisfies every mined invariant
    return best


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4), min_size=1, max_size=3))
def test_bound_never_exceeds_the_smallest_model(traces):
    """Enumerating every model of a tiny log: none has fewer nodes than the bound, and
    the engine's model has at least as many."""
    log = EventLog.from_sequences(traces)
    if log.n_events > 6:
        return
    codes = codes_of(log, mine_invariants(log))
    bound = node_lower_bound(log, codes)
    smallest = smallest_model(log, codes)
    assert bound <= smallest
    assert smallest <= infer_log(log).model.n_nodes


def test_bound_is_tight_where_a_pair_must_split():
    """``a b c`` and ``x b d``: the ``b`` after ``a`` and the ``b`` before ``d`` would
    give ``a ... d`` (``a NFby d``), so ``b`` needs two nodes; the others one each."""
    log = EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]])
    codes = codes_of(log, mine_invariants(log))
    per_type = dict(zip(log.types, type_lower_bounds(log, codes).tolist()))
    assert per_type == {"a": 1, "b": 2, "c": 1, "x": 1, "d": 1}
    assert node_lower_bound(log, codes) == smallest_model(log, codes) == 8


def test_sides_follow_their_definitions():
    """Sides under ``a AP b`` on ``x a y b`` and ``y x``: the ``x``/``y`` before any
    ``a`` are open, the ``y`` between the ``a`` and the ``b`` is on the chain."""
    log = EventLog.from_sequences([["x", "a", "y", "b"], ["y", "x"]])
    t = {n: i for i, n in enumerate(log.types)}
    inv = InvariantCodes(np.array([2]), np.array([t["a"]]), np.array([t["b"]]))
    assert invariant_sides(log, inv)[:, 0].tolist() == [2, 0, 1, 0, 2, 2]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.booleans(), min_size=n * n, max_size=n * n), st.integers(1, 4)
        )
    ),
    st.integers(0, 9),
)
def test_colour_classes_finds_a_colouring_exactly_when_one_exists(graph, order_seed):
    """On small graphs: a proper colouring with at most k colours whenever one exists
    (brute force over every assignment), None otherwise."""
    n, bits, k = graph
    upper = np.triu(np.array(bits, dtype=bool).reshape(n, n), 1)
    conflict = upper | upper.T
    exists = any(
        not any(conflict[u, v] and c[u] == c[v] for u in range(n) for v in range(n))
        for c in itertools.product(range(k), repeat=n)
    )
    colour = colour_classes(conflict, k, np.random.default_rng(order_seed).permutation(n))
    assert (colour is not None) == exists
    if colour is not None:
        assert colour.min() >= 0 and colour.max() < k
        assert not (conflict & (colour[:, None] == colour[None, :])).any()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=10), min_size=1, max_size=7),
    st.integers(0, 3),
)
def test_engine_models_are_at_or_above_the_bound(traces, seed):
    log = EventLog.from_sequences(traces)
    codes = codes_of(log, mine_invariants(log))
    assert infer_log(log, seed=seed).model.n_nodes >= node_lower_bound(log, codes)


def test_bound_is_at_most_synoptics_nodes_on_the_oracle_cases():
    """The real Synoptic's models obey the bound too (each case's mined invariants, which
    test_synoptic_oracle checks against Synoptic's)."""
    from test_synoptic_oracle import CASES, synoptic_args

    from statemine.infer.synoptic.formats import read_dot
    from statemine.parse.regex import read_regex

    oracle = shared("synoptic-oracle")
    checked = 0
    for case in CASES:
        if not isinstance(case, str):
            continue  # placeholders
        a = synoptic_args(case)
        ts = read_regex(a["files"], a["regexes"], a["separator"], a["mapping"], a["ignore"])
        log = EventLog.from_traceset(ts)
        bound = node_lower_bound(log, codes_of(log, mine_invariants(log)))
        assert bound <= read_dot(oracle / case / "model.dot").number_of_nodes(), case
        checked += 1
    assert checked >= 10


@pytest.mark.slow
def test_bound_on_the_large_oracle_case():
    from test_synoptic_oracle import parsed

    from statemine.infer.synoptic.formats import read_dot

    _, log, res = parsed("repo-apache-cse142")
    bound = node_lower_bound(log, codes_of(log, res.table))
    theirs = read_dot(shared("synoptic-oracle") / "repo-apache-cse142" / "model.dot")
    assert bound <= res.model.n_nodes <= theirs.number_of_nodes()
    # the region search (with its random starts; 219 without), then six rounds of
    # merge-and-repair and recolouring; 233 before recolouring, 227 before the region search
    assert (bound, res.model.n_nodes, theirs.number_of_nodes()) == (197, 200, 234)


def benchmark_module(name: str):
    """benchmarks/NAME.py as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_module():
    """benchmarks/bench_synoptic.py as a module (its log generators)."""
    return benchmark_module("bench_synoptic")


def bench_event_log(n_events: int) -> EventLog:
    """benchmarks/bench_synoptic.py's generated event log of ``n_events`` (its ``--sizes``
    logs: generator seeded with the size), coded as the benchmark codes it."""
    return EventLog.from_sequences(
        bench_module().event_log(n_events, np.random.default_rng(n_events))
    )


#: (nodes, lower bound) of the engine's model (seed 1) on the benchmark's logs, as
#: docs/synoptic-engine.md tabulates them.
BENCH_SIZES = {
    3_000: (40, 38),
    6_000: (35, 35),
    10_000: (26, 26),
    30_000: (27, 27),
    100_000: (17, 17),
}


@pytest.mark.slow
@pytest.mark.parametrize("n_events", sorted(BENCH_SIZES))
def test_benchmark_event_logs_up_to_1e5_events(n_events):
    """The generated congestion-control event logs of 3e3..1e5 events: the model accepts
    every trace, satisfies every invariant, and has the documented size and bound (at
    1e4 events and above: the bound, so no model of that log is smaller)."""
    log = bench_event_log(n_events)
    res = infer_log(log, seed=1)
    inv = mine(log)
    assert check_model(res.to_networkx(), log, inv).ok
    assert (res.model.n_nodes, node_lower_bound(log, codes_of(log, inv))) == BENCH_SIZES[n_events]


#: (nodes of the engine before the region search, nodes now, lower bound) at seed 1 on the
#: generator's logs ``event_log(n, default_rng(n + 1000 k))`` (docs/synoptic-engine.md's
#: twenty logs).
GENERATED_SIZES = {
    (3_000, 0): (42, 40, 38),
    (3_000, 1): (43, 42, 42),
    (3_000, 2): (20, 20, 20),
    (3_000, 3): (35, 34, 34),
    (6_000, 0): (36, 35, 35),
    (6_000, 1): (23, 23, 23),
    (6_000, 2): (38, 34, 34),
    (6_000, 3): (40, 36, 35),
    (10_000, 0): (26, 26, 26),
    (10_000, 1): (31, 30, 29),
    (10_000, 2): (23, 23, 23),
    (10_000, 3): (25, 25, 25),
    (30_000, 0): (27, 27, 27),
    (30_000, 1): (17, 17, 17),
    (30_000, 2): (17, 17, 17),
    (30_000, 3): (17, 17, 17),
    (100_000, 0): (17, 17, 17),
    (100_000, 1): (26, 26, 26),
    (100_000, 2): (17, 17, 17),
    (100_000, 3): (17, 17, 17),
}


@pytest.mark.slow
@pytest.mark.parametrize("n_events, k", sorted(GENERATED_SIZES))
def test_generated_logs_never_above_the_old_engine(n_events, k):
    """The twenty generated logs: a sound model with the documented node count, never
    more than the engine's before the region search, never fewer than the bound."""
    before, now, bound = GENERATED_SIZES[(n_events, k)]
    rng = np.random.default_rng(n_events + 1000 * k)
    log = EventLog.from_sequences(bench_module().event_log(n_events, rng))
    res = infer_log(log, seed=1)
    inv = mine(log)
    assert check_model(res.to_networkx(), log, inv).ok
    assert node_lower_bound(log, codes_of(log, inv)) == bound
    assert res.model.n_nodes == now <= before


#: Oracle cases where the engine's model was above the bound before recolouring:
#: (nodes before, nodes now, bound, the real Synoptic's nodes).
ORACLE_SIZES = {
    "cc-events-small": (34, 33, 33, 35),
    "cc-states-small-ltime": (26, 26, 25, 27),
}


@pytest.mark.parametrize("case", sorted(ORACLE_SIZES))
def test_oracle_cases_above_the_bound_before(case):
    """cc-events-small now has the bound's size (the smallest model any tool can build
    for it; Synoptic's has 35 nodes, this engine's had 34)."""
    from test_synoptic_oracle import parsed

    before, now, bound, theirs = ORACLE_SIZES[case]
    shared("synoptic-oracle")
    _, log, res = parsed(case)
    assert node_lower_bound(log, codes_of(log, res.table)) == bound
    assert res.model.n_nodes == now <= min(before, theirs)


#: (nodes before the region search, nodes now, lower bound) on two capture files of the
#: generator whose connections ``-m '\k<FILE>#\k<conn>'`` merges (bench_synoptic.py
#: ``write_captures(n, default_rng(n))``, seed 1; 1,024 events: 70 before recombination).
CAPTURE_SIZES = {
    1_000: (89, 69, 59),
    3_000: (66, 58, 55),
    6_000: (84, 62, 55),
    10_000: (67, 53, 49),
    30_000: (56, 52, 48),
    100_000: (66, 59, 58),
}


@pytest.mark.slow
@pytest.mark.parametrize("n_events", sorted(CAPTURE_SIZES))
def test_two_capture_files_merged_by_connection(n_events, tmp_path):
    """Connection ``c`` of both files is one trace (``\\k<FILE>`` is empty in a mapping
    other than the default, as in Synoptic); the model is sound, has the documented size,
    never more nodes than before recolouring, never fewer than the bound."""
    from statemine.infer.synoptic.command import run_command

    bench = bench_module()
    rng = np.random.default_rng(n_events)
    paths = bench.write_captures(n_events, rng, tmp_path)
    n_traces = len(bench.event_log(n_events, np.random.default_rng(n_events)))
    args = ["-r", bench.CAPTURE_REGEX, "-m", bench.CAPTURE_MAPPING, "--randomSeed=1"]
    res = run_command("synoptic", [*args, *map(str, paths)]).result
    log = res.log
    inv = mine(log)
    assert log.n_traces == n_traces - n_traces // 2  # the second file's connections
    assert check_model(res.to_networkx(), log, inv).ok
    before, now, bound = CAPTURE_SIZES[n_events]
    assert node_lower_bound(log, codes_of(log, inv)) == bound
    assert res.model.n_nodes == now <= before
