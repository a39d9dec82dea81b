"""Refinement: split partitions until every invariant holds.

Three ways, all ending with every invariant satisfied: counterexample-guided splitting
(:func:`refine`, Synoptic's), the global history split (:func:`refine_by_history`) and the
targeted history split (:func:`refine_targeted`, only nodes on violating paths).

Synoptic's ``Bisimulation.splitUntilAllInvsSatisfied`` (FSE 2011, section 4.2), as
re-implemented here: while some invariant fails on the model, take a shortest
counterexample path (:func:`~.check.counterexample`) for one failing invariant (picked by
the seeded generator), follow it through the *traces* with the set of event instances that
can realise its prefix, and at the first node where no instance can continue, split that
node: by outgoing edge (instances whose successor lies in the path's next node vs the
others) or by incoming edge (instances whose predecessor lies in the path's previous
node vs the others).  A split that makes the invariant hold is preferred; otherwise the
outgoing split is applied, which always separates at least one instance, so refinement
terminates (at worst at the trace graph itself, on which every mined invariant holds).
"""

from __future__ import annotations

import numpy as np

from ...arrays import sorted_unique
from ...errors import StatemineError
from .check import InvariantCodes, counterexample, violated
from .log import EventLog
from .model import INIT_NODE, TERM_NODE, PartitionModel


def _infeasible_step(model: PartitionModel, path: list[int]) -> int:
    """Index j such that some instance realises ``path[:j]`` but none ``path[:j+1]``."""
    log = model.log
    part = model.part
    is_last = log.is_last
    hot = log.starts[:-1]  # instances that may realise path[1]: first events
    cur = hot[:0]
    for j in range(1, len(path)):
        node = path[j]
        if node == TERM_NODE:
            return -1 if is_last[cur].any() else j
        cur = hot[part[hot] == node]
        if cur.size == 0:
            return j
        hot = cur[~is_last[cur]] + 1
    return -1


def candidate_splits(model: PartitionModel, path: list[int]) -> list[np.ndarray]:
    """Event masks to move into a new node, each splitting the node where the
    counterexample ``path`` stops being realisable (outgoing split first)."""
    j = _infeasible_step(model, path)
    if j < 0:
        raise StatemineError(
            "internal error: a counterexample path is realised by a trace "
            "(the invariants were not mined from these traces)"
        )
    cur, nxt = path[j - 1], path[j]
    prev = path[j - 2] if j >= 2 else None
    in_cur = model.part == cur
    splits = []
    out_mask = in_cur & (model.successor_nodes() == nxt)
    if out_mask.any() and out_mask.sum() < in_cur.sum():
        splits.append(out_mask)
    if prev is not None:
        in_mask = in_cur & (model.predecessor_nodes() == prev)
        if in_mask.any() and in_mask.sum() < in_cur.sum():
            splits.append(in_mask)
    return splits


def counterexample_of(
    model: PartitionModel, adj: np.ndarray, inv: InvariantCodes, i: int
) -> list[int] | None:
    """:func:`~.check.counterexample` of invariant ``i`` of ``inv`` on ``model`` (``adj``:
    its edges as a bool matrix): a shortest violating node path, None if it holds."""
    return counterexample(
        adj, model.node_type, int(inv.kind[i]), int(inv.a[i]), int(inv.b[i]), INIT_NODE, TERM_NODE
    )


def apply_split(model: PartitionModel, mask: np.ndarray) -> PartitionModel:
    """A new model where the events of ``mask`` (all in one node) form a new node."""
    node = int(model.part[np.argmax(mask)])
    part = model.part.copy()
    part[mask] = model.n_nodes
    node_type = np.append(model.node_type, model.node_type[node])
    return PartitionModel(model.log, part, node_type)


