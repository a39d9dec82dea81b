"""Pairs of events that no Perfume model can put in one node, from the time bounds alone:
a lower bound on the nodes of every model that satisfies them (like :mod:`.bounds` for
Synoptic's untimed invariants), a colouring that starts refinement close to it, and a
test that lets coarsening skip merges that must fail.

Put events ``x`` and ``y`` (same type) in one node.  The model then has a walk that
follows ``x``'s trace from an earlier ``a`` to ``x`` and ``y``'s trace from ``y`` to a
later ``b``; each of its edges counts at least the delta its own event-level
transition took (upper bounds count an edge's largest delta, lower bounds its
smallest), so for an upper bound ``U`` the walk takes at least ``p(x) + s(y)`` with
``p(x) = t(x) - t(earliest a at or before x)`` and ``s(y) = t(latest b at or after y) -
t(y)``; if that passes ``U`` the bound fails.  For a lower bound ``L``: the latest ``a``,
the earliest ``b``, and the walk takes at most ``p(x) + s(y)`` -- below ``L`` it fails.
Perfume's walk rules (:mod:`.timecheck`) decide which ``a`` and ``b`` count:

* AlwaysFollowedBy, AlwaysPrecedes lower bounds, IntrBy: every (``a``, later ``b``)
  pair of a walk; for IntrBy (``a`` to a later ``a``) both ``a`` strictly before ``x``
  and strictly after ``y`` (a walk of at least one edge);
* AlwaysPrecedes upper bounds: only from the first ``a`` of a path from INITIAL to a
  ``b`` before the next ``a``: ``p(x)`` only when ``x``'s trace has exactly one ``a`` up
  to ``x`` (the walk from INITIAL along it meets no second ``a``), ``s(y)`` only over
  ``b`` before the next ``a`` after ``y``.

With lower bounds negated (``-p - s > -L``), every conflict reads ``P[k, x] + S[k, y] >
limit[k]`` for some bound ``k`` (either order of ``x`` and ``y``), and a node's values
are the maxima over its events: a merge of two nodes whose values conflict must fail.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .log import EventLog
from .timecheck import TimedCodes

_NONE = -np.inf
#: ``(P, S)`` of a model's nodes, shape (nodes, bounds): :meth:`Sides.node_values`.
NodeValues = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Sides:
    """Per time bound ``k`` and event ``e``: ``p[k, e]``, ``s[k, e]`` (module doc, lower
    bounds negated; -inf where undefined) and ``limit[k]`` (``U``, or ``-L``)."""

    p: np.ndarray
    s: np.ndarray
    limit: np.ndarray

    def node_values(self, part: np.ndarray, n_nodes: int) -> NodeValues:
        """``(P, S)``, shape (nodes, bounds), column-major (:func:`node_rows`): the maxima
        over each node's events (events sorted by node, one ``reduceat`` per run of a
        node's events: the maxima ``np.maximum.at`` gives, at a fraction of its cost)."""
        k = len(self.limit)
        pt = np.full((k, n_nodes), _NONE)
        st = np.full((k, n_nodes), _NONE)
        if len(part):
            order = np.argsort(part, kind="stable")
            nodes = part[order]
            runs = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
            pt[:, nodes[runs]] = np.maximum.reduceat(self.p[:, order], runs, axis=1)
            st[:, nodes[runs]] = np.maximum.reduceat(self.s[:, order], runs, axis=1)
        return pt.T, st.T


def node_rows(*blocks: np.ndarray) -> np.ndarray:
    """The rows of ``blocks`` (each nodes x bounds) one under the other, column-major: a
    bound's values over the nodes are contiguous, so :func:`without_conflict` gathers a
    block of bounds of many nodes from a few runs of memory, not a cache line per value
    (a one-trace log of 20,003 events, 3,073 nodes of a type: 0.36 ms per query against
    16.8 ms row-major)."""
    return np.concatenate([b.T for b in blocks], axis=1).T


