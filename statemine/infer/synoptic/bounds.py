"""A lower bound on the nodes of any Synoptic model of a log: how small can a model get?

Every Synoptic model (this engine's or the real Synoptic's) is a partition of the event
instances into single-type nodes that satisfies every mined invariant on every
INITIAL -> TERMINAL path.  Some pairs of instances of one type can never share a node,
because the model would then contain a path that breaks an invariant.  Per invariant,
an instance ``x`` on the *chain* side and an instance ``y`` on the *open* side conflict:

* ``a AlwaysPrecedes b``: ``y`` has no ``a`` before it in its trace (open), ``x`` lies
  after the last ``a`` before some later ``b`` (chain: no ``a`` between ``x`` and that
  ``b``); both of a type other than ``a``.  One node for both: INITIAL -> (``y``'s trace
  prefix) -> node -> (``x``'s trace up to the ``b``) reaches a ``b`` node through no ``a``
  node.
* ``a AlwaysFollowedBy b`` (``a`` may be INITIAL): ``x`` comes after an ``a`` with no ``b``
  in between (chain), ``y`` has no ``b`` after it (open); types other than ``b``: the
  path ``a`` -> node -> TERMINAL avoids every ``b`` node.
* ``a NeverFollowedBy b``: ``x`` has an ``a`` before it, ``y`` a ``b`` after it: the
  path ``a`` -> node -> ``b`` exists.

Per type, the instances fall into classes by their sides under every invariant; classes
that conflict under some invariant need distinct nodes, so the largest set of pairwise
conflicting classes (a clique of the conflict graph) is a lower bound on that type's
nodes.  The sum over types, plus INITIAL and TERMINAL, bounds every model's node count.
It is exact when refinement is not needed (one node per type) and often tight otherwise;
it is no model (the cliques of different types may not be realisable together).
"""

from __future__ import annotations

import sys

import numpy as np

from .check import InvariantCodes
from .log import EventLog

#: Side codes of an instance under one invariant.
_NONE, _CHAIN, _OPEN = 0, 1, 2
#: Classes per type up to which the largest clique is found exactly (beyond: greedily,
#: still a lower bound).
EXACT_CLIQUE_CLASSES = 64


class _Occurrences:
    """Per type code, the trace position of its previous and next occurrence around each
    event (-1 / ``n_events`` when none in the same trace), computed on demand."""

    def __init__(self, log: EventLog):
        self.codes = log.codes
        self.n = log.n_events
        self.first = log.starts[:-1][log.trace_of]  # first event of each event's trace
        self.last = log.starts[1:][log.trace_of] - 1
        self._prev: dict[int, np.ndarray] = {}
        self._next: dict[int, np.ndarray] = {}

    def prev(self, t: int) -> np.ndarray:
        """Index of the last ``t`` strictly before each event in its trace, or -1."""
        if t not in self._prev:
            idx = np.arange(self.n)
            at = np.where(self.codes == t, idx, -1)
            before = np.empty(self.n, dtype=np.int64)
            before[0] = -1
            before[1:] = np.maximum.accumulate(at)[:-1]
            self._prev[t] = np.where(before >= self.first, before, -1)
        return self._prev[t]

    def next(self, t: int) -> np.ndarray:
        """Index of the first ``t`` strictly after each event in its trace, or n_events."""
        if t not in self._next:
            idx = np.arange(self.n)
            at = np.where(self.codes == t, idx, self.n)
            after = np.empty(self.n, dtype=np.int64)
            after[-1] = self.n
            after[:-1] = np.minimum.accumulate(at[::-1])[::-1][1:]
            self._next[t] = np.where(after <= self.last, after, self.n)
        return self._next[t]


def invariant_sides(log: EventLog, inv: InvariantCodes) -> np.ndarray:
    """``(n_events, n_invariants)`` int8: each instance's side (0 none, 1 chain, 2 open)
    under each invariant, as the module docstring defines them."""
    occ = _Occurrences(log)
    n = log.n_events
    codes = log.codes
    out = np.zeros((n, len(inv)), dtype=np.int8)
    for i in range(len(inv)):
        kind, a, b = int(inv.kind[i]), int(inv.a[i]), int(inv.b[i])
        if kind == 2:  # a AP b
            prev_a = occ.prev(a)
            chain = occ.next(b) < occ.next(a)
            open_ = (prev_a < 0) & (codes != a)
            chain &= (codes != a) & (occ.next(b) < n)
        elif kind == 0:  # a AFby b (a < 0: INITIAL)
            prev_b = occ.prev(b)
            chain = prev_b < 0 if a < 0 else (occ.prev(a) > prev_b) | (codes == a)
            chain &= codes != b
            open_ = (occ.next(b) >= n) & (codes != b)
        else:  # a NFby b
            chain = occ.prev(a) >= 0
            open_ = occ.next(b) < n
        col = out[:, i]
        col[chain] = _CHAIN
        col[open_ & ~chain] = _OPEN
    return out


