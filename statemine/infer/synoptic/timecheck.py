"""Model checking of Perfume's performance-constrained invariants (Ohmann et al., ASE 2014).

A Perfume model is a partition graph whose edges carry the time deltas of the event-level
transitions they stand for.  A constrained invariant ``a X(t) b, lowerbound = L`` /
``upperbound = U`` holds on the model when every walk from an ``a`` node to a later ``b``
node (``a`` node for IntrBy) takes at least ``L`` when each edge counts its *smallest*
delta, and at most ``U`` when each edge counts its *largest* delta.  Which walks count is
Perfume's, read in ModelInference/synoptic ``invariants/fsmcheck`` (``AFbyUpperTracingSet``,
``APUpperTracingSet``, ``*LowerTracingSet``, ``IntrBy*TracingSet``: automata run along the
model's paths from INITIAL, adding up the max/min delta of each edge; semantics only, no
code taken):

* every bound but one: every (``a``, later ``b``) pair of a walk.  For an upper bound the
  automaton's clock runs from the path's first ``a`` and is never reset, so its largest
  total is that of the longest (a, b) walk; lower bounds reset at each ``a``, the shortest
  walk starts at the latest one; with deltas >= 0 both are every pair.
* **AlwaysPrecedes upper bound: only (first ``a`` of a path, a ``b`` before the next
  ``a``)**.  ``APUpperTracingSet`` starts its clock at the first ``a`` and has no
  transition for a second ``a`` (the path is no longer followed), so a ``b`` after a later
  ``a`` is never timed.  The real Perfume's models need this rule: its 9-node
  ``perfume-repo-radius-auth`` model (``../shared/synoptic-oracle``) satisfies every mined
  bound under it but breaks ``Access-Request AlwaysPrecedes(t) Access-Accept, upperbound =
  352`` if every pair counted (Request -> slow Challenge -> Request -> Accept takes 3,312);
  the mined bound itself is the largest delta over every pair (README-perfume-ktails.md),
  so traces meet it under either rule.

The untimed part (``a AFby b``, ``a AP b``, ``a NFby b``, ``a IntrBy b``) must hold as well.

Times are exact: the decimal time texts are scaled to integers (``ticks``) held in
float64, exact below 2**53 (beyond, the plain float times are used).  Deltas are >= 0
(times within a trace are non-decreasing), so a shortest walk is a simple path, and a
longest walk is unbounded exactly when a cycle with a positive edge lies on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...errors import InputError
from ._walks import closure as reach_closure
from ._walks import merge_edges, merged_rounds, relax_rounds
from .check import InvariantCodes, violated_edges
from .invariants import AP
from .log import EventLog

if TYPE_CHECKING:
    from scipy.sparse import csr_array

INTRBY = "IntrBy"
_EXACT_LIMIT = float(2**53)


def exact_ticks(log: EventLog) -> tuple[np.ndarray, int]:
    """``(ticks, scale)``: every event's time as written x 10**scale (float64 holding an
    integer, so sums and differences are exact), ``scale`` the most decimal places of any
    time text.  Falls back to the float times (scale 0) when the integers would pass 2**53."""
    texts = log.time_texts()
    try:
        decs = [Decimal(t) for t in texts]
    except InvalidOperation:
        return np.asarray(log.times, dtype=np.float64), 0
    exps = [d.as_tuple().exponent for d in decs]
    scale = max([-e for e in exps if isinstance(e, int)] + [0])
    unit = Decimal(10) ** scale
    ints = [int(d * unit) for d in decs]
    if ints and max(abs(i) for i in ints) >= _EXACT_LIMIT:
        return np.asarray(log.times, dtype=np.float64), 0
    return np.asarray(ints, dtype=np.float64), scale


def bound_ticks(value: str, scale: int) -> float:
    """A bound's text in ticks (10**-scale units)."""
    return float(Decimal(value).scaleb(scale))