def refine(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator,
    max_steps: int | None = None,
    finish: str = "targeted",
) -> PartitionModel:
    """Split ``model`` until every invariant of ``inv`` holds on it (see module doc);
    after ``max_steps`` splits, the history split finishes the job (``finish``:
    ``"targeted"`` for :func:`refine_targeted`, ``"history"`` for
    :func:`refine_by_history`)."""
    n_types = len(model.log.types)
    steps = 0
    limit = max_steps if max_steps is not None else model.log.n_events + 2
    adj = model.edge_counts() > 0
    while True:
        still = violated(adj, model.node_type, inv, n_types, trim=False)
        bad = np.nonzero(still)[0]
        if bad.size == 0:
            return model
        if steps >= limit:
            if finish == "history":
                return refine_by_history(model, inv, still)
            return refine_targeted(model, inv, still)
        i = int(bad[rng.integers(bad.size)])
        path = counterexample_of(model, adj, inv, i)
        if path is None:
            raise StatemineError("internal error: violated invariant without counterexample")
        splits = candidate_splits(model, path)
        if not splits:
            raise StatemineError("internal error: no split removes a counterexample")
        order = rng.permutation(len(splits))
        trials: dict[int, tuple[PartitionModel, np.ndarray]] = {}
        chosen = 0  # when no split removes the counterexample
        for k in order.tolist():
            trial = apply_split(model, splits[k])
            t_adj = trial.edge_counts() > 0
            trials[k] = trial, t_adj
            if counterexample_of(trial, t_adj, inv, i) is None:
                chosen = k
                break
        # every split was tried unless one passed: the chosen one's model and edges
        model, adj = trials[chosen]
        steps += 1


