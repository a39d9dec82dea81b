"""The C rounds of Perfume's walk totals and reach and of the untimed checks' bitsets
and of the merges that must fail (statemine/infer/synoptic/_walks.c) on graphs small
enough to work out by hand, their three answers (settled, a total past ``stop``, still
growing), and their refusal of arrays that do not fit.  That they give
:func:`~statemine.infer.synoptic.timecheck.walk_extremes`', ``closure``'s and
``onward_totals``' former answers on random graphs is tested in
tests/test_synoptic_perfume_reach.py (``bits_grow``'s against whole rounds here), and ``doomed``'s against the former one-pair rules
in tests/test_synoptic_perfume_exactfit.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statemine.infer.synoptic._walks import (
    bits_gather,
    bits_grow,
    closure,
    doomed,
    merge_edges,
    merged_rounds,
    onward,
    relax_rounds,
)

INF = np.inf

# INITIAL 0 -> 2 -> 3 -> 4 -> TERMINAL 1, edges weighted 0, 5, 7, 0 (as sorted by source)
SRC = np.array([0, 2, 3, 4], dtype=np.int64)
DST = np.array([2, 3, 4, 1], dtype=np.int64)
W = np.array([0.0, 5.0, 7.0, 0.0])


def _relax(x, start, stop=None, rounds=10, cap=None, mask=None, upper=True):
    status = relax_rounds(
        SRC, DST, W, x, start, mask, cap, stop, None, 4, x.shape[0], 5, upper, rounds
    )
    return status, x


def test_walks_from_node_2_by_hand():
    """Walks of >= 1 edge from node 2: 5 to node 3, 12 to node 4 and TERMINAL; settled."""
    start = np.array([[-INF, -INF, 0.0, -INF, -INF]])
    status, x = _relax(np.full((1, 5), -INF), start)
    assert status == 0
    assert x.tolist() == [[-INF, 12.0, -INF, 5.0, 12.0]]


def test_lower_totals_and_the_cap():
    """The smallest totals (the same here), and upper totals cut at the cap."""
    start = np.array([[INF, INF, 0.0, INF, INF]])
    status, x = _relax(np.full((1, 5), INF), start, upper=False)
    assert (status, x.tolist()) == (0, [[INF, 12.0, INF, 5.0, 12.0]])
    start = np.array([[-INF, -INF, 0.0, -INF, -INF]])
    status, x = _relax(np.full((1, 5), -INF), start, cap=np.array([6.0]))
    assert (status, x.tolist()) == (0, [[-INF, 6.0, -INF, 5.0, 6.0]])


def test_a_total_past_stop_ends_the_rounds():
    """A bound of 4 at node 3: the first round passes it (5) and the rounds stop there,
    before node 4 is reached; a bound nobody passes leaves the answer settled."""
    start = np.array([[-INF, -INF, 0.0, -INF, -INF]])
    stop = np.full((1, 5), INF)
    stop[0, 3] = 4.0
    status, x = _relax(np.full((1, 5), -INF), start, stop)
    assert (status, x.tolist()) == (1, [[-INF, -INF, -INF, 5.0, -INF]])
    stop[0, 3] = 5.0
    status, x = _relax(np.full((1, 5), -INF), start, stop)
    assert (status, x.tolist()) == (0, [[-INF, 12.0, -INF, 5.0, 12.0]])


def test_rounds_that_have_not_settled_say_so():
    """One round reaches node 3 only; the caller goes on from there."""
    start = np.array([[-INF, -INF, 0.0, -INF, -INF]])
    status, x = _relax(np.full((1, 5), -INF), start, rounds=1)
    assert (status, x.tolist()) == (2, [[-INF, -INF, -INF, 5.0, -INF]])
    status, x = _relax(x, start, rounds=0)
    assert status == 2


def _chain_with_a_cycle(w_back: float, n: int = 40):
    """INITIAL 0 -> 2 -> 3 -> ... -> n - 1 -> TERMINAL 1, each edge weighted 1 but 3 ->
    4 (0), and an edge 4 -> 3 weighted ``w_back`` (a cycle at the chain's head)."""
    src = np.r_[0, np.arange(2, n), 4].astype(np.int64)
    dst = np.r_[2, np.arange(3, n), 1, 3].astype(np.int64)
    w = np.r_[np.ones(n - 1), w_back]
    w[2] = 0.0
    return src, dst, w


def test_long_chains_with_a_cycle_end_in_one_pass():
    """Walks from node 2 down a chain of 40 nodes take 38 rounds; after 8 of them the
    strongly connected components are ordered and one pass over them ends the rounds
    (here within 9): with the cycle 3 -> 4 -> 3 of weight 0 + 0 walks do not grow around
    it, and with weight 0 + 1 marked as a positive cycle (its nodes +inf, then the cap
    down the chain); not marked, it grows round after round and the rounds say so."""
    n = 40
    start = np.full((1, n), -INF)
    start[0, 2] = 0.0

    def run(w_back, cyclic=None, cap=None):
        src, dst, w = _chain_with_a_cycle(w_back, n)
        x = np.full((1, n), -INF)
        status = relax_rounds(
            src, dst, w, x, start, None, cap, None, cyclic, len(src), 1, n, True, 9
        )
        return status, x

    status, x = run(0.0)
    assert status == 0
    assert x[0, 3:].tolist() == [1, *range(1, n - 3)] and x[0, 1] == n - 3
    cyclic = np.zeros((1, n), dtype=bool)
    cyclic[0, 3:5] = True
    status, x = run(1.0, cyclic, np.array([100.0]))
    assert status == 0
    assert (x[0, 3:] == 100.0).all() and x[0, 1] == 100.0
    status, x = run(1.0)
    assert status == 2


def test_first_a_walks_end_at_the_next_a():
    """With node 3 a source node masked (a first-``a`` walk ends at the next ``a``), walks
    from node 2 stop at node 3."""
    start = np.array([[-INF, -INF, 0.0, -INF, -INF]])
    mask = np.array([[False, False, True, True, False]])
    status, x = _relax(np.full((1, 5), -INF), start, mask=mask)
    assert (status, x.tolist()) == (0, [[-INF, -INF, -INF, 5.0, -INF]])


def test_reach_and_onward_by_hand():
    """Reach from node 2, through every node but 3; onward totals to a bound of 10 at
    node 4 (the walks 2 -> 3 -> 4 and 0 -> 2 -> 3 -> 4 are 12: 2 over it, cut at 1;
    3 -> 4 is 7: 3 under it)."""
    x = np.array([[False, False, True, False, False]])
    through = np.array([[True, True, True, False, True]])
    closure(SRC, DST, x, through, 4, 1, 5)
    assert x.tolist() == [[False, False, True, True, False]]
    stop = np.full((1, 5), INF)
    stop[0, 4] = 10.0
    out = np.full((1, 5), -INF)
    onward(SRC, DST, W, stop, None, out, 4, 1, 5, True)
    assert out.tolist() == [[1.0, -INF, 1.0, -3.0, -INF]]


def test_arrays_that_do_not_fit_are_refused():
    """Lengths that disagree with the sizes given, and edges naming no node: ValueError,
    nothing read out of bounds."""
    x = np.full((1, 5), -INF)
    start = np.zeros((1, 5))
    with pytest.raises(ValueError, match="x holds"):
        relax_rounds(SRC, DST, W, x, start, None, None, None, None, 4, 1, 6, True, 3)
    with pytest.raises(ValueError, match="src holds"):
        relax_rounds(SRC[:3], DST, W, x, start, None, None, None, None, 4, 1, 5, True, 3)
    with pytest.raises(ValueError, match="names no node"):
        relax_rounds(SRC, DST + 4, W, x, start, None, None, None, None, 4, 1, 5, True, 3)
    with pytest.raises(ValueError, match="names no node"):
        closure(SRC, DST - 3, np.zeros((1, 5), bool), np.ones((1, 5), bool), 4, 1, 5)
    with pytest.raises(ValueError, match="out holds"):
        onward(SRC, DST, W, np.zeros((1, 5)), None, np.zeros(4), 4, 1, 5, True)
    with pytest.raises(TypeError):
        relax_rounds(SRC, DST, W, None, start, None, None, None, None, 4, 1, 5, True, 3)
    with pytest.raises(ValueError, match="negative"):
        closure(SRC, DST, np.zeros((1, 5), bool), np.ones((1, 5), bool), -1, 1, 5)


def test_bitsets_by_hand():
    """Types as bits along the chain 0 -> 2 -> 3 -> 4 -> 1 (one word per row, 5 rows):
    gather moves each row's bits one edge on; grow spreads bit 1 from node 2 as far as
    ``allowed`` lets it (not into node 4), and a forbidden bit met on the way is a False."""
    x = np.array([[0], [0], [2], [4], [0]], dtype=np.uint64)
    out = np.zeros_like(x)
    bits_gather(SRC, DST, x, out, 4, 5, 1)
    assert out.ravel().tolist() == [0, 0, 0, 2, 4]
    start = np.array([[0], [0], [2], [0], [0]], dtype=np.uint64)
    allowed = np.array([[3], [3], [3], [3], [0]], dtype=np.uint64)
    grown = start.copy()
    assert bits_grow(SRC, DST, start, grown, allowed, None, 4, 5, 1) is True
    assert grown.ravel().tolist() == [0, 0, 2, 2, 0]
    forbidden = np.array([[0], [0], [0], [2], [0]], dtype=np.uint64)
    grown = start.copy()
    assert bits_grow(SRC, DST, start, grown, allowed, forbidden, 4, 5, 1) is False
    allowed[4] = 3  # now node 4 and TERMINAL (1) get it too
    grown = np.zeros_like(start)  # from below start: start's bits are taken in first
    assert bits_grow(SRC, DST, start, grown, allowed, None, 4, 5, 1) is True
    assert grown.ravel().tolist() == [0, 2, 2, 2, 2]


def _grow_by_rounds(frm, to, start, allowed):
    """The least X >= start with X = start | (gather(X) & allowed), in whole rounds over
    every edge (numpy; the reference)."""
    x = start.copy()
    while True:
        gathered = np.zeros_like(x)
        np.bitwise_or.at(gathered, to, x[frm])
        more = start | (gathered & allowed)
        if np.array_equal(more, x):
            return x
        x = more


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 200), st.integers(1, 3), st.booleans())
def test_bits_grow_reaches_the_fixpoint_of_whole_rounds(seed, rows, words, chain):
    """Random graphs (self-loops, cycles) or long chains walked backwards (each bit one
    row further per round): the work list ends at the whole rounds' fix-point, from
    ``start`` or from a set between it and the answer, and a forbidden bit of that
    fix-point is met, whatever the edges' order."""
    rng = np.random.default_rng(seed)
    if chain:
        frm = np.arange(rows - 1, 0, -1, dtype=np.int64)
        to = frm - 1
    else:
        frm = rng.integers(0, rows, 3 * rows).astype(np.int64)
        to = rng.integers(0, rows, 3 * rows).astype(np.int64)
    bits = lambda p: np.where(  # noqa: E731
        rng.random((rows, words)) < p, rng.integers(0, 2**63, (rows, words)), 0
    ).astype(np.uint64)
    start, allowed = bits(0.1), ~bits(0.3)
    want = _grow_by_rounds(frm, to, start, allowed)
    for x in (start.copy(), start | (want & bits(0.5))):
        assert bits_grow(frm, to, start, x, allowed, None, len(frm), rows, words) is True
        assert np.array_equal(x, want)
    forbidden = bits(0.05)
    met = bool((want & forbidden).any())
    x = start.copy()
    assert bits_grow(frm, to, start, x, allowed, forbidden, len(frm), rows, words) is not met