def _scan(mask: np.ndarray, log: EventLog, last: bool, forward: bool) -> np.ndarray:
    """Per event ``i``: the index of the ``last`` (else first) event of its trace with
    ``mask`` among those at or before ``i`` (``forward``), or at or after it; -1 if none."""
    n = log.n_events
    idx = np.arange(n)
    trace = log.trace_of
    start = log.starts[:-1][trace]
    end = log.starts[1:][trace] - 1
    if forward:
        if last:
            hit = np.where(mask, idx, -1)
            out = np.maximum.accumulate(hit) if n else hit
            return np.where(out >= start, out, -1)
        first = np.full(log.n_traces, n)
        np.minimum.at(first, trace[mask], idx[mask])
        f = first[trace]
        return np.where(f <= idx, f, -1)
    if last:
        lastpos = np.full(log.n_traces, -1)
        np.maximum.at(lastpos, trace[mask], idx[mask])
        v = lastpos[trace]
        return np.where(v >= idx, v, -1)
    hit = np.where(mask, idx, n)
    out = np.minimum.accumulate(hit[::-1])[::-1] if n else hit
    return np.where(out <= end, out, -1)


def timed_sides(log: EventLog, codes: TimedCodes, ticks: np.ndarray) -> Sides:
    """The :class:`Sides` of every time bound of ``codes`` on ``log`` (times ``ticks``)."""
    n = log.n_events
    k_count = len(codes.bound_a)
    p = np.full((k_count, n), _NONE)
    s = np.full((k_count, n), _NONE)
    limit = np.where(codes.bound_upper, codes.bound_value, -codes.bound_value)
    idx = np.arange(n)
    trace = log.trace_of
    cache: dict[tuple, np.ndarray] = {}

    def scan(t: int, strict: bool, last: bool, forward: bool) -> np.ndarray:
        key = (t, strict, last, forward)
        if key not in cache:
            mask = log.codes == t
            if strict:
                # at or before i-1 / at or after i+1, within the trace
                shifted = np.full(n, -1)
                if forward:
                    shifted[1:] = _scan(mask, log, last, True)[:-1]
                    shifted[log.starts[:-1]] = -1
                    shifted = np.where(
                        (shifted >= 0) & (trace[np.maximum(shifted, 0)] == trace), shifted, -1
                    )
                else:
                    shifted[:-1] = _scan(mask, log, last, False)[1:]
                    shifted[log.starts[1:] - 1] = -1
                    shifted = np.where(
                        (shifted >= 0) & (trace[np.maximum(shifted, 0)] == trace), shifted, -1
                    )
                cache[key] = shifted
            else:
                cache[key] = _scan(mask, log, last, forward)
        return cache[key]

    for k in range(k_count):
        a, b = int(codes.bound_a[k]), int(codes.bound_b[k])
        upper = bool(codes.bound_upper[k])
        intr = a == b  # IntrBy bounds time a to a later a
        if codes.bound_first_only[k]:
            # from the trace's first a, when it is the only a up to i; to the latest b
            # at or after i before the next a after i
            count = log.seen_in_trace(log.codes == a)
            src = np.where(count == 1, scan(a, False, False, True), -1)
            nxt_a = scan(a, True, False, False)
            stop = np.where(nxt_a >= 0, nxt_a, log.starts[1:][trace]) - 1
            last_b = _scan(log.codes == b, log, True, True)[np.maximum(stop, 0)]
            dst = np.where((last_b >= idx) & (stop >= idx), last_b, -1)
        else:
            # upper: earliest a, latest b; lower: latest a, earliest b
            src = scan(a, intr, not upper, True)
            dst = scan(b, intr, upper, False)
        ok_p, ok_s = src >= 0, dst >= 0
        sign = 1.0 if upper else -1.0
        p[k] = np.where(ok_p, sign * (ticks - ticks[np.maximum(src, 0)]), _NONE)
        s[k] = np.where(ok_s, sign * (ticks[np.maximum(dst, 0)] - ticks), _NONE)
    return Sides(p, s, limit)