def _max_clique(conflict: np.ndarray) -> int:
    """Size of a largest clique of the symmetric bool matrix ``conflict``: exact
    (:func:`~.graphbounds.max_clique`, no step budget) up to ``EXACT_CLIQUE_CLASSES``
    vertices, a greedy clique (a lower bound) beyond."""
    from .graphbounds import greedy_clique, max_clique

    if len(conflict) > EXACT_CLIQUE_CLASSES:
        return greedy_clique(conflict)
    size, proven = max_clique(conflict, steps=sys.maxsize)
    assert proven
    return size


def _initially_violated(log: EventLog, inv: InvariantCodes) -> np.ndarray:
    """Bool per invariant: does it fail on the initial model (one node per type)?"""
    from .check import violated
    from .model import PartitionModel

    initial = PartitionModel.initial(log)
    adj = initial.edge_counts() > 0
    return violated(adj, initial.node_type, inv, len(log.types), trim=False)


def type_classes(
    log: EventLog, inv: InvariantCodes, bad: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per type code, ``(cls, conflict)``: the class (0..k-1) of each instance of that
    type, in log order (instances with the same sides under every invariant that puts
    instances of the type on both sides), and the symmetric ``(k, k)`` bool matrix of
    classes that can never share a node (module docstring).  A type no failing invariant
    can split has one class.  Only the invariants that fail on the initial model
    (``bad``, a bool mask, when known) are used: a conflicting pair gives a violating path
    in every model where the two share a node, the initial model included."""
    if bad is None:
        bad = _initially_violated(log, inv)
    sides = invariant_sides(log, inv.select(bad))
    out = []
    for t in range(len(log.types)):
        rows = sides[log.codes == t]
        # only invariants that put instances of t on both sides can split t
        both = ((rows == _CHAIN).any(axis=0)) & ((rows == _OPEN).any(axis=0))
        if not both.any():
            out.append((np.zeros(len(rows), dtype=np.int64), np.zeros((1, 1), dtype=bool)))
            continue
        cols = rows[:, both].astype(np.int64)
        if cols.shape[1] <= 39:  # 3**39 < 2**63: one integer key per class
            _, first, cls = np.unique(
                cols @ 3 ** np.arange(cols.shape[1]), return_index=True, return_inverse=True
            )
            classes = cols[first]
        else:
            classes, cls = np.unique(cols, axis=0, return_inverse=True)
        chain = (classes == _CHAIN).astype(np.int64)
        open_ = (classes == _OPEN).astype(np.int64)
        conflict = (chain @ open_.T) > 0
        out.append((cls.ravel(), conflict | conflict.T))
    return out


def clique_bounds(classes: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per type code, the largest clique of its class conflicts (:func:`type_classes`):
    a lower bound on that type's nodes in every model (0 for types with no instance)."""
    out = np.zeros(len(classes), dtype=np.int64)
    for t, (cls, conflict) in enumerate(classes):
        if len(cls):
            out[t] = max(_max_clique(conflict), 1)
    return out


def type_lower_bounds(
    log: EventLog, inv: InvariantCodes, bad: np.ndarray | None = None
) -> np.ndarray:
    """Per type code (``len(log.types)`` entries), a lower bound on the nodes of that
    type in every model of ``log`` that accepts its traces and satisfies ``inv`` (1 for
    every type present): :func:`clique_bounds` of :func:`type_classes`."""
    return clique_bounds(type_classes(log, inv, bad))


def colour_classes(
    conflict: np.ndarray, k: int, order: np.ndarray, max_steps: int = 20_000
) -> np.ndarray | None:
    """A proper colouring of the classes with at most ``k`` colours (colour per class,
    numbered by first use in ``order``; two conflicting classes never share one), found
    by backtracking over the classes in ``order``, or None when none exists or
    ``max_steps`` assignments did not find one.  Deterministic for an order."""
    nbrs = [np.nonzero(row)[0].tolist() for row in conflict]
    colour = np.full(len(conflict), -1, dtype=np.int64)
    steps = 0

    def place(i: int, used: int) -> bool:
        nonlocal steps
        if i == len(order):
            return True
        v = int(order[i])
        taken = {int(colour[u]) for u in nbrs[v]}
        for c in range(min(k, used + 1)):
            if c in taken:
                continue
            steps += 1
            if steps > max_steps:
                return False
            colour[v] = c
            if place(i + 1, max(used, c + 1)):
                return True
        colour[v] = -1
        return False

    return colour if place(0, 0) else None


def node_lower_bound(log: EventLog, inv: InvariantCodes, bad: np.ndarray | None = None) -> int:
    """A lower bound on the node count (INITIAL and TERMINAL included) of every model of
    ``log`` that accepts its traces and satisfies ``inv``: the sum of
    :func:`type_lower_bounds` plus two.

    >>> from .invariants import mine_invariants
    >>> log = EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]])
    >>> types = {t: i for i, t in enumerate(log.types)}
    >>> node_lower_bound(log, InvariantCodes.from_frame(mine_invariants(log), types))
    8
    """
    return int(type_lower_bounds(log, inv, bad).sum()) + 2