def test_bitsets_that_do_not_fit_are_refused():
    """Rows or words that disagree with the arrays, and edges naming no row: ValueError."""
    x = np.zeros((5, 1), dtype=np.uint64)
    with pytest.raises(ValueError, match="x holds"):
        bits_gather(SRC, DST, x, x.copy(), 4, 5, 2)
    with pytest.raises(ValueError, match="names no node"):
        bits_gather(SRC, DST + 3, x, x.copy(), 4, 5, 1)
    with pytest.raises(ValueError, match="names no node"):
        bits_grow(SRC - 1, DST, x, x.copy(), x, None, 4, 5, 1)
    with pytest.raises(ValueError, match="bad sizes"):
        bits_grow(SRC, DST, x, x.copy(), None, None, 4, 5, 1)


# Nodes 0-3 of types 0, 0, 1, 1; one bound row of source type 0 (bound 10, walks past it
# are > 0 after the stop is taken off).
TYPES = np.array([0, 0, 1, 1], dtype=np.int64)
SOURCES = np.array([0], dtype=np.int64)


def _doomed(totals, onward_, keeps, gone, upper=True, first=False, reach=None, out=None):
    keeps = np.array(keeps, dtype=np.int64)
    out = np.zeros(len(keeps), dtype=bool) if out is None else out
    t, o = np.array([totals], dtype=float), np.array([onward_], dtype=float)
    r = None if reach is None else np.array([reach], dtype=bool)
    doomed(t, o, r, SOURCES, TYPES, keeps, gone, upper, first, out, 1, 4, len(keeps))
    return out.tolist()