@dataclass(frozen=True)
class TimedCodes:
    """Perfume's invariants coded for checking: ``untimed`` (the distinct untimed
    AFby/NFby/AP forms, for :func:`~.check.violated_edges`), ``intr_a/intr_b`` (the
    distinct IntrBy pairs), ``bound_a/bound_b/bound_value/bound_upper`` (the time bounds
    in ticks; for IntrBy ``bound_b == bound_a``).  ``row_untimed``, ``row_intr``,
    ``row_bound``: per row of the :func:`~.perfume.mine_constrained` frame, its index in
    each of those (-1: none)."""

    untimed: InvariantCodes
    intr_a: np.ndarray
    intr_b: np.ndarray
    bound_a: np.ndarray
    bound_b: np.ndarray
    bound_value: np.ndarray
    bound_upper: np.ndarray
    bound_first_only: np.ndarray
    row_untimed: np.ndarray
    row_intr: np.ndarray
    row_bound: np.ndarray

    @property
    def n_rows(self) -> int:
        """Rows of the invariant frame."""
        return len(self.row_bound)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, types: list[str], scale: int) -> TimedCodes:
        """Code the constrained invariants ``frame`` (``kind, first, second, bound,
        value``) over the log's type names; the untimed form of each bounded invariant is
        checked once."""
        code = {t: i for i, t in enumerate(types)}
        kinds = frame["kind"].tolist()
        firsts = [code[x] for x in frame["first"]]
        seconds = [code[x] for x in frame["second"]]
        bounds = frame["bound"].tolist()
        values = frame["value"].tolist()
        untimed_idx: dict[tuple, int] = {}
        intr_idx: dict[tuple, int] = {}
        ba: list[int] = []
        bb: list[int] = []
        bv: list[float] = []
        bu: list[bool] = []
        bf: list[bool] = []
        n = len(kinds)
        row_u, row_i, row_b = np.full(n, -1), np.full(n, -1), np.full(n, -1)
        for i, (k, a, b, bound, value) in enumerate(zip(kinds, firsts, seconds, bounds, values)):
            if k == INTRBY:
                row_i[i] = intr_idx.setdefault((a, b), len(intr_idx))
            else:
                row_u[i] = untimed_idx.setdefault((k, a, b), len(untimed_idx))
            if bound:
                row_b[i] = len(ba)
                ba.append(a)
                bb.append(a if k == INTRBY else b)
                bv.append(bound_ticks(value, scale))
                bu.append(bound == "upperbound")
                bf.append(bound == "upperbound" and k == AP)
        keys = list(untimed_idx)
        untimed = InvariantCodes.from_frame(
            pd.DataFrame(
                {
                    "kind": [k for k, _, _ in keys],
                    "first": [types[a] for _, a, _ in keys],
                    "second": [types[b] for _, _, b in keys],
                }
            ),
            dict(code),
        )
        intr = list(intr_idx)
        return cls(
            untimed,
            np.array([a for a, _ in intr], dtype=np.int64),
            np.array([b for _, b in intr], dtype=np.int64),
            np.array(ba, dtype=np.int64),
            np.array(bb, dtype=np.int64),
            np.array(bv, dtype=np.float64),
            np.array(bu, dtype=bool),
            np.array(bf, dtype=bool),
            row_u.astype(np.int64),
            row_i.astype(np.int64),
            row_b.astype(np.int64),
        )