def history_bits(log: EventLog, past_types: np.ndarray, future_types: np.ndarray) -> np.ndarray:
    """Per event, one bool column per type of ``past_types`` (does that type occur
    earlier in the event's trace?) then one per type of ``future_types`` (later?)."""
    n_types = len(log.types)
    trace_of = log.trace_of
    uniq, first, last = log.type_spans
    pos = np.arange(log.n_events)
    cols = []
    for t in past_types:
        first_t = np.full(log.n_traces, log.n_events, dtype=np.int64)
        sel = uniq % n_types == t
        first_t[uniq[sel] // n_types] = first[sel]
        cols.append(first_t[trace_of] < pos)
    for t in future_types:
        last_t = np.full(log.n_traces, -1, dtype=np.int64)
        sel = uniq % n_types == t
        last_t[uniq[sel] // n_types] = last[sel]
        cols.append(last_t[trace_of] > pos)
    if not cols:
        return np.zeros((log.n_events, 0), dtype=bool)
    return np.column_stack(cols)


def refine_by_history(
    model: PartitionModel, inv: InvariantCodes, bad: np.ndarray
) -> PartitionModel:
    """Split every node by the trace history the failing invariants ``bad`` (bool per
    invariant) depend on: for a failing ``a AP b`` or ``a NFby b``, whether an ``a``
    occurred earlier in the trace; for a failing ``a AFby b`` (or ``INITIAL AFby b``),
    whether a ``b`` occurs later.  Instances of one node that agree on all these bits stay
    together.

    Every failing invariant then holds: e.g. for ``a AP b`` the bit "a seen" is the same on
    both ends of every edge that does not leave an ``a`` node, is False on INITIAL's
    successors and True on every ``b`` node, so no path reaches a ``b`` node without
    passing an ``a`` node (the other kinds are symmetric).  Splitting never breaks an
    invariant that held (every path of the split model maps onto a path of the old one),
    so one call satisfies all the invariants; O(N * bits) vectorized work.
    """
    past = sorted_unique(inv.a[bad & (inv.kind != 0) & (inv.a >= 0)])
    future = sorted_unique(inv.b[bad & (inv.kind == 0)])
    bits = history_bits(model.log, past, future)
    table = np.column_stack([model.part, bits.astype(np.int64)])
    _, inverse = np.unique(table, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    # dense ids 2.. in order of first event, keeping INITIAL/TERMINAL as 0 and 1
    order = np.unique(inverse, return_index=True)[1]
    rank = np.empty(len(order), dtype=np.int64)
    rank[np.argsort(order, kind="stable")] = np.arange(len(order))
    part = rank[inverse] + 2
    node_type = np.full(len(order) + 2, -1, dtype=np.int64)
    node_type[part] = model.node_type[model.part]
    return PartitionModel(model.log, part, node_type)


def _reach(
    succ: list[list[int]], starts: list[int], blocked: np.ndarray, include_starts: bool
) -> np.ndarray:
    """Nodes reachable from ``starts`` through nodes that are not ``blocked`` (a blocked
    node is not entered; ``include_starts``: count the starts themselves as reached)."""
    seen = np.zeros(len(succ), dtype=bool)
    stack = []
    for s in starts:
        if include_starts:
            seen[s] = True
        stack.append(s)
    expanded = np.zeros(len(succ), dtype=bool)
    while stack:
        v = stack.pop()
        if expanded[v]:
            continue
        expanded[v] = True
        for w in succ[v]:
            if not blocked[w] and not seen[w]:
                seen[w] = True
                stack.append(w)
    return seen


def refine_targeted(model: PartitionModel, inv: InvariantCodes, bad: np.ndarray) -> PartitionModel:
    """The history split of :func:`refine_by_history`, applied per failing invariant and
    only to the nodes on its violating paths (the argument of that function holds on
    those nodes, and the other nodes lie on no violating path).  One pass; usually far
    fewer nodes than the global split."""
    log = model.log
    edges_of = None  # the model succ and pred describe (recomputed after a split)
    for i in np.nonzero(bad)[0]:
        kind, a, b = int(inv.kind[i]), int(inv.a[i]), int(inv.b[i])
        if edges_of is not model:
            adj = model.edge_counts() > 0
            succ = [np.nonzero(row)[0].tolist() for row in adj]
            pred = [np.nonzero(col)[0].tolist() for col in adj.T]
            edges_of = model
        nt = model.node_type
        if kind == 0:  # AFby (a < 0: INITIAL): split by "b occurs later"
            is_b = nt == b
            starts = [INIT_NODE] if a < 0 else np.nonzero(nt == a)[0].tolist()
            fwd = _reach(succ, starts, is_b, include_starts=False)
            bwd = _reach(pred, [TERM_NODE], is_b, include_starts=False)
            nodes = fwd & bwd
            bits = history_bits(log, np.array([], dtype=np.int64), np.array([b]))[:, 0]
        else:
            bits = history_bits(log, np.array([a]), np.array([], dtype=np.int64))[:, 0]
            if kind == 1:  # NFby: nodes between an a-node and a b-node
                fwd = _reach(
                    succ,
                    np.nonzero(nt == a)[0].tolist(),
                    np.zeros(len(nt), dtype=bool),
                    include_starts=False,
                )
                bwd = _reach(
                    pred,
                    np.nonzero(nt == b)[0].tolist(),
                    np.zeros(len(nt), dtype=bool),
                    include_starts=True,
                )
            else:  # AP: nodes between INITIAL and a b-node avoiding a-nodes
                is_a = nt == a
                fwd = _reach(succ, [INIT_NODE], is_a, include_starts=False)
                bwd = _reach(pred, np.nonzero(nt == b)[0].tolist(), is_a, include_starts=True)
            nodes = fwd & bwd
        nodes[[INIT_NODE, TERM_NODE]] = False
        if not nodes.any():
            continue
        model = _split_by_bit(model, nodes[model.part] & bits)
    return model


def _split_by_bit(model: PartitionModel, move: np.ndarray) -> PartitionModel:
    """Move the events of ``move`` out of their nodes: one new node per old node that
    keeps events on both sides (nodes whose events all move keep their id)."""
    part = model.part
    n = model.n_nodes
    moving = np.bincount(part[move], minlength=n)
    total = np.bincount(part, minlength=n)
    split = np.nonzero((moving > 0) & (moving < total))[0]
    if split.size == 0:
        return model
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[split] = n + np.arange(split.size)
    part = part.copy()
    sel = move & (new_id[part] >= 0)
    part[sel] = new_id[part[sel]]
    node_type = np.concatenate([model.node_type, model.node_type[split]])
    return PartitionModel(model.log, part, node_type)