def test_doomed_every_pair_by_hand():
    """Merging nodes 2 and 3 (type 1): a walk into 2 totalling -4 (4 under the bound)
    continued by 3's onward walk of 5 passes it; with 3 instead, 2's onward 3 does not.
    Merging nodes 0 and 1 (the bound's own type): a walk may start at the merged node
    (0), so 1's onward 2 passes only where it is positive."""
    assert _doomed([-INF, -INF, -4.0, -INF], [-INF, -INF, 3.0, 5.0], [2], 3) == [True]
    assert _doomed([-INF, -INF, -INF, -4.0], [-INF, -INF, 3.0, 5.0], [2], 3) == [False]
    assert _doomed([-INF, -INF, -INF, -INF], [-1.0, 2.0, -INF, -INF], [0], 1) == [True]
    assert _doomed([-INF, -INF, -INF, -INF], [-1.0, -2.0, -INF, -INF], [0], 1) == [False]
    # lower bounds (totals and onward negated the other way): below 0 passes
    assert _doomed([INF, INF, 4.0, INF], [INF, INF, -3.0, -5.0], [2], 3, upper=False) == [True]
    assert _doomed([INF, INF, 6.0, INF], [INF, INF, -3.0, -5.0], [2], 3, upper=False) == [False]


def test_doomed_first_a_by_hand_and_never_cleared():
    """AlwaysPrecedes' rule: nodes of the bound's type (0, 1) doom a merge only when one
    is a first ``a`` (``reach``) and the other's onward walk passes the bound, whatever
    the totals; other types as the every-pair rule without the start at 0.  ``out``
    only gains answers."""
    onw = [-1.0, 2.0, -INF, -INF]
    assert _doomed([5.0, 5.0, -INF, -INF], onw, [0], 1, first=True, reach=[1, 0, 0, 0]) == [True]
    assert _doomed([5.0, 5.0, -INF, -INF], onw, [0], 1, first=True, reach=[0, 1, 0, 0]) == [False]
    tot = [-INF, -INF, -4.0, -INF]
    assert _doomed(tot, [-INF, -INF, 3.0, 5.0], [2], 3, first=True, reach=[0] * 4) == [True]
    out = np.array([True])
    assert _doomed([-INF] * 4, [-INF] * 4, [2], 3, out=out) == [True]