@dataclass(frozen=True)
class TimedGraph:
    """A model as an edge list with the smallest and largest delta (ticks) of each edge
    (0 on edges from INITIAL and into TERMINAL, which carry no time); ``src`` ascending
    (:func:`aggregate_edges` sorts by source, then target), which the CSR graphs here
    rely on."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    wmin: np.ndarray
    wmax: np.ndarray
    node_type: np.ndarray

    @cached_property
    def dst_order(self) -> np.ndarray:
        """Edge indices sorted by target (stable), computed once per graph."""
        return np.argsort(self.dst, kind="stable")

    @cached_property
    def by_dst(self) -> _ByTarget:
        """The edges in :attr:`dst_order`, computed once per graph (every bound group's
        :func:`walk_extremes` relaxes them)."""
        return _ByTarget.of(self)

    @cached_property
    def cyclic(self) -> np.ndarray:
        """Nodes on a cycle with a positive largest delta (:func:`positive_cycle_nodes`
        without blocked nodes), computed once per graph."""
        return _positive_cycles(self)


def timed_graph(
    part: np.ndarray, node_type: np.ndarray, log: EventLog, ticks: np.ndarray
) -> TimedGraph:
    """The :class:`TimedGraph` of the partition ``part`` (node per event; nodes 0/1 are
    INITIAL/TERMINAL) of ``log``: one edge per (node, successor's node) with the min/max
    of ``ticks[next] - ticks[event]``."""
    n = len(node_type)
    nxt = np.empty_like(part)
    nxt[:-1] = part[1:]
    nxt[log.is_last] = 1
    delta = np.zeros(len(part), dtype=np.float64)
    delta[:-1] = ticks[1:] - ticks[:-1]
    delta[log.is_last] = 0.0
    src = np.concatenate([np.zeros(log.n_traces, dtype=np.int64), part])
    dst = np.concatenate([part[log.starts[:-1]], nxt])
    delta = np.concatenate([np.zeros(log.n_traces), delta])
    return aggregate_edges(n, src, dst, delta, delta, node_type)


def aggregate_edges(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    wmin: np.ndarray,
    wmax: np.ndarray,
    node_type: np.ndarray,
) -> TimedGraph:
    """Merge parallel edges (same ``src``, ``dst``): min of ``wmin``, max of ``wmax``."""
    key = src * n + dst
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = run_starts(key)
    uk = key[starts]
    return TimedGraph(
        n,
        uk // n,
        uk % n,
        np.minimum.reduceat(wmin[order], starts),
        np.maximum.reduceat(wmax[order], starts),
        node_type,
    )


def merge_nodes(g: TimedGraph, keep: int, gone: int) -> TimedGraph:
    """``g`` with node ``gone`` merged into ``keep`` (``gone`` left without edges): the
    :func:`aggregate_edges` of its edges renamed, in C (:func:`~._walks.merge_edges`; min
    and max give the same ranges whether parallel edges are joined at once or in two
    stages, so a model's graph merged node by node is the one aggregated from its
    events').

    >>> g = aggregate_edges(
    ...     4, np.array([0, 2, 3]), np.array([2, 1, 1]), np.array([0.0, 5.0, 7.0]),
    ...     np.array([0.0, 5.0, 7.0]), np.array([-1, -1, 0, 0]))
    >>> m = merge_nodes(g, 2, 3)
    >>> m.src.tolist(), m.dst.tolist(), m.wmin.tolist(), m.wmax.tolist()
    ([0, 2], [2, 1], [0.0, 5.0], [0.0, 7.0])
    """
    m = len(g.src)
    src, dst = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
    wmin, wmax = np.empty(m), np.empty(m)
    k = merge_edges(
        np.ascontiguousarray(g.src, dtype=np.int64),
        np.ascontiguousarray(g.dst, dtype=np.int64),
        np.ascontiguousarray(g.wmin, dtype=np.float64),
        np.ascontiguousarray(g.wmax, dtype=np.float64),
        m,
        g.n,
        keep,
        gone,
        src,
        dst,
        wmin,
        wmax,
    )
    return TimedGraph(g.n, src[:k], dst[:k], wmin[:k], wmax[:k], g.node_type)


def run_starts(key: np.ndarray) -> np.ndarray:
    """Where each run of equal values of the sorted ``key`` starts (indices)."""
    new = np.empty(len(key), dtype=bool)
    new[:1] = True
    np.not_equal(key[1:], key[:-1], out=new[1:])
    return np.flatnonzero(new)


@dataclass(frozen=True)
class _ByTarget:
    """A graph's edges sorted by target (``src``, ``dst``, ``wmin``, ``wmax`` in that
    order), ``indegree`` per node, ``starts`` where each target's run of edges starts and
    ``targets`` its node."""

    src: np.ndarray
    dst: np.ndarray
    wmin: np.ndarray
    wmax: np.ndarray
    indegree: np.ndarray
    starts: np.ndarray
    targets: np.ndarray

    @classmethod
    def of(cls, g: TimedGraph) -> _ByTarget:
        order = g.dst_order
        d = g.dst[order]
        starts = run_starts(d)
        return cls(
            g.src[order],
            d,
            g.wmin[order],
            g.wmax[order],
            np.bincount(d, minlength=g.n),
            starts,
            d[starts],
        )


class _Relax:
    """Per-row walk extremes over an edge list: ``step(x)[r, v]`` = max (or min) over
    edges ``u -> v`` of ``x[r, u] + w``.  Nodes without incoming edges get -inf (+inf)."""

    def __init__(self, g: TimedGraph, upper: bool):
        e = g.by_dst
        self.src, self.dst = e.src, e.dst
        self.w = e.wmax if upper else e.wmin
        self.indegree, self.starts, self.targets = e.indegree, e.starts, e.targets
        self.upper = upper
        self.n = g.n

    def into(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(edges, at, seg)``: ``at`` the successors of the nodes of the bool mask
        ``nodes`` (ascending), ``edges`` the indices (in this order, by target) of every
        edge into them, ``seg`` where each target's edges start in ``edges``."""
        hit = np.zeros(self.n, dtype=bool)
        hit[self.dst[nodes[self.src]]] = True
        at = np.flatnonzero(hit)
        seg = np.zeros(len(at), dtype=np.int64)
        np.cumsum(self.indegree[at][:-1], out=seg[1:])
        return np.flatnonzero(hit[self.dst]), at, seg

    def step(self, x: np.ndarray) -> np.ndarray:
        out = np.full(x.shape, -np.inf if self.upper else np.inf)
        if len(self.src):
            vals = x[:, self.src]
            vals += self.w
            red = (np.maximum if self.upper else np.minimum).reduceat(vals, self.starts, axis=1)
            out[:, self.targets] = red
        return out


def first_nodes(g: TimedGraph, types: np.ndarray) -> np.ndarray:
    """``out[r, v]``: node ``v`` has type ``types[r]`` and some path from INITIAL (node 0)
    reaches it through no other node of that type (an occurrence of the *first* ``a`` of
    a model path).  One breadth-first search (:func:`closure`) from INITIAL over the
    edges that leave no ``a`` node."""
    return first_reach(g, types) & (g.node_type[None, :] == types[:, None])


def first_reach(g: TimedGraph, types: np.ndarray, init: np.ndarray | None = None) -> np.ndarray:
    """``out[r, v]``: some path from INITIAL reaches ``v`` through no node of type
    ``types[r]`` before it (:func:`first_nodes` is its ``types[r]`` nodes).  ``init``: a
    subset of the answer to start from (e.g. the answer on a model this one was made from
    by merging two nodes of one type: every path there is one here, through nodes of the
    same types), grown by rounds of every edge (:func:`closure`'s ``init``)."""
    is_a = g.node_type[None, :] == types[:, None]
    seeds = np.zeros(is_a.shape, dtype=bool)
    seeds[:, 0] = True
    return closure(g, seeds, ~is_a, init)


def closure(
    g: TimedGraph, seeds: np.ndarray, through: np.ndarray, init: np.ndarray | None = None
) -> np.ndarray:
    """``out[r, v]``: ``v`` is a node of ``seeds[r]`` or the end of a walk from one whose
    every edge leaves a node of ``through[r]`` (bool arrays of shape (rows, ``g.n``)):
    the least ``x`` holding ``seeds`` with ``x[r, v]`` whenever an edge ``u -> v`` has
    ``x[r, u] & through[r, u]``, which iterating one edge step at a time reaches after
    up to ``g.n`` rounds of every edge.  Here a depth-first search per row in C
    (:func:`~._walks.closure`; reachability does not depend on the search order).
    ``init``: a subset of the answer known beforehand (e.g. the answer on a model this
    one was made from by merging nodes), searched on from ``seeds | init``; the same
    set."""
    x = np.array(seeds if init is None else seeds | init, dtype=bool, order="C")
    reach_closure(
        np.ascontiguousarray(g.src, dtype=np.int64),
        np.ascontiguousarray(g.dst, dtype=np.int64),
        x,
        np.ascontiguousarray(through, dtype=bool),
        len(g.src),
        x.shape[0],
        g.n,
    )
    return x


def _sorted_csr(size: int, heads: np.ndarray, tails: np.ndarray) -> csr_array:
    """The ``size x size`` sparse matrix (scipy ``csr_array``, data 1.0) of the edges
    ``heads[i] -> tails[i]``, ``heads`` ascending (as :func:`aggregate_edges` leaves
    ``TimedGraph.src``, and so row-major copies of its edges): the row pointers are the
    running count of edges per head, with no sort of a COO matrix."""
    from scipy.sparse import csr_array

    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(heads, minlength=size), out=indptr[1:])
    return csr_array((np.ones(len(tails)), tails, indptr), shape=(size, size))


