"""Perfume's reachability and walk totals against the former computations (issue 31):
:func:`~statemine.infer.synoptic.timecheck.closure` and what is built on it
(:func:`first_nodes`, :func:`intr_violations`, the unbounded tail of :func:`walk_extremes`)
give the very sets the former one-edge-step-per-round iterations gave, on random graphs
and on chains that take one round per node; :func:`walk_extremes` (its first rounds in C
since session 25) and :func:`onward_totals` (in C) give the former rounds' totals.  (A
breadth-first search on a CSR graph, :func:`_sorted_csr`, helper "long19" and session 20,
until the search moved to C in session 25; the CSR graph still serves the strongly
connected components.)"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.infer.synoptic.perfume_infer import onward_totals
from statemine.infer.synoptic.timecheck import (
    CYCLE_ROUNDS,
    TimedCodes,
    TimedGraph,
    _positive_cycles,
    _Relax,
    _sorted_csr,
    aggregate_edges,
    closure,
    first_nodes,
    intr_violations,
    positive_cycle_nodes,
    walk_extremes,
)


def _step(g: TimedGraph, m: np.ndarray) -> np.ndarray:
    """One edge step: ``out[r, v]`` = some edge ``u -> v`` has ``m[r, u]``."""
    out = np.zeros_like(m)
    rows, k = np.nonzero(m[:, g.src])
    out[rows, g.dst[k]] = True
    return out


def _closure_by_rounds(g: TimedGraph, seeds: np.ndarray, through: np.ndarray) -> np.ndarray:
    """The former computation: ``x = seeds``, then ``x |= step(x & through)`` until it
    stops changing."""
    return _closure_and_rounds(g, seeds, through)[0]


def _closure_and_rounds(
    g: TimedGraph, seeds: np.ndarray, through: np.ndarray
) -> tuple[np.ndarray, int]:
    """:func:`_closure_by_rounds` and the number of rounds that added a node."""
    x, rounds = seeds.copy(), 0
    while True:
        more = x | _step(g, x & through)
        if np.array_equal(more, x):
            return x, rounds
        x, rounds = more, rounds + 1


def _first_nodes_by_rounds(g: TimedGraph, types: np.ndarray) -> np.ndarray:
    """The former :func:`first_nodes` (statemine before session 19), kept as reference."""
    is_a = g.node_type[None, :] == types[:, None]
    x = np.zeros(is_a.shape, dtype=bool)
    x[:, 0] = True
    while True:
        more = x | _step(g, x & ~is_a)
        if np.array_equal(more, x):
            return x & is_a
        x = more


def _intr_by_rounds(g: TimedGraph, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The former :func:`intr_violations`, kept as reference."""
    nt = g.node_type[None, :]
    is_a = nt == a[:, None]
    through = ~is_a & (nt != b[:, None])
    x = _step(g, is_a)
    while True:
        more = x | _step(g, x & through)
        if np.array_equal(more, x):
            break
        x = more
    return (x & is_a).any(axis=1)


def _random_graph(seed: int, n: int, n_edges: int, n_types: int) -> TimedGraph:
    """A random graph of ``n`` nodes (0/1 INITIAL/TERMINAL, type -1) and up to
    ``n_edges`` edges (parallel ones merged by :func:`aggregate_edges`)."""
    rng = np.random.default_rng(seed)
    node_type = np.r_[-1, -1, rng.integers(0, n_types, n - 2)].astype(np.int64)
    src = rng.integers(0, n, n_edges)
    dst = rng.integers(0, n, n_edges)
    src = np.where(dst == 0, 0, src)  # no edge into INITIAL
    w = rng.integers(0, 5, n_edges).astype(np.float64)
    if not n_edges:  # aggregate_edges needs an edge
        return TimedGraph(n, src, dst, w, w, node_type)
    return aggregate_edges(n, src, dst, w, w, node_type)