def test_doomed_arrays_that_do_not_fit_are_refused():
    """Nodes named out of range, sizes that disagree, no reach for the first-``a`` rule."""
    with pytest.raises(ValueError, match="keep names no node"):
        _doomed([0.0] * 4, [0.0] * 4, [4], 3)
    with pytest.raises(ValueError, match="gone names no node"):
        _doomed([0.0] * 4, [0.0] * 4, [1], -1)
    with pytest.raises(TypeError, match="reach"):
        _doomed([0.0] * 4, [0.0] * 4, [1], 2, first=True)
    with pytest.raises(ValueError, match="totals holds"):
        doomed(
            np.zeros((1, 3)),
            np.zeros((1, 4)),
            None,
            SOURCES,
            TYPES,
            np.array([1]),
            2,
            True,
            False,
            np.zeros(1, bool),
            1,
            4,
            1,
        )


def test_merged_graphs_are_the_renamed_edges_aggregated():
    """``timecheck.merge_nodes`` (:func:`merge_edges`), node after node, on random graphs
    with parallel edges: every time the graph ``aggregate_edges`` makes from the
    original edges renamed to their merged nodes, edge for edge and bit for bit."""
    from statemine.infer.synoptic.timecheck import aggregate_edges, merge_nodes

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        m = int(rng.integers(0, 40))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        lo = rng.integers(0, 50, m).astype(float)
        hi = lo + rng.integers(0, 50, m)
        types = np.zeros(n, dtype=np.int64)
        g = aggregate_edges(n, src, dst, lo, hi, types)
        group = np.arange(n)
        for _ in range(int(rng.integers(1, n + 1))):
            keep, gone = (int(v) for v in rng.choice(n, 2, replace=False))
            if group[keep] != keep or group[gone] != gone:
                continue
            group = np.where(group == gone, keep, group)
            g = merge_nodes(g, keep, gone)
            want = aggregate_edges(n, group[src], group[dst], lo, hi, types)
            for got_col, want_col in zip(
                (g.src, g.dst, g.wmin, g.wmax), (want.src, want.dst, want.wmin, want.wmax)
            ):
                assert got_col.tolist() == want_col.tolist()


