"""Perfume's model inference: refinement until every performance-constrained invariant
holds, then coarsening that keeps them (Ohmann, Herzberg, Fiss, Halle, Palyart,
Beschastnikh, Brun: *Behavioral Resource-Aware Model Inference*, ASE 2014, section 3).

Learnt from the paper and, for the algorithm only, from ModelInference/synoptic
(``Bisimulation.getSplitsConstrained`` / ``makeConstrainedSplitIfStitch``); no code is
taken from it.

1. Start from Synoptic's initial partition graph (one node per event type) and make the
   untimed invariants hold with Synoptic's refinement (:func:`~.refine.refine`).
2. ``a IntrBy b`` (no ``b`` between two ``a``): a shortest INITIAL path that breaks it is
   followed through the traces and split where no trace can continue it (Synoptic's split).
3. Time bounds: take a violated bound (seeded choice), a walk from an ``a`` node to a
   ``b`` node that breaks it (:func:`timed_counterexample`: edges weighted by their
   largest delta for an upper bound, smallest for a lower one), and look along its inner
   nodes for a *stitch*: the events entering the node by the walk's previous edge with
   that edge's extreme delta are not the events leaving it by the next edge with its
   extreme delta.  Such a node is split: entering events stay, leaving events move, and
   each other event follows the extreme its deltas are nearer (its delta in by the
   previous edge against that edge's range, its delta out by the next edge against that
   one's; not on an edge: -1; ties by the seeded generator), so that one split parts a
   node's fast and slow events instead of peeling off the extreme ones.  A walk without
   a stitch would be a trace segment taking that time, which the mined bound excludes, so
   a stitch always exists on a violating walk; a split that makes the bound hold is
   preferred.
4. Coarsening: merge same-type nodes (seeded order) while every invariant still holds;
   merging only adds walks and widens edge ranges, so a merge that failed fails in any
   coarser model and is not tried again.

5. Time conflicts (:mod:`.timeconflicts`): two same-type events whose own traces
   already make a walk through their shared node break a bound can never share one.
   An attempt (:func:`colour_attempt`) splits the nodes of the untimed-refined model by
   a colouring of these conflicts, refines what still fails (walks through several
   nodes) and coarsens without trying a merge of conflicting nodes
   (:func:`coarsen_sided`).

6. First fit (:func:`first_fit_model`): from the trace graph, events in
   :func:`first_fit_order` (short-trace logs: longest traces first, by position, then by
   time since the trace's start; others: by that time alone) merged into the first
   same-type node that keeps every invariant; it makes the pieces of long logs (the
   traces of short-trace logs longest first, :func:`longest_first`).

7. Polishing (:func:`polish`): groups of 2-4 same-type nodes split into one node per
   event and placed again by first fit (:func:`repack`), kept when the model is no
   larger; a budget of merge checks per event (:func:`polish_budget`; long logs: what
   is left of one work budget per event, shared by the closed models' nodes,
   :func:`polish_split`).  No pair of a
   first-fit model's nodes can merge, but events can move between several nodes.
   Then whole nodes that now merge are merged (:func:`coarsen_sided`), then an exact
   stage (:func:`exact_descent`): neighbourhoods re-placed into one node
   fewer by branch and bound (:func:`exact_repack`).  Merges that must fail (a walk into
   one node continued out of the other passes a bound, :meth:`_TimedMerges.doomed`)
   are never checked, in first fit, repacks and the exact stage alike.

The smallest model over a few seeded attempts is kept (logs up to ``PIECE_EVENTS``
events; up to ``CLASSIC_EVENTS`` also the original refine-from-the-initial-graph
attempts).  Longer logs are made piece by piece (:func:`infer_pieces`): runs of traces
of about ``FIRST_FIT_EVENTS`` events, each modelled under the whole log's invariants and
folded into the model before it (whole nodes merged, then the run's leftover events
placed one by one: :func:`fold_repack`) while that has at most ``CLOSE_NODES`` nodes
(``FOLD_NODES`` on dense logs), then put side by side, so the cost is linear in the
events; every model is polished (each closed model of the pieces).  Deterministic for a seed.

Cost, and its bounds.  Each refinement step checks every bound on the whole model
(vectorised Bellman-Ford, O(rounds x edges x source types)), and coarsening tries
O(nodes^2) merges, each such a check; on logs where every delay is distinct the model
grows with the events, so one model of a long log costs the square of the events.  The
pieces bound that (each piece and each fold is of bounded size).  With
``--noCoarsening`` (the original refinement alone) or a ``refine_nodes`` cap, refinement
stops once the model passes :func:`refine_node_cap` nodes, the model being
:func:`trace_chain_model` (built in O(events), every invariant holds by construction);
coarsening stops after ``COARSEN_FAILURES`` merges that failed (every merge it made was
checked, so the model still satisfies everything); :func:`coarsen_timed` draws its
candidate pairs lazily beyond ``EAGER_PAIRS`` (:func:`merge_candidates`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from math import gcd, isqrt

import numpy as np

from ...errors import StatemineError
from ._walks import doomed as doomed_rule
from ._walks import onward as onward_rounds
from .check import MergeCheck, violated
from .log import EventLog
from .model import INIT_NODE, TERM_NODE, PartitionModel
from .refine import apply_split, candidate_splits, refine
from .timecheck import (
    BoundCheck,
    TimedCodes,
    TimedGraph,
    Walks,
    bound_violations,
    closure,
    first_nodes,
    intr_broken,
    intr_reach,
    intr_reach_merged,
    intr_violations,
    merge_nodes,
    timed_graph,
    walk_extremes,
)
from .timeconflicts import (
    NodeRuns,
    NodeValues,
    Sides,
    colour_nodes,
    conflict_degrees,
    node_rows,
    without_conflict,
)

#: Counterexample-guided untimed splits before the targeted history split finishes.
UNTIMED_STEPS = 60
#: Seeded refinement + coarsening attempts (the smallest model wins) on logs up to
#: ``ONE_ATTEMPT_EVENTS`` events; one beyond (coarsening a near-trace-graph model costs
#: O(nodes^2) merge trials).
ATTEMPTS = 3
ONE_ATTEMPT_EVENTS = 1_000
#: Refinement handles one violated bound per step on logs up to this many events, and
#: ``events // BATCH_EVENTS`` of them (on distinct nodes, no trial splits) beyond.
BATCH_EVENTS = 500
#: Refinement gives up past ``max(REFINE_NODES, min(events // REFINE_EVENTS,
#: REFINE_NODES_MAX))`` nodes (module doc: the model is then :func:`trace_chain_model`).
REFINE_NODES = 1_000
REFINE_EVENTS = 4
REFINE_NODES_MAX = 2_500
#: Coarsening stops after this many failed merge trials.
COARSEN_FAILURES = 5_000
#: Coarsening passes with more same-type pairs than this draw them lazily
#: (:func:`lazy_pair_order`) instead of listing and shuffling them.
EAGER_PAIRS = 200_000


def timed_counterexample(
    g: TimedGraph,
    a: int,
    b: int,
    limit: float,
    upper: bool,
    first_only: bool = False,
    max_len: int | None = None,
) -> list[int] | None:
    """A walk ``[a node, ..., b node]`` (>= 1 edge) whose total (largest deltas for
    ``upper``, else smallest) breaks ``limit``, or None when none has at most
    ``max_len`` edges (default: ``max(4 n, 256)``); ``first_only``: from a first ``a``
    of a model path, through no other ``a`` node (:func:`~.timecheck.walk_extremes`).
    Layered search: layer k holds the extreme total of walks of exactly k edges into
    each node, with their predecessors."""
    n = g.n
    max_len = max_len if max_len is not None else max(4 * n, 256)
    order = g.dst_order
    src, dst = g.src[order], g.dst[order]
    w = (g.wmax if upper else g.wmin)[order]
    none = -np.inf if upper else np.inf
    is_a = g.node_type == a
    starts = first_nodes(g, np.array([a]))[0] if first_only else is_a
    cur = np.where(starts, 0.0, none)
    is_b = g.node_type == b
    preds: list[np.ndarray] = []
    if not len(dst):
        return None
    group = np.nonzero(np.r_[True, dst[1:] != dst[:-1]])[0]  # edges into one node: a run
    target, run_of = dst[group], np.repeat(np.arange(len(group)), np.diff(np.r_[group, len(dst)]))
    extreme = np.maximum if upper else np.minimum
    for layer in range(max_len):
        if first_only and layer:
            cur = np.where(is_a, none, cur)
        vals = cur[src] + w
        # per target, the edge with the extreme value (ties: the first edge); O(edges)
        red = extreme.reduceat(vals, group)
        at_best = np.flatnonzero(vals == red[run_of])
        best = at_best[np.unique(run_of[at_best], return_index=True)[1]]
        nxt = np.full(n, none)
        pred = np.full(n, -1, dtype=np.int64)
        nxt[target] = red
        pred[dst[best]] = src[best]
        pred[~np.isfinite(nxt)] = -1
        preds.append(pred)
        hit = np.nonzero(is_b & ((nxt > limit) if upper else (nxt < limit)))[0]
        if hit.size:
            path = [int(hit[0])]
            for p in reversed(preds):
                path.append(int(p[path[-1]]))
            return path[::-1]
        if not np.isfinite(nxt).any():
            return None
        cur = nxt
    return None


def stitch_splits(
    model: PartitionModel,
    g: TimedGraph,
    delta: np.ndarray,
    path: list[int],
    upper: bool,
    rng: np.random.Generator,
) -> Iterator[np.ndarray]:
    """Masks of events to move out of an inner node of the violating walk ``path``, one
    per node with a stitch, from the walk's end backwards (Perfume's order), made lazily:
    a walk that breaks an upper bound by going round a cycle can be thousands of edges
    long, and a caller that takes the first split does not pay for the others."""
    edge_key = g.src * g.n + g.dst  # sorted (aggregate_edges)
    part, nxt_node = model.part, model.successor_nodes()

    def transitions(u: int, v: int) -> tuple[np.ndarray, np.ndarray]:
        """Events of node ``u`` whose successor lies in node ``v``, and how close each
        one's delta is to the edge's extreme (1: the extreme, 0: the other end)."""
        k = np.searchsorted(edge_key, u * g.n + v)
        lo, hi = g.wmin[k], g.wmax[k]
        events = np.nonzero((part == u) & (nxt_node == v))[0]
        d = delta[events]
        if hi == lo:
            return events, np.ones(events.size)
        return events, (d - lo) / (hi - lo) if upper else (hi - d) / (hi - lo)

    for j in range(len(path) - 2, 0, -1):
        prev, node, nxt = path[j - 1], path[j], path[j + 1]
        came, came_score = transitions(prev, node)
        came = came + 1
        leave, leave_score = transitions(node, nxt)
        came_set = set(came[came_score == 1].tolist())
        leave_set = set(leave[leave_score == 1].tolist())
        if came_set == leave_set:
            continue
        move = np.zeros(len(part), dtype=bool)
        move[list(leave_set - came_set)] = True
        if came_set - leave_set:
            move[list(came_set & leave_set)] = True
        members = np.nonzero(part == node)[0]
        others = np.setdiff1d(members, np.fromiter(came_set | leave_set, dtype=np.int64))
        coin = rng.random(others.size) < 0.5
        # the others follow the nearer extreme: one that entered by the walk's previous
        # edge with a delta nearer its extreme than its delta out by the next edge is to
        # that edge's extreme stays (-1: not on that edge); ties go by the coin
        s_in = np.full(len(part), -1.0)
        s_out = np.full(len(part), -1.0)
        s_in[came] = came_score
        s_out[leave] = leave_score
        a, b = s_in[others], s_out[others]
        move[others] = np.where(a == b, coin, b > a)
        yield move


def fallback_split(model: PartitionModel, nodes: list[int]) -> np.ndarray | None:
    """A split of one of ``nodes`` that always separates something: the events that
    repeat their node within their trace, else the later half of its events."""
    log = model.log
    for node in sorted(set(nodes), key=lambda x: -int((model.part == x).sum())):
        if node in (INIT_NODE, TERM_NODE):
            continue
        members = np.nonzero(model.part == node)[0]
        if members.size < 2:
            continue
        trace = log.trace_of[members]
        repeat = np.r_[False, trace[1:] == trace[:-1]]
        move = np.zeros(len(model.part), dtype=bool)
        if repeat.any():
            move[members[repeat]] = True
        else:
            move[members[members.size // 2 :]] = True
        return move
    return None


def intr_counterexample(model: PartitionModel, a: int, b: int) -> list[int] | None:
    """A shortest path from INITIAL that reaches an ``a`` node twice with no ``b`` node
    between (breadth-first over (node, "a seen since the last b"))."""
    adj = model.edge_counts() > 0
    nt = model.node_type
    succ = [np.nonzero(row)[0].tolist() for row in adj]
    start = (INIT_NODE, 0)
    parent: dict = {start: None}
    queue = deque([start])
    while queue:
        v, armed = queue.popleft()
        for w in succ[v]:
            if w == TERM_NODE:
                continue
            if nt[w] == a and armed:
                path = [w]
                cur = (v, armed)
                while cur is not None:
                    path.append(cur[0])
                    cur = parent[cur]
                return path[::-1]
            state = (w, 1 if nt[w] == a else 0 if nt[w] == b else armed)
            if state not in parent:
                parent[state] = (v, armed)
                queue.append(state)
    return None


def _bound_holds(
    g: TimedGraph, a: int, b: int, limit: float, upper: bool, first_only: bool
) -> bool:
    ext = walk_extremes(g, np.array([a]), upper, first_only)[0]
    got = ext[g.node_type == b]
    if not got.size:
        return True
    return bool(got.max() <= limit) if upper else bool(got.min() >= limit)


def _bound_split(
    model: PartitionModel,
    g: TimedGraph,
    ticks: np.ndarray,
    delta: np.ndarray,
    codes: TimedCodes,
    i: int,
    rng: np.random.Generator,
    trials: bool,
) -> np.ndarray:
    """Events to move out of their node to remove a violating walk of bound ``i``: the
    first stitch split after which the bound holds (``trials``; else the first stitch
    split), a seeded stitch split, or a fallback split."""
    log = model.log
    a, b = int(codes.bound_a[i]), int(codes.bound_b[i])
    limit, upper = float(codes.bound_value[i]), bool(codes.bound_upper[i])
    first = bool(codes.bound_first_only[i])
    path = timed_counterexample(g, a, b, limit, upper, first)
    lazy = stitch_splits(model, g, delta, path, upper, rng) if path else iter(())
    if not trials:
        mask = next(lazy, None)
        if mask is not None:
            return mask
    splits = list(lazy)
    for mask in splits:
        trial = apply_split(model, mask)
        trial_g = timed_graph(trial.part, trial.node_type, log, ticks)
        if _bound_holds(trial_g, a, b, limit, upper, first):
            return mask
    if splits:
        return splits[int(rng.integers(len(splits)))]
    nodes = path if path else np.nonzero(np.isin(model.node_type, [a, b]))[0].tolist()
    chosen = fallback_split(model, nodes) if nodes else None
    if chosen is None:
        chosen = fallback_split(model, list(range(2, model.n_nodes)))
    if chosen is None:
        raise StatemineError("internal error: a time bound fails on the trace graph")
    return chosen


def trace_chain_model(log: EventLog) -> PartitionModel:
    """A model whose INITIAL -> TERMINAL paths are exactly the traces, in O(events): one
    node per event, except that the first events of the traces share one node per type,
    and so do the last events of traces of two or more events (one-event traces join the
    first events' node).  Every path is a trace and every walk between timed edges one
    trace's segment (a node of first events has no timed edge in, one of last events none
    out), so every invariant the traces satisfy holds, bounds included."""
    n_types = len(log.types)
    n = log.n_events
    first = np.zeros(n, dtype=bool)
    first[log.starts[:-1]] = True
    last = log.is_last & ~first
    part = np.arange(n, dtype=np.int64) + 2 + 2 * n_types
    part[first] = 2 + log.codes[first]
    part[last] = 2 + n_types + log.codes[last]
    node_type = np.concatenate([[-1, -1], np.arange(n_types), np.arange(n_types), log.codes])
    return PartitionModel(log, part, node_type.astype(np.int64)).compact()


def refine_node_cap(n_events: int) -> int:
    """Nodes past which refinement gives up (module doc): ``max(REFINE_NODES,
    min(n_events // REFINE_EVENTS, REFINE_NODES_MAX))``."""
    return max(REFINE_NODES, min(n_events // REFINE_EVENTS, REFINE_NODES_MAX))


class _TooLarge(Exception):
    """Refinement passed its node cap."""


def refine_timed(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    rng: np.random.Generator,
    max_nodes: int | None = None,
    batch: int | None = None,
) -> PartitionModel:
    """Split ``model`` until every invariant of ``codes`` holds (module doc, steps 1-3);
    :class:`_TooLarge` once it has more than ``max_nodes`` nodes.  ``batch``: violated
    bounds handled per step (default ``events // BATCH_EVENTS``, at least one); with one,
    the split after which the bound holds is preferred (trial splits)."""
    log = model.log
    n_types = len(log.types)
    delta = np.zeros(log.n_events)
    delta[:-1] = ticks[1:] - ticks[:-1]
    if (
        len(codes.untimed)
        and violated(
            model.edge_counts() > 0, model.node_type, codes.untimed, n_types, trim=False
        ).any()
    ):
        model = refine(model, codes.untimed, rng, max_steps=UNTIMED_STEPS, finish="targeted")
    for _ in range(log.n_events + 2):
        if max_nodes is not None and model.n_nodes > max_nodes:
            raise _TooLarge
        g = timed_graph(model.part, model.node_type, log, ticks)
        bad_intr = np.nonzero(intr_violations(g, codes))[0]
        if bad_intr.size:
            i = int(bad_intr[rng.integers(bad_intr.size)])
            path = intr_counterexample(model, int(codes.intr_a[i]), int(codes.intr_b[i]))
            splits = candidate_splits(model, path) if path else []
            if not splits:
                raise StatemineError("internal error: no split removes an IntrBy counterexample")
            model = apply_split(model, splits[int(rng.integers(len(splits)))])
            continue
        bad = np.nonzero(bound_violations(g, codes, n_types))[0]
        if not bad.size:
            return model
        if batch is None:
            batch = max(1, log.n_events // BATCH_EVENTS)
        picked = (
            [int(bad[rng.integers(bad.size)])]
            if batch == 1
            else bad[rng.permutation(bad.size)][:batch]
        )
        touched: set[int] = set()
        masks = []
        for i in picked:
            mask = _bound_split(model, g, ticks, delta, codes, int(i), rng, batch == 1)
            node = int(model.part[np.argmax(mask)])
            if node not in touched:
                touched.add(node)
                masks.append(mask)
        for mask in masks:
            model = apply_split(model, mask)
    raise StatemineError("internal error: Perfume refinement did not finish")


#: A merge check costs about ``CHECK_FIXED + n`` for a graph of ``n`` nodes (measured
#: on the benchmark's connection logs: 0.41 ms at 150 nodes, 0.75 at 320, 0.88 at 500).
CHECK_FIXED = 170
#: The reference check of :func:`check_units`: one on a graph of this many nodes.
CHECK_NODES = 150


def check_units(n_nodes: int) -> float:
    """The work of one merge check on a graph of ``n_nodes`` nodes, in checks on a graph
    of ``CHECK_NODES`` nodes (``(CHECK_FIXED + n) / (CHECK_FIXED + CHECK_NODES)``)."""
    return (CHECK_FIXED + n_nodes) / (CHECK_FIXED + CHECK_NODES)


def onward_totals(
    g: TimedGraph, stop: np.ndarray, upper: bool, through: np.ndarray | None = None
) -> np.ndarray:
    """``out[r, v]``: over walks of >= 1 edge from node ``v`` to a node ``w`` (with
    ``through``: whose inner nodes are all ``through[r]`` nodes), the largest
    (``upper``: edges by their largest delta) total minus ``stop[r, w]``, else the
    smallest (smallest deltas); -inf / +inf without such a walk.  Bellman-Ford backwards
    from below (above): every value met is that of a real walk, so each round gives a
    bound on the answer; upper totals are cut at 1 (a walk with a positive value is
    all a caller asks about, and positive cycles stop growing there).  After the first
    round only the edges into nodes the round before changed are relaxed, into their
    sources alone (values only move one way, so the other edges are already folded in):
    the totals of whole rounds, at most ``g.n + 1`` of them (in C: :func:`~._walks.onward`)."""
    out = np.full(stop.shape, -np.inf if upper else np.inf)
    onward_rounds(
        np.ascontiguousarray(g.src, dtype=np.int64),
        np.ascontiguousarray(g.dst, dtype=np.int64),
        np.ascontiguousarray(g.wmax if upper else g.wmin, dtype=np.float64),
        np.ascontiguousarray(stop, dtype=np.float64),
        None if through is None else np.ascontiguousarray(through, dtype=bool),
        out,
        len(g.src),
        stop.shape[0],
        g.n,
        upper,
    )
    return out


class _TimedMerges:
    """Coarsening trials on a fine model: node groups (``group[n]``: the smallest id of
    the group of node ``n``) with incremental checks (:class:`~.check.MergeCheck` for
    the untimed invariants, :class:`~.timecheck.BoundCheck` for the time bounds,
    IntrBy's walks grown from the current model's: :func:`~.timecheck.intr_reach_merged`)."""

    def __init__(
        self,
        model: PartitionModel,
        codes: TimedCodes,
        ticks: np.ndarray,
        start: Walks | None = None,
    ):
        """``start``: walks known on ``model`` to start its walk totals from
        (:class:`~.timecheck.BoundCheck`)."""
        log = model.log
        self.n_types = len(log.types)
        self.fine = timed_graph(model.part, model.node_type, log, ticks)
        self.graph = self.fine  # the current model's: ``fine`` with the merges made
        self.node_type = np.ascontiguousarray(model.node_type, dtype=np.int64)
        self.group = np.arange(model.n_nodes)
        self.codes = codes
        self.untimed = MergeCheck(
            model.node_type, codes.untimed, self.n_types, self.fine.src, self.fine.dst
        )
        self.bounds = BoundCheck(self.fine, codes, self.n_types, start)
        # IntrBy's walks (:func:`intr_reach`), grown from the current ones on each merge
        self.intr = intr_reach(self.fine, codes) if len(codes.intr_a) else None
        self.spent = 0.0  # work units (:func:`check_units`) of the merge checks so far
        self.onward: list[np.ndarray] | None = None  # :meth:`doomed`, made lazily

    def doomed(self, keep: int, gone: int) -> bool:
        """Must merging groups ``keep`` and ``gone`` break a time bound?
        (:meth:`doomed_among` of one group.)"""
        return bool(self.doomed_among(np.array([keep], dtype=np.int64), gone)[0])

    def doomed_among(self, keeps: np.ndarray, gone: int) -> np.ndarray:
        """Per group of ``keeps``: must merging it and group ``gone`` break a time bound?
        Yes when, for some bound group, a walk the merged model must have passes the
        tightest bound at its end (the rules: :meth:`_doomed_group`; each walk
        continues one out of the fine model, before any merge: :func:`onward_totals`).
        The merged model has every walk of the current one, with totals at least these
        (merging only adds walks and paths and widens ranges).  No check is spent: a
        cheap filter before :meth:`merge`, over every candidate of an event at once (its
        answers hold until a merge is made)."""
        out = np.zeros(len(keeps), dtype=bool)
        if self.bounds.fix is None or not len(keeps):
            return out
        if self.onward is None:
            nt = self.fine.node_type[None, :]
            self.onward = [
                onward_totals(self.fine, stop, upper, (nt != src[:, None]) if first else None)
                for upper, first, src, _, stop in self.bounds.groups
            ]
        keeps = np.ascontiguousarray(keeps, dtype=np.int64)
        for k in range(len(self.bounds.groups)):
            self._doomed_group(k, keeps, gone, out)
            if out.all():
                break
        return out

    def _doomed_group(self, k: int, keeps: np.ndarray, gone: int, out: np.ndarray) -> None:
        """``out[j]`` set (never cleared) where merging group ``keeps[j]`` (int64) and
        group ``gone`` must break a bound of bound group ``k`` (in C:
        :func:`~._walks.doomed`), by the group's rule:

        - every (a, later b) pair of a walk counts: a walk into one of the two (the
          current totals, or 0 at a node of the bound's source type) continued out of
          the other passes the bound;
        - AlwaysPrecedes' upper bounds (walks from the first ``a`` of a path to a ``b``
          before the next ``a``; ``onward`` walks whose inner nodes are no ``a``): rows
          whose ``a`` is the merged nodes' type, one of them is a first ``a`` now (the
          current reach, which merging keeps) and a walk out of the other passes the
          bound (the merged node is a first ``a`` with both nodes' edges); other rows, a
          walk from a first ``a`` into one of them (the current totals) continued out of
          the other passes it.  On the benchmark's 2,000-event connection log 10,245 of
          17,217 merge checks failed on these bounds, which the every-pair rule does not
          see (docs/synoptic-engine.md, "Merges that must fail on AlwaysPrecedes'
          bounds")."""
        assert self.bounds.fix is not None and self.onward is not None
        upper, first, sources, _, _ = self.bounds.groups[k]
        totals, reach = self.bounds.fix.totals[k], self.bounds.fix.reach[k]
        doomed_rule(
            np.ascontiguousarray(totals, dtype=np.float64),
            self.onward[k],
            None if reach is None else np.ascontiguousarray(reach, dtype=bool),
            np.ascontiguousarray(sources, dtype=np.int64),
            self.node_type,
            keeps,
            gone,
            bool(upper),
            bool(first),
            out,
            totals.shape[0],
            totals.shape[1],
            len(keeps),
        )

    def merge(self, keep: int, gone: int) -> bool:
        """Merge group ``gone`` into group ``keep`` if every invariant still holds."""
        self.spent += check_units(self.fine.n)
        trial = np.where(self.group == gone, keep, self.group)
        g = merge_nodes(self.graph, keep, gone)
        saved = (self.untimed.src, self.untimed.dst, self.untimed.fix)
        if not self.untimed.merge(keep, gone):
            return False
        # IntrBy last: the untimed and bound checks refute most merges first (on the
        # benchmark's 601-event connection log IntrBy refuted none of 5,902)
        fix = self.bounds.check(g, (keep, gone))
        intr = None
        if fix is not None and self.intr is not None:
            intr = intr_reach_merged(g, self.codes, self.intr, keep, gone)
        if fix is None or (intr is not None and intr_broken(g, self.codes, intr).any()):
            self.untimed.src, self.untimed.dst, self.untimed.fix = saved
            return False
        self.bounds.fix, self.intr = fix, intr
        self.group, self.graph = trial, g
        return True


def merge_candidates(
    same_type: list[np.ndarray], rng: np.random.Generator, eager_pairs: int = EAGER_PAIRS
) -> Iterator[tuple[int, int]]:
    """Every pair of nodes within each array of ``same_type`` once, in a seeded order:
    the listed pairs shuffled when there are at most ``eager_pairs``, else
    :func:`lazy_pair_order` (O(groups) memory instead of O(pairs))."""
    sizes = np.array([len(s) for s in same_type], dtype=np.int64)
    counts = sizes * (sizes - 1) // 2
    total = int(counts.sum())
    if total <= eager_pairs:
        pairs = [
            (int(p), int(q))
            for same in same_type
            for i, p in enumerate(same)
            for q in same[i + 1 :]
        ]
        for k in rng.permutation(len(pairs)):
            yield pairs[k]
        return
    offsets = np.r_[0, np.cumsum(counts)]
    for k in lazy_pair_order(total, rng):
        g = int(np.searchsorted(offsets, k, side="right")) - 1
        i, j = triangle_pair(k - int(offsets[g]))
        yield int(same_type[g][i]), int(same_type[g][j])


def lazy_pair_order(total: int, rng: np.random.Generator) -> Iterator[int]:
    """``0 .. total - 1`` each once, in the seeded order ``k -> (a k + b) mod total``
    (``a`` coprime with ``total``, so the map is a bijection); O(1) memory."""
    if total <= 1:
        yield from range(total)
        return
    a = int(rng.integers(1, total))
    while gcd(a, total) != 1:
        a = a % (total - 1) + 1
    b = int(rng.integers(total))
    for k in range(total):
        yield (a * k + b) % total


def triangle_pair(k: int) -> tuple[int, int]:
    """The ``k``-th pair ``(i, j)``, ``i < j``, in the order (0,1), (0,2), (1,2), (0,3), ...
    (``j`` is the largest with ``j (j - 1) / 2 <= k``; exact integer square root)."""
    j = (1 + isqrt(1 + 8 * k)) // 2
    return k - j * (j - 1) // 2, j


def coarsen_timed(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    rng: np.random.Generator,
    max_failures: int | None = None,
    eager_pairs: int = EAGER_PAIRS,
) -> PartitionModel:
    """Merge same-type nodes of ``model`` (pairs in a seeded order, :func:`merge_candidates`
    with ``eager_pairs``; passes until one merges nothing, or ``max_failures`` merges
    failed) while every invariant of ``codes`` holds.  A pair that failed is not tried
    again (merging only adds walks and widens edge ranges, so it would fail in any
    coarser model too)."""
    merges = _TimedMerges(model, codes, ticks)
    n = model.n_nodes
    failed: dict[int, set[int]] = {}
    changed = merges.bounds.fix is not None and merges.untimed.fix is not None
    failures = 0
    while changed and (max_failures is None or failures < max_failures):
        changed = False
        group = merges.group
        reps = np.nonzero(group == np.arange(n))[0]
        types = model.node_type[reps]
        same_type = [reps[types == t] for t in np.unique(types[types >= 0])]
        for p, q in merge_candidates(same_type, rng, eager_pairs):
            if merges.group[p] != p or merges.group[q] != q or q in failed.get(p, ()):
                continue
            keep, gone = min(p, q), max(p, q)
            if max_failures is not None and failures >= max_failures:
                break
            if not merges.merge(keep, gone):
                failures += 1
                failed.setdefault(p, set()).add(q)
                failed.setdefault(q, set()).add(p)
                continue
            moved = failed.pop(gone, set())
            for x in moved:
                failed[x].discard(gone)
                failed[x].add(keep)
            failed.setdefault(keep, set()).update(moved)
            changed = True
    return PartitionModel(model.log, merges.group[model.part], model.node_type.copy()).compact()


#: Work charged for a merge :func:`coarsen_sided` skips as doomed, in checks (it costs
#: almost none): what it frees goes to polishing, whose checks cost more CPU than their
#: units say (5,003 connection events: 1.04-1.07 ms per unit polishing, 0.65-0.9 first
#: fit and folds), so charging half keeps the CPU at about main's (1.05x) for 14-19
#: fewer nodes; free: 368 nodes instead of 404 for 1.2-1.3x the CPU; charged whole:
#: 397-403 for 0.8-0.9x (docs/synoptic-engine.md, "Where the nodes come from").
DOOMED_UNITS = 0.5


def coarsen_sided(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    rng: np.random.Generator,
    sides: Sides,
    max_failures: int | None = None,
    fresh: np.ndarray | None = None,
    work: list[float] | None = None,
) -> PartitionModel:
    """Coarsening as :func:`coarsen_timed`, but a merge of two nodes whose events
    conflict in time (:mod:`.timeconflicts`: such a merge must fail) is never tried:
    per pass, nodes in a seeded order, each tried only with the same-type nodes it does
    not conflict with (seeded order), node values updated after each merge; a merge that
    must fail (:meth:`_TimedMerges.doomed`) counts as a failed one without a check (the
    same merges, less CPU; its work counted as ``DOOMED_UNITS`` of a check's).  ``fresh``
    (bool per node): only merges of a fresh node into a node that is not are tried.
    ``work[0]``: the work of its merge checks is added there (:func:`check_units`)."""
    merges = _TimedMerges(model, codes, ticks)
    n = model.n_nodes
    old = np.ones(n, dtype=bool) if fresh is None else ~fresh
    pn, sn = sides.node_values(model.part, n)
    failed: set[tuple[int, int]] = set()
    changed = merges.bounds.fix is not None and merges.untimed.fix is not None
    failures = 0
    while changed and (max_failures is None or failures < max_failures):
        changed = False
        reps = np.nonzero(merges.group == np.arange(n))[0]
        reps = reps[model.node_type[reps] >= 0]
        if fresh is not None:
            reps = reps[fresh[reps]]
        # per type, the nodes a node may merge into (id order), live at the pass's start
        alive = np.nonzero((merges.group == np.arange(n)) & old)[0]
        runs = {
            t: NodeRuns.of(alive[model.node_type[alive] == t], pn, sn)
            for t in np.unique(model.node_type[reps]).tolist()
        }
        for p in rng.permutation(reps).tolist():
            if merges.group[p] != p:
                continue
            ok = runs[int(model.node_type[p])].compatible(pn, sn, sides.limit, pn[p], sn[p])
            ok = ok[(merges.group[ok] == ok) & (ok != p)]
            for q in rng.permutation(ok).tolist():
                if merges.group[p] != p or merges.group[q] != q:
                    continue
                keep, gone = (min(p, q), max(p, q)) if fresh is None else (q, p)
                if (keep, gone) in failed:
                    continue
                if max_failures is not None and failures >= max_failures:
                    break
                if merges.doomed(keep, gone):
                    merges.spent += DOOMED_UNITS * check_units(merges.fine.n)
                    failures += 1
                    failed.add((keep, gone))
                    continue
                if not merges.merge(keep, gone):
                    failures += 1
                    failed.add((keep, gone))
                    continue
                pn[keep] = np.maximum(pn[keep], pn[gone])
                sn[keep] = np.maximum(sn[keep], sn[gone])
                failed = {(a if a != gone else keep, b if b != gone else keep) for a, b in failed}
                if fresh is None:
                    failed = {(min(a, b), max(a, b)) for a, b in failed}
                changed = True
                if fresh is not None:
                    break  # p is merged
                p = keep
    if work is not None:
        work[0] += merges.spent
    return PartitionModel(model.log, merges.group[model.part], model.node_type.copy()).compact()


#: After colouring, refinement handles ``events // COLOUR_BATCH_EVENTS`` violated bounds
#: per step (few remain; no trial splits beyond one): on a 400-event state log 2.5 s
#: and 235 nodes instead of 4.1 s and 242 with one bound per step and trials.
COLOUR_BATCH_EVENTS = 50

#: Logs of more than this many events are inferred piece by piece (:func:`infer_pieces`).
PIECE_EVENTS = 400
#: Events per piece there: first fit over more events at once shares more nodes, at a
#: cost per event that grows with the piece (docs/synoptic-engine.md: 400 -> 1,000 events
#: per piece, connection logs 8-18% fewer nodes for 1.4-1.6x the CPU).
FIRST_FIT_EVENTS = 1_000


def sub_log(log: EventLog, first: int, last: int) -> EventLog:
    """Traces ``first .. last - 1`` of ``log`` as a log of their own (same type codes)."""
    lo, hi = int(log.starts[first]), int(log.starts[last])
    text = log.time_text[lo:hi]
    return EventLog(
        log.types,
        log.codes[lo:hi],
        log.starts[first : last + 1] - lo,
        log.times[lo:hi],
        log.lines[lo:hi],
        text,
        log.trace_ids[first:last] if log.trace_ids else [],
    )


def pieces(log: EventLog, size: int) -> list[tuple[int, int]]:
    """Consecutive runs of traces ``(first, last)`` of at least ``size`` events each (the
    last run takes the rest when it would be smaller than half of ``size``)."""
    out, first = [], 0
    for k in range(1, log.n_traces + 1):
        if log.starts[k] - log.starts[first] >= size:
            out.append((first, k))
            first = k
    if first < log.n_traces:
        if out and log.starts[-1] - log.starts[first] < size // 2:
            out[-1] = (out[-1][0], log.n_traces)
        else:
            out.append((first, log.n_traces))
    return out


def colour_attempt(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    rng: np.random.Generator,
    sides: Sides,
    max_nodes: int | None = None,
    max_failures: int = COARSEN_FAILURES,
) -> PartitionModel:
    """One model: the untimed invariants made to hold (Synoptic's refinement), the nodes
    split by a colouring of the time conflicts (:func:`~.timeconflicts.colour_nodes`:
    no two events of a node conflict, but walks through several nodes may still break a
    bound), what still fails
    refined (:func:`refine_timed`), then coarsened without trying a merge that must fail
    (:func:`coarsen_sided`, at most ``max_failures`` failed merges).
    :class:`_TooLarge` past ``max_nodes`` nodes."""
    model = PartitionModel.initial(log)
    n_types = len(log.types)
    if (
        len(codes.untimed)
        and violated(
            model.edge_counts() > 0, model.node_type, codes.untimed, n_types, trim=False
        ).any()
    ):
        model = refine(model, codes.untimed, rng, max_steps=UNTIMED_STEPS, finish="targeted")
    part, node_type = colour_nodes(model.part, model.node_type, log, sides, rng)
    model = PartitionModel(log, part, node_type).compact()
    if max_nodes is not None and model.n_nodes > max_nodes:
        raise _TooLarge
    batch = max(1, log.n_events // COLOUR_BATCH_EVENTS)
    model = refine_timed(model, codes, ticks, rng, max_nodes, batch)
    return coarsen_sided(model, codes, ticks, rng, sides, max_failures)


def elapsed_ticks(log: EventLog, ticks: np.ndarray) -> np.ndarray:
    """Per event: its time since its trace's first event (ticks)."""
    return ticks - ticks[log.starts[:-1][log.trace_of]]


#: Logs whose median trace has at most this many events are *short-trace* logs
#: (:func:`short_traces`): first fit takes their longest traces first.
SHORT_TRACE_EVENTS = 12


def short_traces(log: EventLog) -> bool:
    """Is the median trace of ``log`` at most ``SHORT_TRACE_EVENTS`` events long?  (The
    benchmark's connection logs: median 7; its state logs: 16-19.)"""
    return bool(log.n_traces) and float(np.median(np.diff(log.starts))) <= SHORT_TRACE_EVENTS


#: A short-trace log with at least this share of its events in traces longer than
#: ``SHORT_TRACE_EVENTS`` is *mixed* (:func:`mixed_traces`).
MIXED_SHARE = 0.25


def mixed_traces(log: EventLog) -> bool:
    """Is ``log`` short-trace (:func:`short_traces`) with at least ``MIXED_SHARE`` of its
    events in traces longer than ``SHORT_TRACE_EVENTS``?  (The shipped lab folders' logs
    of traces of at most 40 events: 31-54% in traces of 13-40 events beside many of 3-5;
    the benchmark's connection logs: none, every trace has 3-11.)  Neither of
    :func:`first_fit_order`'s orders is known to be the better one there."""
    if not short_traces(log):
        return False
    length = np.diff(log.starts)
    return float(length[length > SHORT_TRACE_EVENTS].sum()) >= MIXED_SHARE * log.n_events


def first_fit_order(log: EventLog, ticks: np.ndarray, by_length: bool = True) -> np.ndarray:
    """The events in first fit's order.  ``by_length``: by their trace's length (events),
    longest first, then by their position in their trace, then by their time since their
    trace's start (ticks; ties: log order); the long traces lay out a spine of nodes at
    each step of a connection that the shorter ones then join (the benchmark's
    connection logs: 134 / 172 nodes at 601 / 1,000 events instead of 155 / 204).  Else
    by the time since the trace's start alone, which suits long traces (state logs: 335
    nodes at 622 events, 354 by length; docs/synoptic-engine.md)."""
    elapsed = elapsed_ticks(log, ticks)
    if not by_length:
        return np.argsort(elapsed, kind="stable")
    length = np.diff(log.starts)[log.trace_of]
    position = np.arange(log.n_events) - log.starts[:-1][log.trace_of]
    return np.lexsort((elapsed, position, -length))


def first_fit_rank(log: EventLog, ticks: np.ndarray, by_length: bool | None = None) -> np.ndarray:
    """Each event's place in :func:`first_fit_order` (``by_length``; default:
    :func:`short_traces`): the inverse permutation, 0 for the first event placed.

    >>> log = EventLog.from_sequences([["a"], ["a", "b"]])
    >>> first_fit_rank(log, np.array([0, 0, 5])).tolist()
    [2, 0, 1]
    """
    if by_length is None:
        by_length = short_traces(log)
    rank = np.empty(log.n_events, dtype=np.int64)
    rank[first_fit_order(log, ticks, by_length)] = np.arange(log.n_events)
    return rank


def select_traces(log: EventLog, traces: np.ndarray) -> tuple[EventLog, np.ndarray]:
    """The traces ``traces`` of ``log`` (in that order) as a log of their own (same type
    codes), and per event of the new log its index in ``log``."""
    lengths = np.diff(log.starts)[traces]
    idx = (
        np.concatenate([np.arange(log.starts[k], log.starts[k + 1]) for k in traces])
        if len(traces)
        else np.zeros(0, dtype=np.int64)
    )
    text = log.time_text
    return (
        EventLog(
            log.types,
            log.codes[idx],
            np.r_[0, np.cumsum(lengths)].astype(log.starts.dtype),
            log.times[idx],
            log.lines[idx],
            text[idx] if isinstance(text, np.ndarray) else text.take(idx),
            [log.trace_ids[k] for k in traces] if log.trace_ids else [],
        ),
        idx,
    )


def longest_first(log: EventLog) -> tuple[EventLog, np.ndarray]:
    """``log`` with its traces reordered longest first (ties: log order), and per event of
    the new log its index in ``log``."""
    return select_traces(log, np.argsort(-np.diff(log.starts), kind="stable"))


#: First fit checks its merges on a model rebuilt every this many events
#: (:func:`first_fit_stages`).
STAGE_EVENTS = 100


def first_fit_stages(order: np.ndarray, size: int = STAGE_EVENTS) -> list[np.ndarray]:
    """First fit's events ``order`` in consecutive stages of ``size`` events (the last
    one shorter)."""
    return [order[k : k + size] for k in range(0, len(order), size)] or [order]


def _side_slice(sides: Sides, lo: int, hi: int) -> Sides:
    """The :class:`~.timeconflicts.Sides` of events ``lo .. hi - 1`` (each event's values
    depend on its own trace only)."""
    return Sides(sides.p[:, lo:hi], sides.s[:, lo:hi], sides.limit)


def first_fit_model(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    by_length: bool | None = None,
    stage_events: int | None = STAGE_EVENTS,
    work: list[float] | None = None,
    max_nodes: int | None = None,
    start: PartitionModel | None = None,
) -> PartitionModel | None:
    """A model built from the trace graph (one node per event: every walk between timed
    edges is a trace's segment, so every invariant holds) by first fit: events in
    :func:`first_fit_order` (``by_length``; default: :func:`short_traces`), each merged
    into the first node of its type made so far (creation order) that it does not
    conflict with in time (:func:`~.timeconflicts.pair_conflicts`) and whose merge keeps
    every invariant (:class:`_TimedMerges`), else kept as a new node.  No randomness.

    In stages of ``stage_events`` events (:func:`first_fit_stages`; None: one stage, the
    whole log), each stage's merges are checked on a model
    rebuilt for it: the nodes made so far (merged-away ones dropped) and the events not
    yet placed of the traces started so far, without the traces not yet started.  The
    same model: an unstarted trace is a chain of its own nodes from INITIAL to TERMINAL
    (every walk in it a segment of that trace, every path that trace), which no walk or
    path of the other nodes enters, so no check's answer depends on it, nor on node
    ids.  A check then costs about the nodes made plus the events still to place of the
    started traces instead of every event of the piece (on a 1,000-event connection
    piece 1.6x less CPU, on the 601-event log 1.1x).  ``work[0]``: the
    work of its merge checks is added there (:func:`check_units`).  ``max_nodes``: None
    as soon as a stage ends with more nodes than that (first fit never removes a node).

    ``start``: a valid model of the first traces of ``log`` (its log holds just those), whose
    events stay where they are; first fit then places only the later traces' events,
    into ``start``'s nodes (in their order) and the nodes it makes (:func:`infer_pieces`:
    a new run's events folded straight into the open model, which adds fewer nodes than
    a run's own model folded in: every event is tried against every older node, and its
    trace's earlier events are already in older nodes, not in a run's own nodes that
    bring their own walks)."""
    if by_length is None:
        by_length = short_traces(log)
    n_start = 0 if start is None else start.log.n_events
    k_start = 0 if start is None else start.log.n_traces
    rest = log if start is None else sub_log(log, k_start, log.n_traces)
    order = n_start + first_fit_order(rest, ticks[n_start:], by_length)
    node_of = np.full(log.n_events, -1, dtype=np.int64)  # creation index of each node
    founder: list[int] = []  # per node: its first event
    node_types: list[int] = []
    # per type, working ids (creation index + 2) in creation order
    placed = [NodeRuns(len(sides.limit)) for _ in log.types]
    started = np.zeros(log.n_traces, dtype=bool)
    # side values of the nodes made so far (working ids), carried from stage to stage:
    # each stage's merges update them in place (:func:`_fit`), as the maxima over the
    # nodes' events (:meth:`~.timeconflicts.Sides.node_values`) would be recomputed
    pn_made = sn_made = np.full((2, len(sides.limit)), -np.inf)
    if start is not None:
        node_of[:n_start] = start.part - 2
        starts_of = np.full(start.n_nodes - 2, n_start, dtype=np.int64)
        np.minimum.at(starts_of, start.part - 2, np.arange(n_start))
        founder = starts_of.tolist()
        node_types = start.node_type[2:].tolist()
        start_sides = Sides(sides.p[:, :n_start], sides.s[:, :n_start], sides.limit)
        pn_made, sn_made = start_sides.node_values(start.part, start.n_nodes)
        # start's nodes tried in first fit's creation order: by the first of their
        # events in first fit's order of start's log
        rank = first_fit_rank(start.log, ticks[:n_start], by_length)
        created = np.full(start.n_nodes - 2, n_start, dtype=np.int64)
        np.minimum.at(created, start.part - 2, rank)
        for q in np.argsort(created, kind="stable").tolist():
            placed[node_types[q]].add(q + 2, pn_made[q + 2], sn_made[q + 2])
        started[:k_start] = True
    for stage in first_fit_stages(order, stage_events or max(len(order), 1)):
        started[log.trace_of[stage]] = True
        sub, idx = select_traces(log, np.nonzero(started)[0])
        fresh = np.full(log.n_events, -1, dtype=np.int64)
        n0 = len(founder) + 2
        fresh[stage] = n0 + np.arange(len(stage))
        later = idx[(node_of[idx] < 0) & (fresh[idx] < 0)]  # placed by later stages
        fresh[later] = n0 + len(stage) + np.arange(len(later))
        part = np.where(node_of[idx] >= 0, node_of[idx] + 2, fresh[idx])
        node_type = np.concatenate(
            [[-1, -1], node_types, log.codes[stage], log.codes[later]]
        ).astype(np.int64)
        merges = _TimedMerges(PartitionModel(sub, part, node_type), codes, ticks[idx])
        # rows of the nodes made and of the stage's events (no later event is read)
        pn = node_rows(pn_made, sides.p[:, stage].T)
        sn = node_rows(sn_made, sides.s[:, stage].T)
        for p in range(n0, n0 + len(stage)):
            t = int(node_type[p])
            if not _fit(p, placed[t], merges, pn, sn, sides.limit):
                placed[t].add(p, pn[p], sn[p])
        # number the stage's new nodes on in creation order (working id order)
        roots = merges.group
        n1 = n0 + len(stage)
        new = np.nonzero(roots[n0:n1] == np.arange(n0, n1))[0] + n0
        renum = np.arange(len(node_type))
        renum[new] = n0 + np.arange(len(new))
        for runs in placed:
            runs.renumber(renum)
        node_of[stage] = renum[roots[fresh[stage]]] - 2
        pn_made = node_rows(pn[:n0], pn[new])
        sn_made = node_rows(sn[:n0], sn[new])
        if work is not None:
            work[0] += merges.spent
        founder.extend(stage[new - n0].tolist())
        node_types.extend(node_type[new].tolist())
        if max_nodes is not None and len(founder) + 2 > max_nodes:
            return None
    # number the nodes by their first event, as one node per event merged in place would
    rank = np.empty(len(founder), dtype=np.int64)
    rank[np.argsort(founder, kind="stable")] = np.arange(len(founder))
    by_first = np.empty(len(founder), dtype=np.int64)
    by_first[rank] = node_types
    return PartitionModel(
        log, rank[node_of] + 2, np.concatenate([[-1, -1], by_first]).astype(np.int64)
    )


def first_fit_best(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    by_length: bool | None = None,
    work: list[float] | None = None,
    both: bool | None = None,
) -> PartitionModel:
    """:func:`first_fit_model` in ``by_length``'s order (default: :func:`short_traces`);
    with ``both`` (default: :func:`mixed_traces`; :func:`infer_pieces` passes the whole
    log's, as its runs of long traces are not mixed themselves) the smaller of it and the other order's (ties: the
    first).  There neither order wins every log: the shipped lab folders' logs of 1,000
    events, ``jitter``: 237 nodes in time order against 261 by length, ``quiche-bbr``: 224
    by length against 241 (the benchmark's connection logs, not mixed, take the longest
    traces first: 134 against 155 at 601 events).  No randomness.  Both runs' checks are
    added to ``work[0]``: within :func:`infer_pieces`' work budget the second order
    takes from polishing, so the CPU per event stays as it was."""
    if by_length is None:
        by_length = short_traces(log)
    best = first_fit_model(log, codes, ticks, sides, by_length, work=work)
    assert best is not None
    if both is None:
        both = mixed_traces(log)
    if both:
        other = first_fit_model(
            log, codes, ticks, sides, not by_length, work=work, max_nodes=best.n_nodes - 1
        )
        if other is not None and other.n_nodes < best.n_nodes:
            best = other
    return best


def _fit(
    p: int,
    nodes: list[int] | NodeRuns,
    merges: _TimedMerges,
    pn: np.ndarray,
    sn: np.ndarray,
    limit: np.ndarray,
    budget: list[int] | None = None,
) -> bool | None:
    """First fit of node ``p``: merged into the first of ``nodes`` (its type's, in order)
    with no time conflict (:func:`~.timeconflicts.pair_conflicts` on the side values
    ``pn``/``sn``, updated in place) whose merge keeps every invariant; True when merged,
    False when none takes it, None when the merge checks in ``budget[0]`` (each check
    spends one) run out first."""
    if isinstance(nodes, NodeRuns):
        same = nodes.compatible(pn, sn, limit, pn[p], sn[p])
    else:
        same = without_conflict(pn, sn, np.asarray(nodes, dtype=np.int64), limit, pn[p], sn[p])
    same = same[~merges.doomed_among(same, p)]
    for q in same.tolist():
        if budget is not None:
            if budget[0] <= 0:
                return None
            budget[0] -= 1
        if merges.merge(q, p):
            np.maximum(pn[q], pn[p], out=pn[q])
            np.maximum(sn[q], sn[p], out=sn[q])
            return True
    return False


#: Merge checks a polishing pass (:func:`polish`) may spend per event of the model it
#: polishes (deterministic: a count, not a time; docs/synoptic-engine.md, "Polishing"; 10 until
#: merges that must fail were filtered out for free, :meth:`_TimedMerges.doomed`; 8 until
#: the checks' walks ran in C, at half a check's CPU: "Merge checks in C"; 16 until the
#: merge checks and trial set-ups ran in C and from the model's walks: "Merge checks in
#: C, continued").
POLISH_CHECKS = 24
#: Nodes of one type dissolved and repacked per polishing trial: 2 to this many.
POLISH_GROUP = 4
#: A check costs about its model's nodes (Bellman-Ford over the model's edges): models
#: of more nodes than this get proportionally fewer checks (:func:`polish_budget`).
POLISH_NODES = 150


def polish_budget(n_events: int, n_nodes: int, per_event: int = POLISH_CHECKS) -> int:
    """Merge checks for polishing a model of ``n_nodes`` nodes of ``n_events`` events:
    ``per_event`` per event, scaled down by ``POLISH_NODES / n_nodes`` past
    ``POLISH_NODES`` nodes so that the CPU per event stays flat (connection logs of
    2,000 events: one model of about 300 nodes, a check 1.7x the cost of one at 134)."""
    return int(per_event * n_events * min(1.0, POLISH_NODES / max(n_nodes, 1)))


#: Logs in pieces (:func:`infer_pieces`): work units per event and per unit of
#: ``polish_checks`` for first fit, folds and polishing together (:func:`polish_split`).
PIECE_WORK = 1.7
#: Logs of several runs placed into one open model (:func:`infer_pieces`): that model is
#: polished after each run with this many times ``polish_checks`` per event of the run
#: (:func:`polish_budget`); 1.5 gives 0.8-1.15x the CPU of polishing once at the end on
#: connection logs of 2,000-10,008 events (docs/synoptic-engine.md, "Polishing run by
#: run").
GROW_CHECKS = 1.5


def polish_split(left: float, nodes: list[int]) -> list[int]:
    """Merge checks for polishing each of several closed models (``nodes``: their node
    counts) out of ``left`` work units (:func:`check_units`; what is left of
    ``PIECE_WORK * polish_checks`` units per event once first fit and the folds took
    theirs) shared in proportion to their nodes (what polishing removes), each share in
    checks on its model (0 when nothing is left).  First fit's work per event grows with
    the log (pieces of long traces), so polishing gets less there and the CPU per event
    stays flat (docs/synoptic-engine.md, "Flat CPU per event").  Sharing at the end
    instead of polishing each model with what is left when it closes: on short-trace logs
    the first models hold the longest traces, whose first fit and folds cost the most, so
    they were closed with nothing left (the 10,008-event connection log: its first,
    624-node model was not polished at all) while the last model took everything."""
    total = sum(nodes)
    if left <= 0 or total <= 0:
        return [0] * len(nodes)
    return [int(left * (n / total) / check_units(n)) for n in nodes]


@dataclass(frozen=True)
class _Known:
    """What polishing knows of its current model between trials: its nodes' side values
    (:meth:`~.timeconflicts.Sides.node_values`), and, once a trial has made it, its graph
    and its walks (:class:`~.timecheck.BoundCheck`'s)."""

    values: NodeValues
    graph: TimedGraph | None = None
    walks: Walks | None = None
    upper: tuple[bool, ...] = ()  # per bound group of ``walks``: upper bounds?


def _walks_outside(known: _Known, nodes: np.ndarray, n: int) -> Walks | None:
    """The known model's walks kept at the nodes no walk from ``nodes`` reaches (every
    walk into such a node avoids ``nodes``, so splitting them changes neither its totals
    nor its first-``a`` reach) and set to "no walk" at the others and at ``n`` minus the
    model's node count more nodes: walks to start from on the model with ``nodes``
    split (below (upper) / above (lower) its own, reach a subset).  None when the graph
    or walks are not known."""
    if known.graph is None or known.walks is None:
        return None
    g = known.graph
    seeds = np.zeros((1, g.n), dtype=bool)
    seeds[0, nodes] = True
    reached = closure(g, seeds, np.ones_like(seeds))[0]
    totals: list[np.ndarray] = []
    reach: list[np.ndarray | None] = []
    for x, r, up in zip(known.walks.totals, known.walks.reach, known.upper, strict=True):
        none = -np.inf if up else np.inf
        t = np.full((x.shape[0], n), none)
        t[:, : g.n] = np.where(reached, none, x)
        totals.append(t)
        if r is None:
            reach.append(None)
        else:
            f = np.zeros((r.shape[0], n), dtype=bool)
            f[:, : g.n] = r & ~reached
            reach.append(f)
    return Walks(totals, reach)


@dataclass
class _Dissolved:
    """A model whose neighbourhood ``nodes`` (same type or not) is dissolved into one node
    per event, numbered from the model's node count on in ``events``' order (by
    ``rank``): the start of :func:`repack` and :func:`exact_repack`.  ``merges`` checks
    merges on it, ``pn``/``sn`` are its nodes' side values, ``own[t]``: the kept nodes of
    each type ``t`` of the dissolved events (INITIAL, TERMINAL and ``nodes`` left out)."""

    log: EventLog
    events: np.ndarray
    part: np.ndarray
    node_type: np.ndarray
    merges: _TimedMerges
    pn: np.ndarray
    sn: np.ndarray
    own: dict[int, list[int]]

    @classmethod
    def of(
        cls,
        model: PartitionModel,
        codes: TimedCodes,
        ticks: np.ndarray,
        sides: Sides,
        nodes: np.ndarray,
        rank: np.ndarray,
        known: _Known | None = None,
    ) -> _Dissolved:
        """``model`` with ``nodes`` dissolved; ``known``: what is known of ``model``
        (else computed here)."""
        log = model.log
        events = np.nonzero(np.isin(model.part, nodes))[0]
        events = events[np.argsort(rank[events], kind="stable")]
        n0 = model.n_nodes
        part = model.part.copy()
        part[events] = n0 + np.arange(len(events))
        node_type = np.concatenate([model.node_type, log.codes[events]])
        start = None if known is None else _walks_outside(known, nodes, len(node_type))
        merges = _TimedMerges(PartitionModel(log, part, node_type), codes, ticks, start)
        if known is None:
            pn, sn = sides.node_values(part, len(node_type))
        else:  # the maxima over one event are its values; dissolved nodes hold none
            pn = node_rows(known.values[0], sides.p[:, events].T)
            sn = node_rows(known.values[1], sides.s[:, events].T)
            pn[nodes] = sn[nodes] = -np.inf
        kept = np.ones(n0, dtype=bool)
        kept[[INIT_NODE, TERM_NODE]] = False
        kept[nodes] = False
        own = {
            t: np.nonzero(kept & (model.node_type == t))[0].tolist()
            for t in np.unique(log.codes[events]).tolist()
        }
        return cls(log, events, part, node_type, merges, pn, sn, own)

    def _merged(self) -> PartitionModel:
        """The merges made so far, before :meth:`~.model.PartitionModel.compact`."""
        return PartitionModel(self.log, self.merges.group[self.part], self.node_type)

    def result(self) -> PartitionModel:
        """The model of the merges made so far."""
        return self._merged().compact()

    def result_known(self) -> _Known:
        """What is known of :meth:`result`'s model: each group's side values, edges and
        walks are kept on its smallest id (merges take the maxima in place, and rename
        the other's edges and walks to it), and :meth:`~.model.PartitionModel.compact`
        keeps the used ids in order."""
        used = self._merged().used()
        new_id = np.cumsum(used) - 1
        g = self.merges.graph
        graph = TimedGraph(
            int(used.sum()), new_id[g.src], new_id[g.dst], g.wmin, g.wmax, self.node_type[used]
        )
        fix = self.merges.bounds.fix
        walks = None
        if fix is not None:
            walks = Walks(
                [x[:, used] for x in fix.totals],
                [None if r is None else r[:, used] for r in fix.reach],
            )
        upper = tuple(bool(group[0]) for group in self.merges.bounds.groups)
        # column-major, as the side values are kept (:func:`~.timeconflicts.node_rows`)
        values = (self.pn.T[:, used].T, self.sn.T[:, used].T)
        return _Known(values, graph, walks, upper)


def repack(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    nodes: np.ndarray,
    rank: np.ndarray,
    budget: list[int],
) -> PartitionModel | None:
    """``model`` with the events of ``nodes`` (same type) placed again by first fit
    (events by ``rank``: each into the first node of its type, kept nodes by id then the
    nodes made here, with no time conflict and whose merge keeps every invariant), or
    None when that needs more nodes than ``nodes`` or the merge checks in ``budget[0]``
    run out (each check spends one).  Valid: splitting nodes of a valid model into
    one node per event keeps every invariant (each walk or path of the finer model is
    one of the coarser, with narrower edge ranges), and every merge is checked."""
    hood = _repacked(model, codes, ticks, sides, nodes, rank, budget)
    return None if hood is None else hood.result()


def _repacked(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    nodes: np.ndarray,
    rank: np.ndarray,
    budget: list[int],
    known: _Known | None = None,
) -> _Dissolved | None:
    """:func:`repack`'s neighbourhood after its first fit (``known``: what is known of
    ``model``), or None."""
    hood = _Dissolved.of(model, codes, ticks, sides, nodes, rank, known)
    merges, pn, sn, node_type, placed = hood.merges, hood.pn, hood.sn, hood.node_type, hood.own
    n0, events = model.n_nodes, hood.events
    made = 0
    for p in range(n0, n0 + len(events)):
        t = int(node_type[p])
        fit = _fit(p, placed[t], merges, pn, sn, sides.limit, budget)
        if fit is None:
            return None
        if not fit:
            placed[t].append(p)
            made += 1
            if made > len(nodes):
                return None
    return hood


def _merge_state(merges: _TimedMerges) -> tuple:
    """What :meth:`_TimedMerges.merge` replaces on success (it never mutates them): the
    state to put back to undo a merge."""
    u = merges.untimed
    return merges.group, merges.graph, u.src, u.dst, u.fix, merges.bounds.fix, merges.intr


def _restore(merges: _TimedMerges, state: tuple) -> None:
    """Undo the merges made since :func:`_merge_state` gave ``state``."""
    u = merges.untimed
    merges.group, merges.graph, u.src, u.dst, u.fix, merges.bounds.fix, merges.intr = state


def hood_order(pe: np.ndarray, se: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Positions of a neighbourhood's events (side values ``pe``, ``se``: events x
    bounds) in branch-and-bound order: the most time conflicts with the others first
    (fail first, DSATUR's order made static), ties in the given order."""
    if not len(pe) or not len(limit):
        return np.arange(len(pe))
    return np.argsort(-conflict_degrees(pe, se, limit), kind="stable")


def exact_repack(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    nodes: np.ndarray,
    rank: np.ndarray,
    budget: list[int],
    extra: int = 0,
) -> PartitionModel | None:
    """``model`` with the events of ``nodes`` (``k`` nodes) placed again into the other
    nodes of their types and at most ``k - 1 + extra`` new nodes, found by branch and
    bound, or None when no such placement exists or the merge checks in ``budget[0]``
    run out first (each check spends one).

    Events in :func:`hood_order` (ties by ``rank``) each go into a kept node of their
    type, a node opened for an earlier event, or a new node (opened in order: the usual
    symmetry breaking of set-partition enumeration); pairs in time conflict and merges
    that must fail (:meth:`_TimedMerges.doomed`) are never tried.  A partial placement is checked on the model where every event not yet placed
    is a node of its own, and cut when an invariant fails there: merging only adds walks
    and widens edge ranges, so every completion fails too (the pruning of
    tests/perfume_exact.py's exact search, here on one neighbourhood with the rest of the
    model fixed: large-neighbourhood search, Shaw, CP 1998).  Opening a new node needs no
    check.  So a None with checks left is a proof that the neighbourhood cannot shrink.
    Valid as :func:`repack`."""
    hood = _Dissolved.of(model, codes, ticks, sides, nodes, rank)
    events = hood.events
    order = model.n_nodes + hood_order(sides.p[:, events].T, sides.s[:, events].T, sides.limit)
    search = _HoodSearch(hood, order.tolist(), sides.limit, len(nodes) - 1 + extra, budget)
    return hood.result() if search.place(0) else None


class _HoodSearch:
    """:func:`exact_repack`'s branch and bound on one neighbourhood ``hood``: its events
    placed in ``order`` into kept or opened nodes, at most ``most`` opened, one merge
    check of ``budget[0]`` spent per try.  (A class, not a closure that calls itself:
    such a closure holds itself, a reference cycle, and each search's arrays stayed
    until the cyclic collector ran: 58 dead searches at once, 522 MiB of side values, on
    a 10,007-event one-trace log.)"""

    def __init__(
        self, hood: _Dissolved, order: list[int], limit: np.ndarray, most: int, budget: list[int]
    ):
        self.hood, self.order, self.limit, self.most, self.budget = hood, order, limit, most, budget
        self.opened: dict[int, list[int]] = {t: [] for t in hood.own}
        self.n_open = 0

    def place(self, i: int) -> bool | None:
        """True once the events from the ``i``-th on are placed; False when they cannot
        be; None when the checks ran out."""
        if i == len(self.order):
            return True
        hood, budget = self.hood, self.budget
        merges, pn, sn = hood.merges, hood.pn, hood.sn
        p = self.order[i]
        t = int(hood.node_type[p])
        cands = np.asarray(hood.own[t] + self.opened[t], dtype=np.int64)
        if cands.size and len(self.limit):
            cands = without_conflict(pn, sn, cands, self.limit, pn[p], sn[p])
        # the answers hold for the whole loop: a failed merge changes nothing, and a
        # merge that holds is undone before the next candidate
        cands = cands[~merges.doomed_among(cands, p)]
        for q in cands.tolist():
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            state = _merge_state(merges)
            if not merges.merge(q, p):
                continue
            saved = pn[q].copy(), sn[q].copy()
            np.maximum(pn[q], pn[p], out=pn[q])
            np.maximum(sn[q], sn[p], out=sn[q])
            done = self.place(i + 1)
            if done or done is None:
                return done
            pn[q], sn[q] = saved
            _restore(merges, state)
        if self.n_open >= self.most:
            return False
        self.opened[t].append(p)  # alone, as in the model checked so far
        self.n_open += 1
        done = self.place(i + 1)
        if not done:
            self.opened[t].pop()
            self.n_open -= 1
        return done


#: What a trial of :func:`polish` or :func:`exact_descent` costs before its merge
#: checks, in checks: its :class:`_TimedMerges` set up on the whole model and the
#: onward totals of :meth:`_TimedMerges.doomed` (1,000-event connection log: 2.2 + 0.7
#: ms against 0.4 ms per check).
TRIAL_CHECKS = 7
#: The exact stage of :func:`polish`: merge checks per check of its search.
POLISH_EXACT = 0.1
#: Merge checks one neighbourhood of the exact stage may spend (most refute in 10-40).
HOOD_CHECKS = 100


def exact_descent(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    rng: np.random.Generator,
    checks: int,
    rank: np.ndarray,
) -> PartitionModel:
    """``model`` made smaller by :func:`exact_repack` on neighbourhoods of 2 to
    ``POLISH_GROUP`` same-type nodes (types by their nodes, seeded), each with at most
    ``HOOD_CHECKS`` merge checks; a neighbourhood that fits in one node fewer replaces
    the model.  Stops once ``checks`` checks are spent (a neighbourhood's set-up counts
    as ``TRIAL_CHECKS`` more; deterministic for a seed).  On the benchmark's connection
    logs most neighbourhoods are refuted within 10-40 checks: a polished model rarely
    has a neighbourhood of 2-4 nodes that fits in one fewer."""
    budget = [checks]
    while budget[0] > 0:
        if not (np.bincount(model.node_type[2:], minlength=1) >= 2).any():
            break
        t = int(model.node_type[rng.integers(2, model.n_nodes)])
        same = np.nonzero(model.node_type == t)[0]
        budget[0] -= TRIAL_CHECKS
        if len(same) < 2:
            continue
        k = int(rng.integers(2, min(POLISH_GROUP, len(same)) + 1))
        group = rng.choice(same, k, replace=False)
        cap = [min(budget[0], HOOD_CHECKS)]
        start = cap[0]
        new = exact_repack(model, codes, ticks, sides, group, rank, cap)
        budget[0] -= start - cap[0]
        if new is not None:
            model = new
    return model


def polish(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    rng: np.random.Generator,
    checks: int,
    exact: float | None = None,
) -> PartitionModel:
    """A valid ``model`` made smaller by large-neighbourhood search: each trial picks a
    node's type (a type with more nodes is picked more often: 122 nodes against 128 when
    every type is as likely, the benchmark's 601-event connection log) and 2 to
    ``POLISH_GROUP`` of its nodes (seeded), and :func:`repack` s their events; the
    result is kept when it has no more nodes (equal-size moves let the search wander),
    and the first model of the fewest nodes is kept (``model`` itself unless one is
    smaller).  Merges of two nodes alone (coarsening) cannot shrink a first-fit model
    (each same-type pair conflicts or breaks an invariant); moving events between
    several nodes can.  Stops once ``checks`` merge checks are spent (a trial's set-up
    counts as ``TRIAL_CHECKS`` more; merges that must fail, :meth:`_TimedMerges.doomed`,
    cost none; deterministic for a seed).  Then :func:`exact_descent` from that model
    with ``exact`` (default ``POLISH_EXACT``) x ``checks`` more: the wandering search
    finds equal-size moves, the exact stage the strict descents it missed.  Between the
    two, whole nodes that now merge are merged (:func:`coarsen_sided`; merges that must
    fail are not checked), its checks taken from the exact stage's."""
    log = model.log
    rank = first_fit_rank(log, ticks)
    if exact is None:
        exact = POLISH_EXACT
    budget = [checks]
    best = model
    known = _Known(sides.node_values(model.part, model.n_nodes))  # ``model``'s, kept with it
    while budget[0] > 0:
        counts = np.bincount(model.node_type[2:], minlength=len(log.types))
        if not (counts >= 2).any():
            break
        t = int(model.node_type[rng.integers(2, model.n_nodes)])  # types by their nodes
        same = np.nonzero(model.node_type == t)[0]
        if len(same) < 2:
            continue
        k = int(rng.integers(2, min(POLISH_GROUP, len(same)) + 1))
        group = rng.choice(same, k, replace=False)
        budget[0] -= TRIAL_CHECKS  # a trial's set-up: the loop ends
        hood = _repacked(model, codes, ticks, sides, group, rank, budget, known)
        if hood is None:
            continue
        new = hood.result()
        if new.n_nodes <= model.n_nodes:
            if new.n_nodes < best.n_nodes:
                best = new
            model, known = new, hood.result_known()
    if checks <= 0:
        return best
    # repacks can leave two nodes that merge whole (the 2,000-event connection log, seed
    # 1: 3 such pairs in the polished 237-node model): coarsening, its checks taken from
    # the exact stage's
    spent = [0.0]
    n_before = best.n_nodes
    best = coarsen_sided(best, codes, ticks, rng, sides, COARSEN_FAILURES, work=spent)
    exact_checks = int(exact * checks) - int(spent[0] / check_units(n_before))
    if exact > 0 and exact_checks > 0:
        best = exact_descent(best, codes, ticks, sides, rng, exact_checks, rank)
    return best


#: Merge checks per event for placing, event by event, what a fold left of a new run
#: (:func:`fold_repack`), within the work budget of ``PIECE_WORK``.
FOLD_CHECKS = 10


def fold_repack(
    model: PartitionModel,
    n_old: int,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    per_event: int,
    left: float,
    work: list[float],
) -> PartitionModel:
    """A fold's nodes ``n_old ..`` (the new run's nodes that no older node took whole)
    dissolved type by type and their events placed by first fit into the model
    (:func:`repack`: older nodes first), kept when that gives fewer nodes.  Merge checks:
    ``per_event`` per event repacked, within ``left`` work units (:func:`check_units`);
    the work spent is added to ``work[0]``.  The older nodes keep their ids."""
    log = model.log
    rank = first_fit_rank(log, ticks)
    for t in np.unique(model.node_type[n_old:]).tolist():
        group = np.nonzero(model.node_type == t)[0]
        group = group[group >= n_old]
        unit = check_units(model.n_nodes)
        budget = [min(per_event * int(np.isin(model.part, group).sum()), int(left / unit))]
        if budget[0] <= 0:
            break
        start = budget[0]
        new = repack(model, codes, ticks, sides, group, rank, budget)
        spent = (start - budget[0]) * unit
        work[0] += spent
        left -= spent
        if new is not None and new.n_nodes < model.n_nodes:
            model = new
    return model


#: A dense log's models (below) are closed (later pieces start a new one) past this
#: many nodes, which bounds the cost of each fold (connection logs of 2,000 / 5,000
#: events: 448 / 942 nodes with 150, 388 / 852 with 300, for 15-35% more CPU).
FOLD_NODES = 300
#: A log is dense when it is not short-trace (:func:`short_traces`: a short-trace log's
#: traces share most of their nodes, which models side by side repeat; real stacks'
#: logs of 5,000 / 10,000 events: 496 / 930 nodes dense, 362 / 605 not,
#: docs/synoptic-engine.md "Real stacks' logs past 2,000 events"), its first run's first
#: fit has more than ``FOLD_NODES`` nodes and, placed run by run into the open model,
#: more than this many nodes per event: the state and event logs' first runs have
#: 0.36-0.52 (dense pieces give them 3-6% fewer nodes at 2,000 events).
DENSE_SHARE = 1 / 3
#: A log that is not dense has its one open model closed past this many nodes (its new
#: runs' events absorbed by :func:`fold_repack`), a guard on the cost of a check: real
#: stacks' logs of 20,000 events reach 1,065 nodes before the last polishing (600 closed
#: them at 10,000 events, 730 nodes against 605).
CLOSE_NODES = 2_000


def infer_pieces(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    seed: int,
    size: int = FIRST_FIT_EVENTS,
    fold_nodes: int = FOLD_NODES,
    dense_size: int = PIECE_EVENTS,
    reorder: bool = True,
    polish_checks: int = POLISH_CHECKS,
    fold_checks: int = FOLD_CHECKS,
    close_nodes: int = CLOSE_NODES,
    fit_folds: bool = True,
    grow_checks: float = GROW_CHECKS,
) -> PartitionModel:
    """A model of a long log made piece by piece: the traces (of a short-trace log,
    :func:`short_traces`, with ``reorder``: longest first, :func:`longest_first`; a
    model's validity does not depend on the order of the traces) in runs of about ``size``
    events (:func:`pieces`), the first run of a model by :func:`first_fit_model` under
    the whole log's invariants, each later run's events placed by first fit straight into
    that open model (``fit_folds`` and a log that is not :func:`mixed_traces`:
    :func:`first_fit_model` with ``start``; the 5,003-event connection log: 390 nodes
    before polishing instead of 460, docs/synoptic-engine.md "Fitting runs into the open
    model"), else (mixed logs, each run's first fit made in both orders) the run's own
    model folded into it (side by side, then its nodes merged into the older ones where
    every invariant still holds, :func:`coarsen_sided` with ``fresh``; then, with
    ``fold_checks`` merge checks per event, the events of the run's nodes left over
    placed one by one, :func:`fold_repack`) until that model passes ``close_nodes``
    nodes (``fold_nodes`` once the log is dense, below), when the next run starts a new
    one; the models are then put side by side.  A log of several runs placed or folded
    into the open model (and not dense) has that model :func:`polish` ed after each run
    with ``grow_checks * polish_checks`` checks per event of the run
    (:func:`polish_budget`): checks on the smaller early models remove more nodes, and a
    polished model takes later runs with fewer new nodes (the 10,008-event connection
    log, seeds 1-2: 422 and 361 nodes instead of 513 and 477, for 1.15x the CPU; a real
    stacks' log of 10,004 events, folded: 605 instead of 661).  A
    path of a side-by-side union stays in one model's nodes (only INITIAL and TERMINAL
    are shared, and no timed walk passes them), and a run's traces satisfy the whole
    log's invariants (each holds on every subset of the traces, with bounds at least as
    tight), so the union satisfies them.  Cost: linear in the runs (each fold works on at
    most ``close_nodes`` plus one run's nodes; :func:`fold_repack` within the work
    budget; first fit into the open model checks on its nodes plus the run's unplaced
    events, stage by stage).  Once a model's first run has more than ``fold_nodes`` nodes
    (and, placed run by run, more than ``DENSE_SHARE`` nodes per event) in a log that is
    not short-trace (a dense log; it is closed unfolded), the runs after it have about
    ``dense_size`` events (first fit's cost per event grows with the run).  Once every
    run is placed, the models not placed into run by run are :func:`polish` ed with
    what is left of ``PIECE_WORK *
    polish_checks`` work units per event once first fit and the folds (both steps) took
    theirs, shared between the models in proportion to their nodes (:func:`polish_split`,
    :func:`check_units`), so the CPU per event stays flat however first fit's cost grows
    with the log."""
    from .timeconflicts import timed_sides

    by_length = short_traces(log)
    mixed = mixed_traces(log)
    if by_length and reorder:
        sorted_log, idx = longest_first(log)
        model = infer_pieces(
            sorted_log,
            codes,
            ticks[idx],
            seed,
            size,
            fold_nodes,
            dense_size,
            reorder=False,
            polish_checks=polish_checks,
            fold_checks=fold_checks,
            close_nodes=close_nodes,
            fit_folds=fit_folds,
            grow_checks=grow_checks,
        )
        back = np.empty_like(model.part)
        back[idx] = model.part
        return PartitionModel(log, back, model.node_type)
    sides = timed_sides(log, codes, ticks)
    part = np.empty(log.n_events, dtype=np.int64)
    node_type = [-1, -1]
    seeds = np.random.SeedSequence(seed)
    open_first: int | None = None  # first trace of the model being folded
    open_model: PartitionModel | None = None

    work = [0.0]  # work units spent so far (:func:`check_units`)
    closed = [0]  # events of the models closed so far

    def left(open_events: int) -> float:
        """Work units left of the budget for the closed models' events and the open
        model's ``open_events``."""
        return PIECE_WORK * polish_checks * (closed[0] + open_events) - work[0]

    # closed models (first trace, model, polishing's generator), polished at the end
    done: list[tuple[int, PartitionModel, np.random.Generator | None]] = []

    def close(first: int, model: PartitionModel) -> None:
        closed[0] += model.log.n_events
        # spawned at close, as before (the folds' generators stay the same)
        prng = np.random.default_rng(seeds.spawn(1)[0]) if polish_checks > 0 else None
        done.append((first, model, prng))

    grown: set[int] = set()  # first traces of the models placed into and polished run by run

    def grow(first: int, hi: int, model: PartitionModel, run_events: int) -> PartitionModel:
        """``model`` (traces ``first`` on, to event ``hi``) polished after a run of
        ``run_events`` events was placed or folded in it (:func:`polish_budget` with
        ``grow_checks * polish_checks`` per event of the run).  A folded model's checks
        come out of the work budget (at most what is left of it for the events so far),
        and it is polished again at the end with its share of what is left
        (:func:`polish_split`); a placed one's do not, and it is not."""
        lo = int(log.starts[first])
        prng = np.random.default_rng(seeds.spawn(1)[0])
        checks = polish_budget(run_events, model.n_nodes, int(grow_checks * polish_checks))
        if fit:
            grown.add(first)
        else:
            unit = check_units(model.n_nodes)
            checks = min(checks, max(0, int(left(hi - lo) / unit)))
            work[0] += checks * unit
        return polish(model, codes, ticks[lo:hi], _side_slice(sides, lo, hi), prng, checks)

    close_at = max(fold_nodes, close_nodes)
    last = 0
    fit = fit_folds and not mixed
    # polished run by run: several runs placed or folded into one open model (not once dense)
    growing = grow_checks > 0 and polish_checks > 0 and len(pieces(log, size)) > 1
    while last < log.n_traces:
        first = last
        last = first + pieces(sub_log(log, first, log.n_traces), size)[0][1]
        rng = np.random.default_rng(seeds.spawn(1)[0])
        lo, hi = int(log.starts[first]), int(log.starts[last])
        if fit and open_model is not None and open_first is not None:
            # the run's events placed by first fit straight into the open model
            olo = int(log.starts[open_first])
            open_model = first_fit_model(
                sub_log(log, open_first, last),
                codes,
                ticks[olo:hi],
                _side_slice(sides, olo, hi),
                by_length,
                work=work,
                start=open_model,
            )
            assert open_model is not None
            if growing:
                open_model = grow(open_first, hi, open_model, hi - lo)
            if open_model.n_nodes > close_at:
                close(open_first, open_model)
                open_first, open_model = None, None
            continue
        sub = sub_log(log, first, last)
        piece = first_fit_best(
            sub, codes, ticks[lo:hi], _side_slice(sides, lo, hi), by_length, work, mixed
        )
        if (
            not by_length
            and piece.n_nodes > fold_nodes
            and (not fit or piece.n_nodes > DENSE_SHARE * sub.n_events)
        ):
            size = min(size, dense_size)
            close_at = fold_nodes
            growing = False  # each run's model closes alone: polished at the end
        if open_model is None or open_first is None:
            open_first, open_model = first, piece
            if growing:
                open_model = grow(first, hi, piece, hi - lo)
        else:
            olo = int(log.starts[open_first])
            both = sub_log(log, open_first, last)
            off = open_model.n_nodes - 2
            joined = np.concatenate([open_model.part, piece.part + off])
            types = np.concatenate([open_model.node_type, piece.node_type[2:]])
            fresh = np.zeros(len(types), dtype=bool)
            fresh[open_model.n_nodes :] = True
            union = PartitionModel(both, joined, types)
            open_model = coarsen_sided(
                union,
                codes,
                ticks[olo:hi],
                rng,
                _side_slice(sides, olo, hi),
                COARSEN_FAILURES,
                fresh,
                work,
            )
            if fold_checks > 0 and polish_checks > 0:
                open_model = fold_repack(
                    open_model,
                    int((~fresh).sum()),
                    codes,
                    ticks[olo:hi],
                    _side_slice(sides, olo, hi),
                    fold_checks,
                    left(both.n_events),
                    work,
                )
            if growing:
                open_model = grow(open_first, hi, open_model, hi - lo)
        if open_model.n_nodes > close_at:
            close(open_first, open_model)
            open_first, open_model = None, None
    if open_model is not None and open_first is not None:
        close(open_first, open_model)
    shares = polish_split(left(0), [0 if f in grown else m.n_nodes for f, m, _ in done])
    for (first, model, prng), checks in zip(done, shares, strict=True):
        lo, hi = int(log.starts[first]), int(log.starts[first] + model.log.n_events)
        if prng is not None and first not in grown:
            model = polish(model, codes, ticks[lo:hi], _side_slice(sides, lo, hi), prng, checks)
        part[lo:hi] = model.part - 2 + len(node_type)
        node_type.extend(model.node_type[2:].tolist())
    return PartitionModel(log, part, np.asarray(node_type, dtype=np.int64))


#: Logs up to this many events also run the original refinement-then-coarsening
#: attempts (cheap there), the smallest model kept.
CLASSIC_EVENTS = 100


def infer_perfume(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    seed: int = 0,
    refine_model: bool = True,
    coarsen_model: bool = True,
    attempts: int | None = None,
    refine_nodes: int | None = None,
    coarsen_failures: int = COARSEN_FAILURES,
    piece_events: int = PIECE_EVENTS,
    piece_size: int = FIRST_FIT_EVENTS,
    polish_checks: int = POLISH_CHECKS,
    exact_budget: float = 0.0,
) -> PartitionModel:
    """Perfume's model of ``log``.  Logs of more than ``piece_events`` events:
    :func:`infer_pieces` with pieces of ``piece_size`` events.  Otherwise the smallest
    (ties: the first) of ``attempts`` seeded runs (default ``ATTEMPTS``) of
    :func:`colour_attempt` and :func:`first_fit_model` (once: it has no randomness), and
    on logs up to ``CLASSIC_EVENTS`` events also of the original refinement (initial partition graph
    refined until every invariant holds) then coarsening.  Without ``coarsen_model``,
    the original refinement alone.  Caps (module doc): coarsening stops after
    ``coarsen_failures`` failed merges; an attempt whose refinement passes
    ``refine_nodes`` nodes (default: :func:`refine_node_cap`) gives
    :func:`trace_chain_model`.  With coarsening, the model is then :func:`polish` ed
    with ``polish_checks`` merge checks per event (:func:`polish_budget`; 0: not
    polished).  ``exact_budget`` > 0: that model then polished by CP-SAT
    (:func:`~.perfume_cpsat.polish`, deterministic seconds; kept only when smaller and
    valid)."""
    from .timeconflicts import timed_sides

    if exact_budget > 0:
        from .perfume_cpsat import polish as exact_polish

        model = infer_perfume(
            log,
            codes,
            ticks,
            seed,
            refine_model=refine_model,
            coarsen_model=coarsen_model,
            attempts=attempts,
            refine_nodes=refine_nodes,
            coarsen_failures=coarsen_failures,
            piece_events=piece_events,
            piece_size=piece_size,
            polish_checks=polish_checks,
        )
        return exact_polish(model, codes, ticks, exact_budget, seed)

    initial = PartitionModel.initial(log)
    if not refine_model:
        return initial
    if coarsen_model and log.n_events > piece_events:
        return infer_pieces(log, codes, ticks, seed, piece_size, polish_checks=polish_checks)
    best: PartitionModel | None = None
    if attempts is None:
        attempts = ATTEMPTS
    cap = refine_nodes if refine_nodes is not None else refine_node_cap(log.n_events)
    sides = timed_sides(log, codes, ticks) if coarsen_model else None
    first_fit: PartitionModel | None = None  # one model: it has no randomness
    for sub in np.random.SeedSequence(seed).spawn(max(attempts, 1)):
        rng = np.random.default_rng(sub)
        models = []
        if not coarsen_model or log.n_events <= CLASSIC_EVENTS:
            try:
                model = refine_timed(initial, codes, ticks, rng, cap)
            except _TooLarge:
                model = trace_chain_model(log)
            else:
                if coarsen_model:
                    model = coarsen_timed(model, codes, ticks, rng, coarsen_failures)
            models.append(model)
        if sides is not None:
            try:
                models.append(colour_attempt(log, codes, ticks, rng, sides, cap, coarsen_failures))
            except _TooLarge:
                models.append(trace_chain_model(log))
            if first_fit is None:
                first_fit = first_fit_best(log, codes, ticks, sides)
                models.append(first_fit)
        for model in models:
            if best is None or model.n_nodes < best.n_nodes:
                best = model
    assert best is not None
    if sides is not None and polish_checks > 0:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(max(attempts, 1) + 1)[-1])
        checks = polish_budget(log.n_events, best.n_nodes, polish_checks)
        best = polish(best, codes, ticks, sides, rng, checks)
    return best
