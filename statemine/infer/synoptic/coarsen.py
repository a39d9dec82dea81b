"""Coarsening: merge nodes of the same event type while every invariant still holds.

Synoptic's ``Bisimulation.mergePartitions`` is k-tails with k = 0 (two nodes are
k-equivalent when they have the same label) that undoes any merge after which an
invariant fails (FSE 2011, section 4.3).  Here every same-type pair is tried (in an order
drawn from ``rng``) and kept only if every invariant holds.  Unlike Synoptic, a pair that
failed is tried again in the next pass when another merge succeeded; passes repeat until
one merges nothing, so no two nodes of one type of the result can be merged without
breaking an invariant.  (Merges only add paths, so a merge that breaks an invariant also
breaks it in every coarser model.)

A trial relabels the refined model's edge list (O(edges)) and runs the vectorized check
(:func:`~.check.violated_edges`); no pass over the events.
"""

from __future__ import annotations

import numpy as np

from .check import InvariantCodes, violated_edges
from .model import INIT_NODE, TERM_NODE, PartitionModel


class _Grouping:
    """Nodes of a fine model grouped into coarser nodes; ``group[n]`` is the smallest
    original id of the group of node ``n``."""

    def __init__(self, model: PartitionModel, inv: InvariantCodes):
        self.src, self.dst = np.nonzero(model.edge_counts())
        self.node_type = model.node_type
        self.group = np.arange(model.n_nodes)
        self.inv = inv
        self.n_types = len(model.log.types)

    def holds(self, group: np.ndarray) -> bool:
        """Do all invariants hold on the model grouped by ``group``?"""
        reps, dense = np.unique(group, return_inverse=True)
        n = len(reps)
        pairs = np.unique(dense[self.src] * n + dense[self.dst])
        bad = violated_edges(n, pairs // n, pairs % n, self.node_type[reps], self.inv,
                             self.n_types, int(dense[INIT_NODE]), int(dense[TERM_NODE]))
        return not bad.any()

    def try_merge(self, reps: np.ndarray) -> bool:
        """Merge the groups whose representatives are ``reps`` if all invariants hold."""
        trial = self.group.copy()
        trial[np.isin(self.group, reps)] = reps.min()
        if not self.holds(trial):
            return False
        self.group = trial
        return True

    def reps_of_type(self, t: int) -> np.ndarray:
        """Representatives of the current groups of type ``t``."""
        reps = np.unique(self.group)
        return reps[self.node_type[reps] == t]


def coarsen(model: PartitionModel, inv: InvariantCodes,
            rng: np.random.Generator | None = None) -> PartitionModel:
    """Merge same-type nodes of ``model`` while every invariant of ``inv`` holds."""
    grouping = _Grouping(model, inv)
    types = np.unique(model.node_type[model.node_type >= 0])
    changed = True
    while changed:
        changed = False
        pairs = [(int(p), int(q)) for t in types for reps in [grouping.reps_of_type(t)]
                 for i, p in enumerate(reps) for q in reps[i + 1:]]
        if rng is not None and pairs:
            pairs = [pairs[k] for k in rng.permutation(len(pairs))]
        for p, q in pairs:
            if grouping.group[p] != p or grouping.group[q] != q:
                continue  # one of them joined another group in this pass
            if grouping.try_merge(np.array([p, q])):
                changed = True
    part = grouping.group[model.part]
    return PartitionModel(model.log, part, model.node_type.copy()).compact()