def pair_conflicts(
    pn: np.ndarray, sn: np.ndarray, limit: np.ndarray, px: np.ndarray, sx: np.ndarray
) -> np.ndarray:
    """Bool per row of ``pn``/``sn`` (nodes' values): does it conflict with a node of
    values ``px``, ``sx`` (module doc)?"""
    return ((px[None, :] + sn > limit).any(axis=1)) | ((pn + sx[None, :] > limit).any(axis=1))


#: :func:`without_conflict` tests the rows on all bounds at once up to this many values
#: (rows x bounds), else bounds in growing blocks of ``FIRST_BOUNDS``, 2x, 4x, ...
WHOLE_TEST_VALUES = 8_192
FIRST_BOUNDS = 4


def without_conflict(
    pn: np.ndarray,
    sn: np.ndarray,
    rows: np.ndarray,
    limit: np.ndarray,
    px: np.ndarray,
    sx: np.ndarray,
) -> np.ndarray:
    """The nodes ``rows`` (indices into ``pn``/``sn``, nodes x bounds) that do not conflict
    with a node of values ``px``, ``sx`` (:func:`pair_conflicts`), in their order.  Many
    rows are tested a block of bounds at a time, a row leaving at its first conflict: a
    conflicting pair has several witnesses (a one-trace log's nodes: 31 of the 236 (bound,
    side) tests in the median, so the first blocks settle nearly every row), and the rows
    gathered per block are the ones left, not a copy of every row's values.

    >>> pn = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 0.0]]); sn = np.zeros((3, 2))
    >>> sn[2, 1] = 5.0
    >>> without_conflict(pn, sn, np.array([2, 1, 0]), np.array([2.0, 4.0]),
    ...                  np.zeros(2), np.zeros(2)).tolist()
    [0]
    """
    k = len(limit)
    if len(rows) * k <= WHOLE_TEST_VALUES:
        return rows[~pair_conflicts(pn[rows], sn[rows], limit, px, sx)]
    pt, st = pn.T, sn.T  # bounds x nodes: row-major when pn and sn are column-major
    left = rows
    lo, step = 0, FIRST_BOUNDS
    while lo < k and left.size:
        hi = min(k, lo + step)
        lim = limit[lo:hi, None]
        clash = (px[lo:hi, None] + np.take(st[lo:hi], left, axis=1) > lim).any(axis=0)
        clash |= (np.take(pt[lo:hi], left, axis=1) + sx[lo:hi, None] > lim).any(axis=0)
        left = left[~clash]
        lo, step = hi, 2 * step
    return left


#: Nodes per run of :class:`NodeRuns`.
RUN_NODES = 64