def _c_rounds_alone(rounds: int):
    """A context in which :func:`walk_extremes` must answer from the C rounds alone
    when ``rounds`` (its ``cycle_rounds``) is not 0: its Python rounds (the reference,
    and the fallback for totals still growing after the marked rounds) fail the test."""
    if not rounds:
        return nullcontext()

    def refuse(*args, **kwargs):
        raise AssertionError("walk_extremes fell back to its Python rounds")

    return mock.patch("statemine.infer.synoptic.timecheck._Relax", refuse)


def _codes_intr(a: np.ndarray, b: np.ndarray) -> TimedCodes:
    """Codes with IntrBy pairs ``(a, b)`` only (the other fields are unused here)."""
    return TimedCodes(
        None,  # type: ignore[arg-type]
        a,
        b,
        *(np.zeros(0, dtype=np.int64),) * 2,
        np.zeros(0),
        *(np.zeros(0, dtype=bool),) * 2,
        *(np.zeros(0, dtype=np.int64),) * 3,
    )


graphs = st.tuples(
    st.integers(0, 2**31), st.integers(2, 40), st.integers(0, 120), st.integers(1, 5)
)


@settings(max_examples=300, deadline=None)
@given(graphs, st.integers(1, 6), st.floats(0.0, 1.0))
def test_closure_is_the_fixpoint_of_edge_steps(params, n_rows, density):
    """Random graphs (2-40 nodes, up to 120 edges, self-loops and cycles included),
    random seeds and ``through`` masks per row: one breadth-first search gives the set
    the round-by-round iteration reaches."""
    g = _random_graph(*params)
    rng = np.random.default_rng(params[0] + 1)
    seeds = rng.random((n_rows, g.n)) < density / 4
    through = rng.random((n_rows, g.n)) < density
    got = closure(g, seeds, through)
    assert got.dtype == bool and got.shape == (n_rows, g.n)
    want = _closure_by_rounds(g, seeds, through)
    assert np.array_equal(got, want)
    # from a part of the answer known beforehand (rounds instead of a search)
    init = want & (rng.random(want.shape) < 0.5)
    assert np.array_equal(closure(g, seeds, through, init), want)


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_first_nodes_and_intr_by_match_the_former_iterations(params):
    """:func:`first_nodes` for every type (and a type with no node) and
    :func:`intr_violations` for every (a, b) pair equal the former iterations."""
    g = _random_graph(*params)
    n_types = params[3]
    types = np.arange(n_types + 1, dtype=np.int64)
    assert np.array_equal(first_nodes(g, types), _first_nodes_by_rounds(g, types))
    a, b = (x.ravel().astype(np.int64) for x in np.meshgrid(types, types))
    assert np.array_equal(intr_violations(g, _codes_intr(a, b)), _intr_by_rounds(g, a, b))