def _positive_cycles(g: TimedGraph, keep: np.ndarray | None = None) -> np.ndarray:
    """Nodes in a strongly connected component of the edges ``keep`` (default: all) of
    ``g`` that holds one of them with a positive ``wmax``."""
    from scipy.sparse.csgraph import connected_components

    src, dst, wmax = (
        (g.src, g.dst, g.wmax) if keep is None else (g.src[keep], g.dst[keep], g.wmax[keep])
    )
    # src stays sorted (aggregate_edges)
    n_comp, comp = connected_components(
        _sorted_csr(g.n, src, dst), directed=True, connection="strong"
    )
    return _marked(comp, n_comp, comp[src[(comp[src] == comp[dst]) & (wmax > 0)]])


def _marked(comp: np.ndarray, n_comp: int, hit: np.ndarray) -> np.ndarray:
    """Per node: is its component ``comp`` (of ``n_comp``) one of ``hit``?  (A mask
    lookup: ``np.isin`` sorts, several times the cost on these small arrays.)"""
    mark = np.zeros(n_comp, dtype=bool)
    mark[hit] = True
    return mark[comp]


def positive_cycle_nodes(g: TimedGraph, blocked: np.ndarray | None = None) -> np.ndarray:
    """Nodes on a cycle with a positive largest delta: those in a strongly connected
    component holding an edge of positive ``wmax`` (any edge of a component lies on a
    cycle).  ``blocked[r]``: per row, nodes whose outgoing edges do not count (walks end
    there); returns one row per ``blocked`` row, or one row.  Blocking only removes
    edges, so when the whole graph has no such cycle no row has one (one strongly
    connected components pass instead of one per row)."""
    out = np.zeros((1 if blocked is None else len(blocked), g.n), dtype=bool)
    full = g.cyclic
    if not full.any() or not len(out):
        return out
    if blocked is None:
        out[0] = full
        return out
    return _positive_cycles_rows(g, ~blocked[:, g.src])


def _positive_cycles_rows(g: TimedGraph, keep: np.ndarray) -> np.ndarray:
    """``out[r]``: :func:`_positive_cycles` of the edges ``keep[r]`` (bool, rows x
    edges), all rows in one strongly connected components pass over the graph of
    ``rows x g.n`` nodes (row ``r``'s copy of each edge it keeps): components never
    span two rows' copies, so each row's components are its own graph's."""
    from scipy.sparse.csgraph import connected_components

    n_rows, n = keep.shape[0], g.n
    rows, k = np.nonzero(keep)  # row-major, g.src ascending: heads ascend
    heads, tails = rows * n + g.src[k], rows * n + g.dst[k]
    graph = _sorted_csr(n_rows * n, heads, tails)
    n_comp, comp = connected_components(graph, directed=True, connection="strong")
    inner = (comp[heads] == comp[tails]) & (g.wmax[k] > 0)
    return _marked(comp, n_comp, comp[heads[inner]]).reshape(n_rows, n)


#: Rounds of :func:`walk_extremes` before it looks for positive cycles to mark (a merge
#: check's rounds from the totals before the merge settle in a few).
CYCLE_ROUNDS = 16

#: :func:`~._walks.relax_rounds`'s answers when a total passed ``stop`` and when its
#: rounds have not settled.
ROUNDS_STOPPED, ROUNDS_GROWING = 1, 2