class NodeRuns:
    """Nodes (ids into side values ``pn``/``sn``, nodes x bounds) in the order they were
    added, cut into runs of ``RUN_NODES``, with each run's least P and S per bound when
    its nodes were added.  Node values only grow (a merge takes the maxima), so these
    stay lower bounds, and a node whose values conflict with a run's least values
    conflicts with every node of the run (``P + S > limit`` holds with the least ``S``,
    so with each larger one; rounding is monotone): :meth:`compatible` tests the runs
    first, then the nodes of the runs left.  First fit and coarsening on a one-trace log
    refute every same-type pair (docs/synoptic-engine.md, "Logs shaped by nobody"):
    there a query costs the runs, not the nodes.

    >>> pn = np.array([[0.0], [1.0], [9.0]]); sn = np.array([[0.0], [0.0], [0.0]])
    >>> runs = NodeRuns(1)
    >>> for q in (2, 0): runs.add(q, pn[q], sn[q])
    >>> runs.compatible(pn, sn, np.array([4.0]), pn[1], sn[1]).tolist()
    [0]
    >>> runs.renumber(np.array([5, 6, 7])); runs.ids.tolist()
    [7, 5]
    """

    def __init__(self, n_bounds: int) -> None:
        self._ids = np.empty(RUN_NODES, dtype=np.int64)
        self._low_p = np.empty((1, n_bounds))
        self._low_s = np.empty((1, n_bounds))
        self._n = 0

    @classmethod
    def of(cls, ids: np.ndarray, pn: np.ndarray, sn: np.ndarray) -> NodeRuns:
        """The nodes ``ids`` added in order, with their values in ``pn``/``sn``."""
        runs = cls(pn.shape[1])
        if len(ids):
            cuts = np.arange(0, len(ids), RUN_NODES)
            runs._ids = np.array(ids, dtype=np.int64)
            runs._low_p = np.minimum.reduceat(pn.T[:, ids], cuts, axis=1).T
            runs._low_s = np.minimum.reduceat(sn.T[:, ids], cuts, axis=1).T
            runs._n = len(ids)
        return runs

    @property
    def ids(self) -> np.ndarray:
        """The nodes, in the order added (a view)."""
        return self._ids[: self._n]

    def add(self, node: int, p: np.ndarray, s: np.ndarray) -> None:
        """Add ``node`` with its values ``p``, ``s`` (one per bound)."""
        run, at = divmod(self._n, RUN_NODES)
        if self._n == len(self._ids):
            self._ids = np.concatenate([self._ids, np.empty_like(self._ids)])
        if run == len(self._low_p):
            self._low_p = np.concatenate([self._low_p, np.empty_like(self._low_p)])
            self._low_s = np.concatenate([self._low_s, np.empty_like(self._low_s)])
        if at == 0:
            self._low_p[run], self._low_s[run] = p, s
        else:
            np.minimum(self._low_p[run], p, out=self._low_p[run])
            np.minimum(self._low_s[run], s, out=self._low_s[run])
        self._ids[self._n] = node
        self._n += 1

    def renumber(self, new_id: np.ndarray) -> None:
        """Each node ``q`` becomes ``new_id[q]`` (its values move with it)."""
        self._ids[: self._n] = new_id[self._ids[: self._n]]

    def compatible(
        self, pn: np.ndarray, sn: np.ndarray, limit: np.ndarray, px: np.ndarray, sx: np.ndarray
    ) -> np.ndarray:
        """The nodes, in order, that do not conflict with a node of values ``px``, ``sx``
        (:func:`without_conflict` on those of the runs whose least values do not)."""
        rows = self.ids
        n_runs = -(-self._n // RUN_NODES)
        if n_runs > 1:
            lp, ls = self._low_p[:n_runs], self._low_s[:n_runs]
            clash = ((px + ls > limit) | (lp + sx > limit)).any(axis=1)
            if clash.any():
                rows = rows[np.repeat(~clash, RUN_NODES)[: self._n]]
        return without_conflict(pn, sn, rows, limit, px, sx)


#: Bytes of the float temporaries :func:`conflict_degrees` makes at once (rows x
#: events x bounds x 8).
DEGREE_BLOCK_BYTES = 8 << 20


def conflict_degrees(pe: np.ndarray, se: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Per event (side values ``pe``, ``se``: events x bounds): how many of the events
    it conflicts with (module doc, either order; itself included when it conflicts
    with itself).  Rows in blocks of at most ``DEGREE_BLOCK_BYTES`` of temporaries (one
    row's, events x bounds x 16 bytes, when that is more), not one events x events x
    bounds array (308 MiB for the 688 events and 76 bounds of one neighbourhood of a
    5,004-event lab log).

    >>> pe = np.array([[0.0], [5.0], [1.0]]); se = np.array([[1.0], [0.0], [5.0]])
    >>> conflict_degrees(pe, se, np.array([4.0])).tolist()
    [2, 3, 3]
    """
    n, k = pe.shape
    out = np.zeros(n, dtype=np.int64)
    rows = max(1, DEGREE_BLOCK_BYTES // max(1, 2 * 8 * n * k))
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        clash = ((pe[lo:hi, None, :] + se[None, :, :]) > limit).any(axis=2)
        clash |= ((se[lo:hi, None, :] + pe[None, :, :]) > limit).any(axis=2)
        out[lo:hi] = clash.sum(axis=1)
    return out


def _clique(adj: np.ndarray) -> int:
    """Size of a clique of ``adj`` (greedy: drop a vertex of least degree until the rest
    is a clique); a lower bound on the largest."""
    alive = np.ones(len(adj), dtype=bool)
    deg = adj.sum(axis=1)
    while alive.any():
        m = int(alive.sum())
        live_deg = np.where(alive, deg, np.iinfo(np.int64).max)
        v = int(np.argmin(live_deg))
        if live_deg[v] >= m - 1:
            return m
        alive[v] = False
        deg -= adj[:, v]
    return 0


#: Events per type the bound looks at (the ones with the largest values): a conflict
#: matrix of this many squared bytes (9 MB), built once per type.
CLIQUE_EVENTS = 3_000


def cycle_conflicts(
    log: EventLog, codes: TimedCodes, sides: Sides, ev: np.ndarray, ticks: np.ndarray
) -> np.ndarray:
    """Bool matrix over the same-type events ``ev``: the pair shares a trace and one node
    for both would close a cycle of positive time (the trace from the earlier to the
    later) on a walk that an upper bound ``k`` times (``a != b``; ``p[k]`` of the earlier
    and ``s[k]`` of the later defined; for an AlwaysPrecedes upper bound no ``a`` in
    between, as its walk stops at a second ``a``).  The walk can go round the cycle any
    number of times, so the bound fails (:mod:`.timecheck`): no model has both in one
    node, whatever the times."""
    tr = log.trace_of[ev]
    out = np.zeros((len(ev), len(ev)), dtype=bool)
    later = (tr[:, None] == tr[None, :]) & (ticks[ev][:, None] < ticks[ev][None, :])
    if not later.any():
        return out
    for k in np.nonzero(codes.bound_upper & (codes.bound_a != codes.bound_b))[0]:
        c = later & np.isfinite(sides.p[k, ev])[:, None] & np.isfinite(sides.s[k, ev])[None, :]
        if codes.bound_first_only[k]:
            seen = np.cumsum(log.codes == codes.bound_a[k])[ev]
            c &= seen[:, None] == seen[None, :]
        out |= c
    return out | out.T


def timed_type_bounds(
    log: EventLog,
    sides: Sides,
    codes: TimedCodes | None = None,
    ticks: np.ndarray | None = None,
    clique_events: int = CLIQUE_EVENTS,
) -> np.ndarray:
    """Per type: a lower bound on its nodes in every model, the chromatic number of its
    events' conflict graph (every node is a set of pairwise compatible events) as far as
    :func:`~.graphbounds.chromatic_lower_bound` proves it from the largest clique
    (:func:`~.graphbounds.max_clique`, the greedy one when larger), both within fixed
    step budgets.  At most ``clique_events`` events a type, those with the largest
    ``p + s`` (a conflict matrix of ``clique_events`` squared bytes per type).
    Conflicts: in time (module doc) and, given ``codes`` and ``ticks``, the cycles of
    :func:`cycle_conflicts`."""
    from .graphbounds import chromatic_lower_bound, max_clique, twin_quotient

    out = np.ones(len(log.types), dtype=np.int64)
    if not len(sides.limit):
        return out
    for t in range(len(log.types)):
        ev = np.nonzero(log.codes == t)[0]
        if ev.size < 2:
            continue
        p, s = sides.p[:, ev].T, sides.s[:, ev].T
        if ev.size > clique_events:
            score = np.max(np.maximum(p, s) - sides.limit / 2, axis=1)
            keep = np.argsort(-score, kind="stable")[:clique_events]
            p, s, ev = p[keep], s[keep], ev[keep]
        adj = np.zeros((len(p), len(p)), dtype=bool)
        for k in range(len(sides.limit)):
            rows, cols = np.isfinite(p[:, k]), np.isfinite(s[:, k])
            if rows.any() and cols.any():
                c = p[rows, k][:, None] + s[cols, k][None, :] > sides.limit[k]
                adj[np.ix_(rows, cols)] |= c
        adj |= adj.T
        np.fill_diagonal(adj, False)
        greedy = _clique(adj)  # the greedy clique is not monotone in the edges: keep it
        if codes is not None and ticks is not None:
            adj |= cycle_conflicts(log, codes, sides, ev, ticks)
            np.fill_diagonal(adj, False)
            greedy = max(greedy, _clique(adj))
        merged = twin_quotient(adj)
        clique = max(greedy, max_clique(merged, merged=True)[0])
        out[t] = max(1, chromatic_lower_bound(merged, clique, merged=True)[0])
    return out


def colour_nodes(
    part: np.ndarray,
    node_type: np.ndarray,
    log: EventLog,
    sides: Sides,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Split every node of ``part`` so that no two events of a node conflict: first fit,
    events in a seeded order, into the new nodes of their old node.  Returns the new
    ``(part, node_type)`` (nodes 0/1 stay INITIAL/TERMINAL)."""
    n_nodes = len(node_type)
    new_part = part.copy()
    order = rng.permutation(log.n_events)
    by_node: dict[int, list[int]] = {}
    for e in order.tolist():
        by_node.setdefault(int(part[e]), []).append(e)
    next_id = 2
    new_types = [int(node_type[0]), int(node_type[1])]
    for node in range(2, n_nodes):
        events = by_node.get(node, [])
        if not events:
            continue
        ev = np.asarray(events)
        p, s = sides.p[:, ev].T, sides.s[:, ev].T
        colours_p: list[np.ndarray] = []
        colours_s: list[np.ndarray] = []
        colour = np.empty(len(ev), dtype=np.int64)
        for i in range(len(ev)):
            placed = -1
            if colours_p:
                cp, cs = np.asarray(colours_p), np.asarray(colours_s)
                bad = ((p[i][None, :] + cs > sides.limit).any(axis=1)) | (
                    (cp + s[i][None, :] > sides.limit).any(axis=1)
                )
                free = np.nonzero(~bad)[0]
                if free.size:
                    placed = int(free[0])
            if placed < 0:
                colours_p.append(p[i].copy())
                colours_s.append(s[i].copy())
                placed = len(colours_p) - 1
            else:
                np.maximum(colours_p[placed], p[i], out=colours_p[placed])
                np.maximum(colours_s[placed], s[i], out=colours_s[placed])
            colour[i] = placed
        new_part[ev] = next_id + colour
        new_types += [int(node_type[node])] * len(colours_p)
        next_id += len(colours_p)
    return new_part, np.asarray(new_types, dtype=np.int64)


def perfume_type_bounds(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, clique_events: int = CLIQUE_EVENTS
) -> np.ndarray:
    """Per type code a lower bound on its nodes in every valid model: the larger of the
    untimed bound (:func:`~.bounds.type_lower_bounds` of the untimed forms) and the time
    and cycle bound (:func:`timed_type_bounds`: exact clique and colouring bounds within
    fixed budgets, over at most ``clique_events`` events a type)."""
    from .bounds import type_lower_bounds

    sides = timed_sides(log, codes, ticks)
    timed = timed_type_bounds(log, sides, codes, ticks, clique_events)
    if len(codes.untimed):
        timed = np.maximum(timed, type_lower_bounds(log, codes.untimed)[: len(timed)])
    return timed


def perfume_lower_bound(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, per_type: np.ndarray | None = None
) -> int:
    """A lower bound on the nodes (INITIAL and TERMINAL included) of every model of
    ``log`` that accepts its traces and satisfies Perfume's invariants ``codes``: the
    per-type bounds (``per_type``, default :func:`perfume_type_bounds`) summed, plus the
    nodes the walks over several nodes add (:func:`~.levelbound.level_bound`), plus two
    (:func:`~.boxbound.box_lower_bound`: a stronger, costlier one)."""
    from .levelbound import level_bound

    timed = perfume_type_bounds(log, codes, ticks) if per_type is None else per_type
    return int(timed.sum()) + level_bound(log, codes, ticks, timed) + 2