def _chain_graph(seed: int, n: int, n_back: int, n_types: int) -> tuple[TimedGraph, np.ndarray]:
    """A graph of ``n`` nodes whose walks from INITIAL take one round per node: the chain
    ``0 -> order[0] -> ... -> order[-1] -> 1`` through the other nodes in a random
    order, plus ``n_back`` random edges that go back along it (self-loops and cycles,
    no shortcut).  Returns the graph and ``order``."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(np.arange(2, n))
    chain = np.r_[0, order, 1]
    at = rng.integers(1, len(chain) - 1, (2, n_back))  # chain positions of inner nodes
    back_from, back_to = at.max(axis=0), at.min(axis=0)
    src = np.r_[chain[:-1], chain[back_from]]
    dst = np.r_[chain[1:], chain[back_to]]
    w = rng.integers(0, 5, len(src)).astype(np.float64)
    node_type = np.r_[-1, -1, rng.integers(0, n_types, n - 2)].astype(np.int64)
    return aggregate_edges(n, src, dst, w, w, node_type), order


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31), st.integers(3, 300), st.integers(0, 40), st.integers(1, 5))
def test_closure_on_chains_that_settle_late_or_early(seed, n, n_back, n_types):
    """Chains of 3-300 nodes: row 0 (every node open, seed INITIAL) takes one round per
    node (``n - 1``, far past the ~8 of the connection logs), row 1 is closed at a random
    chain position and settles after it, row 2 is seeded mid-chain; the search gives
    what the rounds give, and :func:`first_nodes` / :func:`intr_violations` on the
    chain equal the former iterations."""
    g, order = _chain_graph(seed, n, n_back, n_types)
    rng = np.random.default_rng(seed + 1)
    seeds = np.zeros((3, n), dtype=bool)
    seeds[:2, 0] = True
    seeds[2, order[rng.integers(0, len(order))]] = True
    through = np.ones((3, n), dtype=bool)
    cut = rng.integers(0, len(order))
    through[1, order[cut]] = False
    want, rounds = _closure_and_rounds(g, seeds, through)
    assert rounds >= n - 1  # row 0: INITIAL, the n - 2 chain nodes, TERMINAL
    assert want[0].all() and want[1].sum() == cut + 2  # INITIAL, order[: cut + 1]
    _, early = _closure_and_rounds(g, seeds[1:2], through[1:2])
    assert early == cut + 1
    assert np.array_equal(closure(g, seeds, through), want)
    types = np.arange(n_types + 1, dtype=np.int64)
    assert np.array_equal(first_nodes(g, types), _first_nodes_by_rounds(g, types))
    a, b = (x.ravel().astype(np.int64) for x in np.meshgrid(types, types))
    assert np.array_equal(intr_violations(g, _codes_intr(a, b)), _intr_by_rounds(g, a, b))


@settings(max_examples=200, deadline=None)
@given(graphs)
def test_graph_sources_ascend(params):
    """The CSR graphs of :func:`closure` and the positive-cycle passes take
    ``TimedGraph.src`` as ascending: :func:`aggregate_edges` leaves it so."""
    g = _random_graph(*params)
    assert (np.diff(g.src) >= 0).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 60), st.integers(0, 200))
def test_sorted_csr_is_the_coo_matrix(seed, size, n_edges):
    """:func:`_sorted_csr` (row pointers counted, no sort) is the matrix scipy builds
    from the same edges as COO (duplicates, self-loops, empty rows, no edge)."""
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(seed)
    heads = np.sort(rng.integers(0, size, n_edges))
    tails = rng.integers(0, size, n_edges)
    got = _sorted_csr(size, heads, tails)
    want = csr_matrix((np.ones(n_edges), (heads, tails)), shape=(size, size))
    assert got.shape == (size, size)
    assert np.array_equal(got.toarray(), want.toarray())
    assert np.array_equal(np.diff(got.indptr), np.bincount(heads, minlength=size))


def test_closure_by_hand():
    """A chain 0 -> 2 -> 3 -> 4 -> 1 with 3 closed in row 1: row 0 reaches everything
    from 0, row 1 stops at 3 (3 is reached, its edge out is not taken); no seeds, no
    nodes; seeds are in the answer even when closed."""
    g = aggregate_edges(
        5,
        np.array([0, 2, 3, 4]),
        np.array([2, 3, 4, 1]),
        np.zeros(4),
        np.zeros(4),
        np.array([-1, -1, 0, 1, 0]),
    )
    seeds = np.zeros((3, 5), dtype=bool)
    seeds[:2, 0] = True
    through = np.ones((3, 5), dtype=bool)
    through[1, 3] = False
    through[2] = False
    seeds[2, 4] = True
    got = closure(g, seeds, through)
    assert got.tolist() == [
        [True, True, True, True, True],
        [True, False, True, True, False],
        [False, False, False, False, True],
    ]
    assert first_nodes(g, np.array([0, 1])).tolist() == [
        [False, False, True, False, False],
        [False, False, False, True, False],
    ]


def _positive_cycle_nodes_by_rows(g: TimedGraph, blocked: np.ndarray) -> np.ndarray:
    """The former :func:`positive_cycle_nodes` with ``blocked``: one strongly connected
    components pass per row (:func:`_positive_cycles`)."""
    out = np.zeros((len(blocked), g.n), dtype=bool)
    if not g.cyclic.any():
        return out
    for r, mask in enumerate(blocked):
        out[r] = _positive_cycles(g, ~mask[g.src])
    return out


def _walk_extremes_by_rounds(g, sources, upper, first_only, cap, stop, init):
    """The former :func:`walk_extremes` (statemine before session 19), kept as
    reference: reachability round by round, positive cycles row by row."""
    relax = _Relax(g, upper)
    none = -np.inf if upper else np.inf
    is_src = g.node_type[None, :] == sources[:, None]
    starts = _first_nodes_by_rounds(g, sources) if first_only else is_src
    start = np.where(starts, 0.0, none)
    better = np.maximum if upper else np.minimum
    limit = cap[:, None] if cap is not None else None
    cyclic = None
    if upper:
        cyclic = (
            _positive_cycle_nodes_by_rows(g, is_src)
            if first_only
            else positive_cycle_nodes(g, None)
        )

    def step(x):
        if first_only:
            x = np.where(is_src, none, x)
        out = better(x, relax.step(better(x, start)))
        if cyclic is not None:
            out = np.where(cyclic & (out > -np.inf), np.inf, out)
        return out if limit is None else np.minimum(out, limit)

    x = np.full(start.shape, none) if init is None else init
    for _ in range(g.n + 1):
        nxt = step(x)
        if np.array_equal(nxt, x):
            return x
        if stop is not None and ((nxt > stop) if upper else (nxt < stop)).any():
            return nxt
        changed = nxt != x
        x = nxt
    grow = _closure_by_rounds(g, changed, ~is_src if first_only else np.ones_like(changed))
    x[grow] = np.inf
    return x


@settings(max_examples=300, deadline=None)
@given(graphs, st.booleans())
def test_positive_cycles_of_all_rows_at_once(params, zero_weights):
    """Positive cycles with blocked nodes per row (every type's own nodes blocked, and
    none), all rows in one pass, equal one pass per row."""
    g = _random_graph(*params)
    if zero_weights:  # then no cycle is positive
        g = TimedGraph(g.n, g.src, g.dst, g.wmin * 0, g.wmax * 0, g.node_type)
    types = np.arange(params[3] + 1, dtype=np.int64)
    blocked = g.node_type[None, :] == types[:, None]
    blocked = np.concatenate([blocked, np.zeros((1, g.n), dtype=bool)])
    got = positive_cycle_nodes(g, blocked)
    assert np.array_equal(got, _positive_cycle_nodes_by_rows(g, blocked))


@settings(max_examples=300, deadline=None)
@given(
    graphs,
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.integers(0, 2**31),
    st.sampled_from([0, 1, 2, 3, CYCLE_ROUNDS]),
)
def test_walk_extremes_match_the_former_rounds(params, upper, first_only, mode, seed, rounds):
    """:func:`walk_extremes` on random graphs (cycles, positive or not), every type as a
    source, upper and lower, AlwaysPrecedes' first ``a`` only, with and without a cap, a
    ``stop`` (the verdict: does a total pass it; the totals when none does) and an
    ``init`` (the totals on the graph itself, as :class:`BoundCheck` passes them: below /
    above the answer) equal the former computation, which marks positive cycles from the
    first round, whichever round ``cycle_rounds`` starts the marking at."""
    g = _random_graph(*params)
    rng = np.random.default_rng(seed)
    _assert_walks_as_the_former_rounds(g, params[3], upper, first_only, mode, rng, rounds)


def _assert_walks_as_the_former_rounds(g, n_types, upper, first_only, mode, rng, rounds):
    """:func:`walk_extremes` of ``g`` (every type of ``n_types`` a source; ``mode``: bit
    1 a cap, bit 2 a ``stop``) from the C rounds alone (``rounds`` its ``cycle_rounds``)
    against :func:`_walk_extremes_by_rounds`, also from an ``init`` below the answer."""
    first_only = first_only and upper
    sources = np.arange(n_types, dtype=np.int64)
    cap = rng.integers(0, 12, len(sources)).astype(np.float64) if upper and mode & 1 else None
    args = (g, sources, upper, first_only, cap)
    want = _walk_extremes_by_rounds(*args, None, None)
    with _c_rounds_alone(rounds):
        assert np.array_equal(walk_extremes(*args, cycle_rounds=rounds), want)
    if mode & 2:
        stop = rng.integers(0, 12, want.shape).astype(np.float64)
        passes = ((want > stop) if upper else (want < stop)).any()
        with _c_rounds_alone(rounds):
            got = walk_extremes(*args, stop, cycle_rounds=rounds)
        assert ((got > stop) if upper else (got < stop)).any() == passes
        if not passes:
            assert np.array_equal(got, want)
    # an init below (upper) / above (lower) the answer: a partial run's totals
    init = np.where(rng.random(want.shape) < 0.5, want, -np.inf if upper else np.inf)
    with _c_rounds_alone(rounds):
        got = walk_extremes(*args, None, init.copy(), cycle_rounds=rounds)
    assert np.array_equal(got, _walk_extremes_by_rounds(*args, None, init.copy()))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**31),
    st.integers(12, 300),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.sampled_from([1, 3, CYCLE_ROUNDS]),
)
def test_walk_extremes_on_long_graphs_without_cycles(seed, n, upper, first_only, mode, rounds):
    """Chains with skips forward and no edge back (a trace-chain model: the C rounds
    end them by one pass in topological order once ``SORT_AFTER`` rounds have not
    settled) give the former rounds' totals, upper and lower, capped or not, with a
    ``stop`` and from an ``init``."""
    rng = np.random.default_rng(seed)
    node_type = np.r_[-1, -1, rng.integers(0, 3, n - 2)].astype(np.int64)
    chain = np.arange(2, n - 1)
    skip = rng.integers(2, n - 3, n // 3)
    src = np.r_[0, chain, skip, n - 1]
    dst = np.r_[2, chain + 1, np.minimum(skip + rng.integers(1, 8, len(skip)), n - 1), 1]
    wmin = rng.integers(0, 4, len(src)).astype(np.float64)
    wmax = wmin + rng.integers(0, 3, len(src))
    g = aggregate_edges(n, src, dst, wmin, wmax, node_type)
    _assert_walks_as_the_former_rounds(g, 3, upper, first_only, mode, rng, rounds)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**31),
    st.integers(12, 300),
    st.integers(0, 6),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.sampled_from([1, 3, CYCLE_ROUNDS]),
)
def test_walk_extremes_on_long_graphs_with_cycles(seed, n, back, upper, first_only, mode, rounds):
    """Chains with skips forward, self-loops and a few edges back, many of them weighted
    0 (cycles walks do not grow around, or grow around only when a positive edge closes
    them; a model of a one-trace log: the C rounds end them by one pass over the strongly
    connected components once ``SORT_AFTER`` rounds have not settled) give the former
    rounds' totals, upper and lower, capped or not, with a ``stop`` and from an ``init``,
    from the C rounds alone."""
    rng = np.random.default_rng(seed)
    node_type = np.r_[-1, -1, rng.integers(0, 3, n - 2)].astype(np.int64)
    chain = np.arange(2, n - 1)
    skip = rng.integers(2, n - 3, n // 3)
    ups = rng.integers(3, n - 1, back)
    loops = rng.integers(2, n - 1, back)
    src = np.r_[0, chain, skip, ups, loops, n - 1]
    dst = np.r_[
        2,
        chain + 1,
        np.minimum(skip + rng.integers(1, 8, len(skip)), n - 1),
        rng.integers(2, ups),
        loops,
        1,
    ]
    wmin = np.where(rng.random(len(src)) < 0.7, 0, rng.integers(0, 4, len(src))).astype(float)
    wmax = wmin + np.where(rng.random(len(src)) < 0.7, 0, rng.integers(0, 3, len(src)))
    g = aggregate_edges(n, src, dst, wmin, wmax, node_type)
    _assert_walks_as_the_former_rounds(g, 3, upper, first_only, mode, rng, rounds)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_walk_extremes_on_merged_one_trace_logs(tmp_path, seed):
    """A model as first fit builds one from a heavy-tailed one-trace log (the benchmark's
    ``cycles`` kind: the trace chain with a few events merged into earlier ones of their
    type, closing cycles whose largest delta is positive): the C rounds alone end at the
    former rounds' totals, upper and lower, from the start and from an ``init``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_perfume import cycles_log

    from statemine.infer.synoptic.options import parse_args
    from statemine.infer.synoptic.run import read_log
    from statemine.infer.synoptic.timecheck import exact_ticks, timed_graph

    rng = np.random.default_rng(700 + seed)
    path = tmp_path / "cycles.log"
    path.write_text(cycles_log(400, rng))
    log = read_log(parse_args(["-r", "^(?<DTIME>)(?<TYPE>)$", str(path)], "perfume"))
    ticks, _ = exact_ticks(log)
    node = np.arange(log.n_events)
    for i in np.nonzero(rng.random(log.n_events) < 0.05)[0]:
        earlier = np.nonzero(log.codes[:i] == log.codes[i])[0]
        if len(earlier):
            node[i] = node[rng.choice(earlier)]
    _, part = np.unique(node, return_inverse=True)
    part = part.astype(np.int64) + 2
    node_type = np.full(part.max() + 1, -1, dtype=np.int64)
    node_type[part] = log.codes
    g = timed_graph(part, node_type, log, ticks)
    assert positive_cycle_nodes(g).any()
    n_types = len(log.types)
    for upper in (True, False):
        _assert_walks_as_the_former_rounds(g, n_types, upper, upper, 0, rng, CYCLE_ROUNDS)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**31),
    st.integers(20, 120),
    st.integers(0, 4),
    st.booleans(),
    st.booleans(),
    st.sampled_from([0, 1, 2, 3, 5, CYCLE_ROUNDS]),
)
def test_walk_extremes_mark_cycles_late_on_sparse_graphs(seed, n, back, first_only, capped, rounds):
    """Long sparse graphs (a chain with skips and a few edges back, as merge checks see:
    totals settle round by round, most rounds over a few nodes' edges) with positive
    cycles: marking them from round ``cycle_rounds`` gives the former computation's
    totals, which marks them from the first."""
    rng = np.random.default_rng(seed)
    node_type = np.r_[-1, -1, rng.integers(0, 3, n - 2)].astype(np.int64)
    chain = np.arange(2, n - 1)
    skip = rng.integers(2, n - 3, n // 4)
    ups = rng.integers(3, n, back)
    src = np.r_[0, chain, skip, ups, n - 1]
    dst = np.r_[
        2,
        chain + 1,
        np.minimum(skip + rng.integers(2, 6, len(skip)), n - 1),
        rng.integers(2, np.maximum(ups, 3)),
        1,
    ]
    w = rng.integers(1, 5, len(src)).astype(np.float64)
    g = aggregate_edges(n, src, dst, w, w, node_type)
    sources = np.arange(3, dtype=np.int64)
    cap = rng.integers(5, 60, 3).astype(np.float64) if capped else None
    args = (g, sources, True, first_only, cap)
    want = _walk_extremes_by_rounds(*args, None, None)
    with _c_rounds_alone(rounds):
        assert np.array_equal(walk_extremes(*args, cycle_rounds=rounds), want)


def _onward_by_rounds(g, stop, upper, through):
    """The former :func:`onward_totals`: every edge relaxed in every round."""
    none = -np.inf if upper else np.inf
    out = np.full(stop.shape, none)
    if not len(g.src):
        return out
    better = np.maximum if upper else np.minimum
    w = g.wmax if upper else g.wmin
    for _ in range(g.n + 1):
        on = out if through is None else np.where(through, out, none)
        val = better(-stop, on)[:, g.dst] + w
        nxt = out.copy()
        for u in np.unique(g.src).tolist():
            nxt[:, u] = better(out[:, u], better.reduce(val[:, g.src == u], axis=1))
        if upper:
            nxt = np.minimum(nxt, 1.0)
        if np.array_equal(nxt, out):
            break
        out = nxt
    return out


@settings(max_examples=300, deadline=None)
@given(graphs, st.booleans(), st.integers(1, 4), st.floats(0.0, 1.0), st.booleans())
def test_onward_totals_match_whole_rounds(params, upper, n_rows, density, blocked):
    """:func:`onward_totals` (after the first round, only the edges into nodes that
    changed) equals relaxing every edge in every round, on random graphs with cycles,
    bounds at some nodes only (the others' ``stop`` +inf / -inf) and ``through`` masks."""
    g = _random_graph(*params)
    rng = np.random.default_rng(params[0] + 2)
    none = np.inf if upper else -np.inf
    stop = np.where(rng.random((n_rows, g.n)) < density, rng.integers(0, 15, (n_rows, g.n)), none)
    through = rng.random((n_rows, g.n)) < density if blocked else None
    got = onward_totals(g, stop, upper, through)
    assert np.array_equal(got, _onward_by_rounds(g, stop, upper, through))


@pytest.mark.parametrize("rounds", [0, 8, CYCLE_ROUNDS, 24])
def test_walk_extremes_settle_after_late_marking(rounds):
    """A positive cycle at the head of a long chain, marked late: the cap then walks
    down the chain for as many rounds as it has nodes, which the rounds before the
    marking do not use up (the cycle's nodes at the cap, and every node after them)."""
    n = 30
    chain = np.arange(2, n - 1)
    src = np.r_[0, chain, 4, n - 1]
    dst = np.r_[2, chain + 1, 3, 1]
    w = np.ones(len(src))
    g = aggregate_edges(n, src, dst, w, w, np.r_[-1, -1, np.zeros(n - 2)].astype(np.int64))
    args = (g, np.array([0]), True, False, np.array([1000.0]))
    want = _walk_extremes_by_rounds(*args, None, None)
    assert (want[0, 3:] == 1000).all()
    with _c_rounds_alone(rounds):
        assert np.array_equal(walk_extremes(*args, cycle_rounds=rounds), want)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 60), st.integers(1, 12), st.integers(0, 4))
def test_node_values_are_the_per_node_maxima(seed, n_events, n_nodes, n_bounds):
    """:meth:`Sides.node_values` (sorted runs and ``reduceat``) equals the former
    ``np.maximum.at`` on random values (-inf included, nodes without events, no event)."""
    from statemine.infer.synoptic.timeconflicts import Sides

    rng = np.random.default_rng(seed)
    p = np.where(rng.random((n_bounds, n_events)) < 0.3, -np.inf, rng.random((n_bounds, n_events)))
    s = np.where(rng.random((n_bounds, n_events)) < 0.3, -np.inf, rng.random((n_bounds, n_events)))
    part = rng.integers(0, n_nodes, n_events)
    got = Sides(p, s, np.zeros(n_bounds)).node_values(part, n_nodes)
    for have, values in zip(got, (p, s), strict=True):
        want = np.full((n_nodes, n_bounds), -np.inf)
        np.maximum.at(want, part, values.T)
        assert np.array_equal(have, want)
