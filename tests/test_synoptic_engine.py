"""The native Synoptic engine on its own: invariants from their definitions, models that
accept every trace and satisfy every invariant (checked by an independent networkx
reference), edge statistics, and the model checker finding broken models."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synoptic_reference import (
    accepts,
    brute_invariants,
    coarsen_every_trial,
    counterexample_queue,
    invariant_holds,
    model_json_text,
)

from statemine.infer.synoptic import infer_log, infer_synoptic
from statemine.infer.synoptic.bounds import clique_bounds, type_classes
from statemine.infer.synoptic.check import InvariantCodes, check_model
from statemine.infer.synoptic.coarsen import coarsen, merge_and_repair, recolour
from statemine.infer.synoptic.invariants import mine
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel, probability_text
from statemine.infer.synoptic.refine import refine, refine_by_history, refine_targeted
from statemine.traces import TraceSet

traces_strategy = st.lists(
    st.lists(st.sampled_from("abcde"), min_size=1, max_size=9), min_size=1, max_size=7
)


def as_set(inv: pd.DataFrame) -> set:
    return set(zip(inv["kind"], inv["first"], inv["second"], inv["support"].astype(int)))


def assert_sound(model: PartitionModel, inv: pd.DataFrame, traces: list[list[str]]) -> None:
    g = model.to_networkx()
    for tr in traces:
        assert accepts(g, tr), tr
    row: Any  # a frame row: pandas-stubs types every field as any scalar
    for row in inv.itertuples(index=False):
        assert invariant_holds(g, row.kind, row.first, row.second), row


@settings(max_examples=150, deadline=None)
@given(traces_strategy)
def test_mined_invariants_match_their_definitions(traces):
    assert as_set(mine(EventLog.from_sequences(traces))) == brute_invariants(traces)


@settings(max_examples=120, deadline=None)
@given(traces_strategy, st.integers(0, 3))
def test_inferred_model_accepts_traces_and_satisfies_invariants(traces, seed):
    log = EventLog.from_sequences(traces)
    res = infer_log(log, seed=seed)
    assert_sound(res.model, res.invariants, traces)
    assert check_model(res.to_networkx(), log, res.invariants).ok
    # never more nodes than the one-shot history refinement alone gives
    codes = InvariantCodes.from_frame(res.invariants, {t: i for i, t in enumerate(log.types)})
    assert (
        res.model.n_nodes
        <= refine_by_history(
            PartitionModel.initial(log), codes, np.ones(len(codes), dtype=bool)
        ).n_nodes
    )


@settings(max_examples=60, deadline=None)
@given(traces_strategy)
def test_each_refinement_then_coarsening_is_sound(traces):
    log = EventLog.from_sequences(traces)
    inv = mine(log)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    initial = PartitionModel.initial(log)
    everything = np.ones(len(codes), dtype=bool)
    for model in (
        refine(initial, codes, np.random.default_rng(0), max_steps=3),
        refine(initial, codes, np.random.default_rng(0), max_steps=2, finish="history"),
        refine_by_history(initial, codes, everything),
        refine_targeted(initial, codes, everything),
    ):
        assert_sound(model, inv, traces)
        assert_sound(coarsen(model, codes, np.random.default_rng(1)), inv, traces)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=12), min_size=1, max_size=9),
    st.integers(0, 5),
)
def test_merge_and_repair_is_sound_and_never_grows(traces, seed):
    """The local search after coarsening keeps a model that accepts every trace and
    satisfies every invariant, with at most the nodes it was given."""
    log = EventLog.from_sequences(traces)
    inv = mine(log)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    start = coarsen(
        refine_by_history(PartitionModel.initial(log), codes, np.ones(len(codes), dtype=bool)),
        codes,
        np.random.default_rng(seed),
    )
    better = merge_and_repair(start, codes, np.random.default_rng(seed))
    assert better.n_nodes <= start.n_nodes
    assert_sound(better, inv, traces)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=12), min_size=1, max_size=9),
    st.integers(0, 5),
)
def test_recolour_is_sound_and_never_grows(traces, seed):
    """Recolouring a type's instance classes (then repairing and coarsening) keeps a
    model that accepts every trace and satisfies every invariant, with at most the nodes
    it was given; every type keeps at least its lower bound of nodes."""
    log = EventLog.from_sequences(traces)
    inv = mine(log)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    start = refine_by_history(PartitionModel.initial(log), codes, np.ones(len(codes), dtype=bool))
    classes = type_classes(log, codes)
    bounds = clique_bounds(classes)
    rng = np.random.default_rng(seed)
    better = recolour(start, codes, rng, classes, bounds, tries=3)
    assert better.n_nodes <= start.n_nodes
    assert_sound(better, inv, traces)
    counts = np.bincount(better.node_type[better.node_type >= 0], minlength=len(log.types))
    assert (counts >= bounds).all()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=12), min_size=1, max_size=9),
    st.integers(0, 5),
)
def test_coarsening_merges_exactly_as_checking_every_trial_would(traces, seed):
    """Coarsening skips merges known to fail and checks the others incrementally; the
    model is the one checking every trial from scratch gives."""
    log = EventLog.from_sequences(traces)
    inv = mine(log)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    initial = PartitionModel.initial(log)
    everything = np.ones(len(codes), dtype=bool)
    for model in (
        refine(initial, codes, np.random.default_rng(seed), max_steps=4),
        refine_by_history(initial, codes, everything),
    ):
        ours = coarsen(model, codes, np.random.default_rng(seed))
        theirs = coarsen_every_trial(model, codes, np.random.default_rng(seed))
        assert ours.part.tolist() == theirs.part.tolist()
        assert ours.node_type.tolist() == theirs.node_type.tolist()


#: A directed graph on 3..12 nodes (rows of a bool matrix; nodes 0 and 1 are INITIAL and
#: TERMINAL) and the event types (0..3) of its other nodes.
SMALL_GRAPHS = st.integers(3, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n - 2, max_size=n - 2),
    )
)


@settings(max_examples=300, deadline=None)
@given(
    SMALL_GRAPHS,
    st.integers(0, 2),
    st.integers(-1, 3),
    st.integers(0, 3),
)
def test_counterexample_is_the_queue_searchs_path(graph, kind, a, b):
    """The layer-at-a-time search returns the path a FIFO queue search finds first."""
    from statemine.infer.synoptic.check import counterexample

    rows, types = graph
    adj = np.array(rows, dtype=bool)
    adj[:, 0] = False  # nothing enters INITIAL, nothing leaves TERMINAL
    adj[1, :] = False
    node_type = np.array([-1, -1, *types])
    a = a if kind == 0 else max(a, 0)
    assert counterexample(adj, node_type, kind, a, b) == counterexample_queue(
        adj, node_type, kind, a, b
    )


@settings(max_examples=200, deadline=None)
@given(
    SMALL_GRAPHS,
    st.lists(st.tuples(st.integers(0, 2), st.integers(-1, 3), st.integers(0, 3)), min_size=1),
)
def test_violated_agrees_with_the_product_search(graph, invariants):
    """The bitset fix-point checker flags exactly the invariants (any kind, INITIAL AFby
    too) that the networkx product search finds broken on the model's INITIAL ->
    TERMINAL paths."""
    import networkx as nx

    from statemine.infer.synoptic.check import _trim, violated

    rows, types = graph
    adj = np.array(rows, dtype=bool)
    adj[:, 0] = False  # nothing enters INITIAL, nothing leaves TERMINAL
    adj[1, :] = False
    node_type = np.array([-1, -1, *types])
    invariants = [(k, a if k == 0 else max(a, 0), b) for k, a, b in invariants]
    invariants = [(k, a, b) for k, a, b in invariants if a != b]
    kinds = ["AlwaysFollowedBy", "NeverFollowedBy", "AlwaysPrecedes"]
    frame = pd.DataFrame(
        {
            "kind": [kinds[k] for k, _, _ in invariants],
            "first": ["INITIAL" if a < 0 else "abcd"[a] for _, a, _ in invariants],
            "second": ["abcd"[b] for _, _, b in invariants],
        }
    )
    codes = InvariantCodes.from_frame(frame, {t: i for i, t in enumerate("abcd")})
    got = violated(adj, node_type, codes, 4)
    keep = _trim(adj, 0, 1)
    g: nx.DiGraph = nx.DiGraph()
    for v in np.nonzero(keep)[0].tolist():
        synthetic = node_type[v] < 0
        label = ["INITIAL", "TERMINAL"][v] if synthetic else "abcd"[node_type[v]]
        g.add_node(v, label=label, state=None if synthetic else label)
    g.add_edges_from((u, v) for u, v in zip(*np.nonzero(adj & keep[:, None] & keep[None, :])))
    if not keep[0]:  # no INITIAL -> TERMINAL path: nothing can break
        assert not got.any()
        return
    expected = [not invariant_holds(g, *row) for row in frame.itertuples(index=False)]
    assert got.tolist() == expected


@settings(max_examples=60, deadline=None)
@given(
    traces_strategy,
    st.lists(
        st.sampled_from(["1", "443.139080", "007", "-0", "1E+3", "0.5", "12", "-3.25", "00.5"]),
        min_size=1,
    ),
    st.sampled_from([1, 2, 3, 1 << 16]),
    st.sampled_from([1, 2]),
    st.booleans(),
    st.booleans(),
)
def test_model_json_is_the_event_by_event_text(traces, stamps, block, workers, plain, arrow):
    """The block-wise writer (Arrow kernels, blocks on threads) and the plain one (Python
    strings, small logs) write the same bytes as an event-by-event json.dumps writer, odd
    time texts included, from time texts in a numpy or a pyarrow array."""
    import pyarrow as pa

    import statemine.infer.synoptic.formats as formats
    from statemine.infer.synoptic.log import _text_array

    log = EventLog.from_sequences(traces)
    texts = [stamps[i % len(stamps)] for i in range(log.n_events)]
    log = EventLog(
        log.types,
        log.codes,
        log.starts,
        log.times,
        log.lines,
        _text_array(pa.array(texts) if arrow else texts),
        log.trace_ids,
    )
    res = infer_log(log)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(formats, "JSON_BLOCK", block)
        m.setattr(formats, "PLAIN_JSON_EVENTS", 1 << 30 if plain else 0)
        m.setattr(formats, "WORKERS", workers)
        text = formats.to_json(res.model, res.invariants)
    assert text == model_json_text(res.model, res.invariants)


def test_same_seed_same_model():
    traces = [list("abcab"), list("acbd"), list("dcab"), list("abd")]
    one = infer_log(EventLog.from_sequences(traces), seed=5)
    two = infer_log(EventLog.from_sequences(traces), seed=5)
    assert one.model.part.tolist() == two.model.part.tolist()


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), min_size=2, max_size=14), min_size=3, max_size=9),
    st.integers(0, 3),
)
def test_same_seed_same_model_through_the_local_search(traces, seed):
    """Two runs of one seed give the same partition, also where the search after
    coarsening (merge-and-repair, recolouring, several rounds) runs."""
    one = infer_log(EventLog.from_sequences(traces), seed=seed)
    two = infer_log(EventLog.from_sequences(traces), seed=seed)
    assert one.model.part.tolist() == two.model.part.tolist()


def test_edge_counts_probabilities_and_times():
    ev = pd.DataFrame(
        {
            "trace": ["t1"] * 4 + ["t2"] * 2,
            "time": [0.0, 1.0, 4.0, 4.5, 10.0, 10.5],
            "state": ["A", "B", "A", "B", "A", "B"],
        }
    )
    res = infer_synoptic(TraceSet.from_events(ev))
    g = res.to_networkx()
    by_label = {d["label"]: n for n, d in g.nodes(data=True)}
    a, b = by_label["A"], by_label["B"]
    ab = g.edges[a, b]
    assert ab["count"] == 3 and ab["probability"] == 1.0
    assert (ab["time_min"], ab["time_median"], ab["time_max"]) == (0.5, 0.5, 1.0)
    ba = g.edges[b, a]
    assert (ba["count"], ba["probability"], ba["time_min"], ba["time_max"]) == (1, 1 / 3, 3.0, 3.0)
    init = by_label["INITIAL"]
    assert g.edges[init, a]["count"] == 2 and np.isnan(g.edges[init, a]["time_min"])
    assert g.nodes[a]["state"] == "A" and g.nodes[init]["state"] is None


@pytest.mark.parametrize(
    "count,total,text",
    [
        (1, 8, "0.13"),
        (3, 8, "0.38"),
        (1, 3, "0.33"),
        (2, 3, "0.67"),
        (29, 200, "0.15"),
        (1, 1, "1.00"),
        (1, 200, "0.01"),
    ],
)
def test_probability_text_rounds_like_java(count, total, text):
    assert probability_text(count, total) == text


def test_checker_finds_broken_invariants_and_rejected_traces():
    traces = [["a", "b", "c"], ["x", "b", "d"]]
    log = EventLog.from_sequences(traces)
    inv = mine(log)
    initial = PartitionModel.initial(log)  # one node per type: a b d is a path
    report = check_model(initial.to_networkx(), log, inv)
    assert not report.ok and not report.rejected
    broken = set(zip(report.violated["first"], report.violated["kind"], report.violated["second"]))
    assert ("a", "NeverFollowedBy", "d") in broken and ("x", "NeverFollowedBy", "c") in broken
    g = infer_log(log).to_networkx()
    g.remove_edges_from([(u, v) for u, v in list(g.edges) if g.nodes[u]["label"] == "x"])
    assert check_model(g, log, inv).rejected == [1]


def test_types_named_like_the_synthetic_nodes_are_refused():
    from statemine.errors import InputError

    with pytest.raises(InputError, match="'INITIAL' clashes"):
        EventLog.from_sequences([["a", "INITIAL"]])


@given(traces_strategy)
def test_type_counts_count_each_type(traces):
    """``EventLog.type_counts``: events per type, counted here with a Counter; read-only,
    since every caller shares the cached array."""
    from collections import Counter

    log = EventLog.from_sequences(traces)
    seen = Counter(e for t in traces for e in t)
    assert log.type_counts.tolist() == [seen[name] for name in log.types]
    with pytest.raises(ValueError):
        log.type_counts[0] = 7