def walk_extremes(
    g: TimedGraph,
    sources: np.ndarray,
    upper: bool,
    first_only: bool = False,
    cap: np.ndarray | None = None,
    stop: np.ndarray | None = None,
    init: np.ndarray | None = None,
    first: np.ndarray | None = None,
    cycle_rounds: int = CYCLE_ROUNDS,
) -> np.ndarray:
    """``out[r, v]``: the largest (``upper``, edges weighted by their largest delta) or
    smallest (edges weighted by their smallest delta) total of a walk of >= 1 edge from a
    node of type ``sources[r]`` to ``v``; -inf / +inf when there is none, +inf (upper)
    when such walks are unbounded (a positive cycle).  ``first_only``: walks start at a
    first ``a`` of a model path (:func:`first_nodes`) and do not pass another ``a`` node
    (Perfume's AlwaysPrecedes upper-bound automaton).

    Bellman-Ford over all rows at once (in C, :func:`~._walks.relax_rounds`, bit for
    bit, unless ``cycle_rounds`` is 0: then the rounds here, the reference): n + 1
    rounds at most; nodes still growing after that are fed by a positive cycle, and so
    is everything they reach.  ``cap[r]``
    (upper only): totals above it are cut to it (a verdict against bounds below the cap
    is unchanged, and cycles stop growing there).  ``stop[r, v]``: return as soon as a
    total passes it (above for upper, below for lower; totals only move that way while
    iterating, and every total met is that of a real walk, so that is final).  ``init``:
    start the iteration there instead of "no walk" (it must be below the answer for
    upper, above for lower, e.g. the answer on a finer model; the result is the same).
    ``first`` (``first_only``): :func:`first_nodes`'s answer, when already known.
    ``cycle_rounds``: rounds before the nodes on positive cycles are looked for (and
    their totals set to +inf, then capped) in the graph; before that, totals grow along
    cycles round by round (0: from the first round, in Python).  The answer does not
    depend on it; on a graph without positive cycles that settles within it, no
    strongly connected components are computed."""
    none = -np.inf if upper else np.inf
    is_src = g.node_type[None, :] == sources[:, None]
    starts = is_src
    if first_only:
        starts = first_nodes(g, sources) if first is None else first
    start = np.where(starts, 0.0, none)
    better = np.maximum if upper else np.minimum
    limit = cap[:, None] if cap is not None else None
    # upper: a node on a positive cycle that a walk reaches has unbounded totals; found
    # only when the rounds have not settled after ``cycle_rounds``
    cyclic: np.ndarray | None = None

    def finish(out: np.ndarray, at: np.ndarray | slice) -> np.ndarray:
        """Positive cycles and the cap on a round's totals ``out`` of the nodes ``at``."""
        if cyclic is not None:
            out[cyclic[:, at] & (out > -np.inf)] = np.inf
        return out if limit is None else np.minimum(out, limit, out=out)

    def step(x: np.ndarray) -> np.ndarray:
        if first_only:
            x = np.where(is_src, none, x)
        out = relax.step(better(x, start))
        better(x, out, out=out)
        return finish(out, slice(None))

    def step_at(x: np.ndarray, edges: np.ndarray, at: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """:func:`step`'s totals of the nodes ``at`` alone (every edge into them:
        ``edges``, in :class:`_Relax`'s order, each node's from ``seg``)."""
        src = relax.src[edges]
        vals = x[:, src]
        own = x[:, at]
        if first_only:
            vals[is_src[:, src]] = none
            own[is_src[:, at]] = none
        better(vals, start[:, src], out=vals)
        vals += relax.w[edges]
        better(own, better.reduceat(vals, seg, axis=1), out=own)
        return finish(own, at)

    x = np.full(start.shape, none) if init is None else init
    if cycle_rounds:
        # The same rounds in C (_walks.c, bit for bit): ``cycle_rounds`` of them, then,
        # when they have not settled, up to ``g.n + 1`` with the positive cycles' nodes
        # marked; what still grows after that is answered by the rounds below, from the
        # start (the answer does not depend on ``cycle_rounds``).
        x = np.array(x, dtype=np.float64, order="C")
        args = (
            np.ascontiguousarray(g.src, dtype=np.int64),
            np.ascontiguousarray(g.dst, dtype=np.int64),
            np.ascontiguousarray(g.wmax if upper else g.wmin, dtype=np.float64),
            x,
            np.ascontiguousarray(start),
            np.ascontiguousarray(is_src) if first_only else None,
            None if cap is None else np.ascontiguousarray(cap, dtype=np.float64),
            None if stop is None else np.ascontiguousarray(stop, dtype=np.float64),
        )
        sizes = (len(g.src), x.shape[0], g.n, upper)
        if relax_rounds(*args, None, *sizes, cycle_rounds) != ROUNDS_GROWING:
            return x
        marks = None
        if upper:
            found = positive_cycle_nodes(g, is_src if first_only else None)
            if found.any():
                marks = np.ascontiguousarray(np.broadcast_to(found, x.shape))
        if relax_rounds(*args, marks, *sizes, g.n + 1) != ROUNDS_GROWING:
            return x
        return walk_extremes(g, sources, upper, first_only, cap, stop, init, first, 0)
    relax = _Relax(g, upper)
    cols: np.ndarray | None = None  # nodes whose totals the last round changed
    at: np.ndarray | slice = slice(None)  # the nodes the last round recomputed
    # n + 1 rounds from the marking on (which starts them again from the totals so far)
    for rounds in range(cycle_rounds + g.n + 1):
        if upper and rounds == cycle_rounds:
            # Not settled yet: mark the positive cycles' nodes from here on.  The totals
            # so far are those of real walks (capped), below the answer, so the rounds
            # go on from them to the same answer as when marking from the first round;
            # merge checks on models without positive cycles (the connection logs'
            # always) settle first and never pay for the strongly connected components
            # (9% of a whole run's CPU on the benchmark's 2,000-event connection log).
            cyclic = positive_cycle_nodes(g, is_src if first_only else None)
            if cyclic.any():
                cols = None  # a whole round next: it marks every node reached so far
            else:
                cyclic = None  # nothing to mark: one test instead of one per round
        # After a round, a node none of whose predecessors changed keeps its total in
        # the next (every part of a round is idempotent for fixed inputs), so only the
        # successors of changed nodes are recomputed, over every edge into them: the
        # very totals of a whole round, for less work when few nodes change.
        at = slice(None)
        if cols is not None:
            edges, nodes, seg = relax.into(cols)
            if 2 * len(edges) < len(relax.src):
                at = nodes
        if isinstance(at, slice):
            vals = nxt = step(x)
        else:
            vals = step_at(x, edges, at, seg) if len(at) else x[:, at]
        changed = vals != x[:, at]
        if not changed.any():
            return x
        if not isinstance(at, slice):
            nxt = x.copy()
            nxt[:, at] = vals
        if stop is not None:
            # totals outside ``at`` are those the previous round checked
            edge = stop[:, at]
            if ((vals > edge) if upper else (vals < edge)).any():
                return nxt
        cols = np.zeros(g.n, dtype=bool)
        cols[at] = changed.any(axis=0)
        x = nxt
    # still growing: positive cycles; everything reachable from a changed node is unbounded
    grow = np.zeros(x.shape, dtype=bool)
    grow[:, at] = changed
    grow = closure(g, grow, ~is_src if first_only else np.ones_like(grow))
    x[grow] = np.inf
    return x


class _Reach:
    """``reach(m)[r, v]``: some edge ``u -> v`` has ``m[r, u]``."""

    def __init__(self, g: TimedGraph):
        self.g = g

    def __call__(self, m: np.ndarray) -> np.ndarray:
        out = np.zeros_like(m)
        hit = m[:, self.g.src]
        rows, k = np.nonzero(hit)
        out[rows, self.g.dst[k]] = True
        return out


def _per_type(values: np.ndarray, node_type: np.ndarray, n_types: int, upper: bool) -> np.ndarray:
    """``out[r, t]``: max (min) of ``values[r, v]`` over the nodes ``v`` of type ``t``."""
    none = -np.inf if upper else np.inf
    out = np.full((values.shape[0], max(n_types, 1)), none)
    real = np.nonzero(node_type >= 0)[0]
    ufunc = np.maximum if upper else np.minimum
    ufunc.at(out.T, node_type[real], values[:, real].T)
    return out


@dataclass(frozen=True)
class _BoundGroup:
    """The bounds of one kind (upper or lower; AlwaysPrecedes' first-a-only or every
    pair), ready for :func:`walk_extremes`: ``sel`` their indices in ``codes``, one walk
    per distinct source type (``sources``; ``row`` maps each bound to it), ``stop`` the
    tightest bound per (source, node), ``cap`` the walks' cut-off (upper bounds only)."""

    upper: bool
    first_only: bool
    sel: np.ndarray
    sources: np.ndarray
    row: np.ndarray
    cap: np.ndarray | None
    stop: np.ndarray


def _bound_groups(g: TimedGraph, codes: TimedCodes, n_types: int) -> list[_BoundGroup]:
    """The non-empty bound groups of ``codes`` on ``g``."""
    groups = []
    nt = np.where(g.node_type >= 0, g.node_type, 0)
    for upper, first_only in ((True, False), (True, True), (False, False)):
        mask = codes.bound_upper == upper
        if upper:
            mask &= codes.bound_first_only == first_only
        sel = np.nonzero(mask)[0]
        if not sel.size:
            continue
        none = np.inf if upper else -np.inf
        sources, row = np.unique(codes.bound_a[sel], return_inverse=True)
        row = row.ravel()
        target, limit = codes.bound_b[sel], codes.bound_value[sel]
        # per (row, type): the tightest bound, spread to the nodes of that type
        tight = np.full((len(sources), max(n_types, 1)), none)
        (np.minimum if upper else np.maximum).at(tight, (row, target), limit)
        stop = np.where(g.node_type[None, :] >= 0, tight[:, nt], none)
        cap = None
        if upper:
            cap = np.full(len(sources), -np.inf)
            np.maximum.at(cap, row, limit)
            cap = cap + 1.0
        groups.append(_BoundGroup(upper, first_only, sel, sources, row, cap, stop))
    return groups


def bound_violations(
    g: TimedGraph, codes: TimedCodes, n_types: int, any_only: bool = False
) -> np.ndarray:
    """Bool per bound of ``codes`` (``bound_*`` arrays): does the model break it?  An
    AlwaysPrecedes upper bound counts only the pairs (first a of a path, b before the next
    a), every other bound every (a, later b) pair of a walk (module doc).  ``any_only``:
    stop at the first violation found (the answer's ``any()`` is right, not every entry)."""
    bad = np.zeros(len(codes.bound_a), dtype=bool)
    for b in _bound_groups(g, codes, n_types):
        stop = b.stop if any_only else None
        walks = walk_extremes(g, b.sources, b.upper, b.first_only, b.cap, stop)
        ext = _per_type(walks, g.node_type, n_types, b.upper)
        got = ext[b.row, codes.bound_b[b.sel]]
        limit = codes.bound_value[b.sel]
        bad[b.sel] = got > limit if b.upper else got < limit
        if any_only and bad.any():
            return bad
    return bad


@dataclass(frozen=True)
class Walks:
    """A model's walk totals per bound group (:func:`walk_extremes`) and, for an
    AlwaysPrecedes first-``a`` group, the nodes a path from INITIAL reaches before its
    first ``a`` (:func:`first_reach`; None for the other groups)."""

    totals: list[np.ndarray]
    reach: list[np.ndarray | None]


class BoundCheck:
    """The time bounds of ``codes`` on a model and on models made from it by merging
    nodes (coarsening), each check starting from the current model's walk totals
    (``walk_extremes(init=...)``: merging only adds walks and widens edge ranges, so the
    current totals are below (upper) / above (lower) the merged model's) and first-``a``
    reach (``first_reach(init=...)``: merging only adds paths).  ``fix`` is None when a
    bound already fails on the current model.  ``start``: walks known on ``g`` (totals
    below (upper) / above (lower) its own, reach a subset of its: e.g. a coarser model's
    at the nodes the nodes it split do not reach), to start its walks from."""

    def __init__(self, g: TimedGraph, codes: TimedCodes, n_types: int, start: Walks | None = None):
        self.groups = [
            (b.upper, b.first_only, b.sources, b.cap, b.stop)
            for b in _bound_groups(g, codes, n_types)
        ]
        self.fix: Walks | None = None
        self.fix = self.check(g, start=start)

    def check(
        self, g: TimedGraph, merged: tuple[int, int] | None = None, start: Walks | None = None
    ) -> Walks | None:
        """The walks of each bound group on ``g`` (the current model with node
        ``merged[1]`` merged into ``merged[0]``, or the current model itself, its walks
        from ``start`` when given), None as soon as a bound fails."""
        totals: list[np.ndarray] = []
        reach: list[np.ndarray | None] = []
        fix = self.fix if merged is not None else None  # the walks before the merge
        for k, (upper, first_only, sources, cap, stop) in enumerate(self.groups):
            init = seen = before = None
            if start is not None:
                init, seen = start.totals[k], start.reach[k]
            elif fix is not None and merged is not None:
                old = fix.reach[k]
                if old is not None:
                    seen = merged_columns(old, merged[0], merged[1], True)
            first = None
            if first_only:
                before, seen = seen, first_reach(g, sources, seen)
                first = seen & (g.node_type[None, :] == sources[:, None])
            if fix is not None and merged is not None:
                # the totals before, their columns merged, are a fix-point of the rounds
                # here but at the merged node and, for first-``a`` walks, at new first
                # ``a``: the first round starts there
                new_first = None if first is None or before is None else first & ~before
                x = self._merged_walks(g, k, merged, first, new_first)
            else:
                walks = walk_extremes(g, sources, upper, first_only, cap, stop, init, first)
                x = _within(walks, stop, upper)
            if x is None:
                return None
            totals.append(x)
            reach.append(seen)
        return Walks(totals, reach)

    def _merged_walks(
        self,
        g: TimedGraph,
        k: int,
        merged: tuple[int, int],
        first: np.ndarray | None,
        new_first: np.ndarray | None,
    ) -> np.ndarray | None:
        """Bound group ``k``'s walks on ``g`` (the current model with ``merged[1]``
        merged into ``merged[0]``) from the current ones, in C
        (:func:`~._walks.merged_rounds`: :func:`walk_extremes`'s rounds with ``init``
        the merged columns, the first relaxing only the edges out of the merged node and
        ``new_first``, where the totals before may not be a fix-point); None when a
        bound fails.  Walks still growing after ``CYCLE_ROUNDS`` go on in
        :func:`walk_extremes` from the totals reached."""
        assert self.fix is not None
        upper, first_only, sources, cap, stop = self.groups[k]
        before = np.ascontiguousarray(self.fix.totals[k], dtype=np.float64)
        x = np.empty_like(before)
        status = merged_rounds(
            np.ascontiguousarray(g.src, dtype=np.int64),
            np.ascontiguousarray(g.dst, dtype=np.int64),
            np.ascontiguousarray(g.wmax if upper else g.wmin, dtype=np.float64),
            before,
            merged[0],
            merged[1],
            np.ascontiguousarray(g.node_type, dtype=np.int64),
            np.ascontiguousarray(sources, dtype=np.int64),
            None if first is None else np.ascontiguousarray(first),
            None if new_first is None else np.ascontiguousarray(new_first),
            None if cap is None else np.ascontiguousarray(cap, dtype=np.float64),
            np.ascontiguousarray(stop, dtype=np.float64),
            x,
            len(g.src),
            len(before),
            g.n,
            upper,
            CYCLE_ROUNDS,
        )
        if status == ROUNDS_STOPPED:  # merged_rounds also looks once the rounds settled
            return None
        if status == ROUNDS_GROWING:
            walks = walk_extremes(g, sources, upper, first_only, cap, stop, x, first, 1)
            return _within(walks, stop, upper)
        return x


def _within(x: np.ndarray, stop: np.ndarray, upper: bool) -> np.ndarray | None:
    """``x`` unless a total passes ``stop`` (above it for upper bounds, below for lower)."""
    return None if ((x > stop) if upper else (x < stop)).any() else x


def merged_columns(x: np.ndarray, keep: int, gone: int, upper: bool) -> np.ndarray:
    """A copy of per-node columns ``x`` with ``gone``'s merged into ``keep``'s (max, or
    min unless ``upper``; max is or on bools) and ``gone``'s emptied (-inf / +inf /
    False)."""
    out = x.copy()
    out[:, keep] = (np.maximum if upper else np.minimum)(out[:, keep], out[:, gone])
    out[:, gone] = False if out.dtype == bool else -np.inf if upper else np.inf
    return out


def intr_reach(g: TimedGraph, codes: TimedCodes, init: np.ndarray | None = None) -> np.ndarray:
    """``out[r, v]``: some walk of >= 1 edge from an ``intr_a[r]`` node ends at ``v``
    and its inner nodes are neither ``a`` nor ``intr_b[r]`` nodes (rows x ``g.n``; no
    rows without IntrBy pairs).  ``init``: a subset of the answer known beforehand, as
    :func:`closure`'s (e.g. the answer before two nodes of one type were merged, their
    columns or-ed: merging only adds walks, through nodes of the same types)."""
    nt = g.node_type[None, :]
    is_a = nt == codes.intr_a[:, None]
    through = ~is_a & (nt != codes.intr_b[:, None])
    return closure(g, _Reach(g)(is_a), through, init)


def intr_reach_merged(
    g: TimedGraph, codes: TimedCodes, before: np.ndarray, keep: int, gone: int
) -> np.ndarray:
    """:func:`intr_reach` on ``g``, a graph with node ``gone`` merged into ``keep`` (one
    type), from ``before``, the answer on the graph before the merge: its columns merged
    hold every walk's first edge here (an edge ``u -> v`` here is one of the graph before
    with ``gone`` renamed, and ``u`` is an ``a`` node here exactly when it was there), so
    the search grows from them without looking for first edges again."""
    nt = g.node_type[None, :]
    through = (nt != codes.intr_a[:, None]) & (nt != codes.intr_b[:, None])
    return closure(g, merged_columns(before, keep, gone, True), through)


def intr_broken(g: TimedGraph, codes: TimedCodes, reach: np.ndarray) -> np.ndarray:
    """Bool per IntrBy pair: does :func:`intr_reach`'s ``reach`` end at an ``a`` node
    (two ``a`` with no ``b`` between)?"""
    return (reach & (g.node_type[None, :] == codes.intr_a[:, None])).any(axis=1)


def intr_violations(g: TimedGraph, codes: TimedCodes) -> np.ndarray:
    """Bool per IntrBy pair: is there a walk from an ``a`` node to an ``a`` node whose
    inner nodes are no ``b`` nodes (two ``a`` with no ``b`` between)?"""
    if not len(codes.intr_a):
        return np.zeros(0, dtype=bool)
    return intr_broken(g, codes, intr_reach(g, codes))


def violations(
    g: TimedGraph, codes: TimedCodes, n_types: int, any_only: bool = False
) -> np.ndarray:
    """Bool per row of the invariant frame ``codes`` was made from: does the model
    (every node on an INITIAL -> TERMINAL path) break it?  A bounded AFby/AP/IntrBy row
    fails when its untimed form or its bound fails."""

    def at(flags: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.where(idx >= 0, np.append(flags, False)[idx], False)

    out = at(
        violated_edges(g.n, g.src, g.dst, g.node_type, codes.untimed, n_types), codes.row_untimed
    )
    if any_only and out.any():
        return out
    out |= at(intr_violations(g, codes), codes.row_intr)
    if any_only and out.any():
        return out
    return out | at(bound_violations(g, codes, n_types, any_only), codes.row_bound)


def refuse_timeless(regexes: list[str] | None) -> None:
    """InputError naming ``-r`` when a regex that makes events has no time group: Perfume
    needs event times (the real Perfume silently takes line numbers, whose deltas mean
    nothing)."""
    import re

    from ...parse.regex import compile_regex

    for rx in regexes or ["^(?<TYPE>.*)$"]:
        if re.search(r"\(\?<DATETIME=?>", rx):
            continue
        compiled = compile_regex(rx)
        if not compiled.hidden and compiled.time_group is None:
            raise InputError(
                None,
                None,
                f"-r {rx!r}: Perfume needs event times, and this regex has no "
                "TIME, LTIME, FTIME, DTIME or DATETIME group",
            )
