"""Coarsening: merge nodes of the same event type while every invariant still holds.

Synoptic's ``Bisimulation.mergePartitions`` is k-tails with k = 0 (two nodes are
k-equivalent when they have the same label) that undoes any merge after which an
invariant fails (FSE 2011, section 4.3).  Here merges are tried on the edge-count matrix
alone (merging two nodes adds their rows and columns), so a trial costs one vectorized
invariant check (:func:`~.check.violated`) and no pass over the events.  Unlike
Synoptic, a pair that failed is tried again after a later merge has changed the graph;
passes repeat until none merges, so the result is a local minimum: no two nodes of one
type can be merged without breaking an invariant.
"""

from __future__ import annotations

import numpy as np

from .check import InvariantCodes, violated
from .model import PartitionModel


def _merged(counts: np.ndarray, p: int, q: int) -> np.ndarray:
    """Edge counts after merging node ``q`` into node ``p`` (q's row/column zeroed)."""
    c = counts.copy()
    c[p, :] += c[q, :]
    c[:, p] += c[:, q]
    c[q, :] = 0
    c[:, q] = 0
    return c


def coarsen(model: PartitionModel, inv: InvariantCodes,
            rng: np.random.Generator | None = None) -> PartitionModel:
    """Merge same-type node pairs of ``model`` while every invariant of ``inv`` holds."""
    n_types = len(model.log.types)
    counts = model.edge_counts()
    node_type = model.node_type.copy()
    alive = np.ones(model.n_nodes, dtype=bool)
    target = np.arange(model.n_nodes)  # node each original node was merged into
    changed = True
    while changed:
        changed = False
        nodes = np.nonzero(alive & (node_type >= 0))[0]
        if rng is not None:
            nodes = rng.permutation(nodes)
        for ip, p in enumerate(nodes):
            if not alive[p]:
                continue
            for q in nodes[ip + 1:]:
                if not alive[q] or node_type[q] != node_type[p]:
                    continue
                trial = _merged(counts, p, q)
                t_type = node_type.copy()
                t_type[q] = -2
                if violated(trial > 0, t_type, inv, n_types).any():
                    continue
                counts = trial
                node_type = t_type
                alive[q] = False
                target[target == q] = p
                changed = True
    part = target[model.part]
    keep_type = model.node_type.copy()
    return PartitionModel(model.log, part, keep_type).compact()