def test_merge_edges_refuses_what_does_not_fit():
    """Unsorted or repeated edges, nodes out of range, arrays of other lengths."""
    src, dst, w = np.array([0, 2], dtype=np.int64), np.array([2, 1], dtype=np.int64), np.zeros(2)

    def call(s=src, d=dst, n=3, keep=2, gone=1, out=2):
        outs = [np.empty(out, np.int64), np.empty(out, np.int64), np.empty(out), np.empty(out)]
        return merge_edges(s, d, w, w, 2, n, keep, gone, *outs)

    assert call() == 2
    with pytest.raises(ValueError, match="not sorted"):
        call(s=src[::-1].copy(), d=dst[::-1].copy())
    with pytest.raises(ValueError, match="names no node"):
        call(gone=3)
    with pytest.raises(ValueError, match="names no node"):
        call(n=2)
    with pytest.raises(ValueError, match="out_src holds"):
        call(out=1)


def _merged(stop=None, x=None, keep=3, gone=4, first=None):
    """Walks from the type-0 node 2 of INITIAL -> 2 -> {3, 4} -> TERMINAL (2 -> 3 in 5,
    2 -> 4 in 7) before node 4 is merged into node 3 (one type): 3 and TERMINAL at 5 and
    7; after it, 2 -> 3 in 5-7."""
    before = np.array([[-INF, 7.0, -INF, 5.0, 7.0]])
    src, dst = np.array([0, 2, 3], dtype=np.int64), np.array([2, 3, 1], dtype=np.int64)
    types, sources = np.array([-1, -1, 0, 1, 1], dtype=np.int64), np.array([0], dtype=np.int64)
    stop = np.full((1, 5), INF) if stop is None else stop
    x = np.empty((1, 5)) if x is None else x
    status = merged_rounds(
        src,
        dst,
        np.array([0.0, 7.0, 0.0]),
        before,
        keep,
        gone,
        types,
        sources,
        first,
        None,
        None,
        stop,
        x,
        3,
        1,
        5,
        True,
        16,
    )
    return status, x


def test_merged_rounds_by_hand():
    """After the merge node 3's walks reach 7 and node 4 has none (settled); with a bound
    of 6 at node 3 the rounds stop; first-``a`` walks from no first ``a`` reach nothing
    new, so the merged totals before stay."""
    status, x = _merged()
    assert (status, x.tolist()) == (0, [[-INF, 7.0, -INF, 7.0, -INF]])
    assert _merged(stop=np.array([[INF, INF, INF, 6.0, INF]]))[0] == 1
    status, x = _merged(first=np.zeros((1, 5), dtype=bool))
    assert (status, x.tolist()) == (0, [[-INF, 7.0, -INF, 7.0, -INF]])


def test_merged_rounds_refuses_what_does_not_fit():
    """Nodes out of range, arrays of other sizes."""
    with pytest.raises(ValueError, match="names no node"):
        _merged(gone=5)
    with pytest.raises(ValueError, match="x holds"):
        _merged(x=np.empty((1, 4)))
