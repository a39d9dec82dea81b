"""Coarsening: merge nodes of the same event type while every invariant still holds.

Synoptic's ``Bisimulation.mergePartitions`` is k-tails with k = 0 (two nodes are
k-equivalent when they have the same label) that undoes any merge after which an
invariant fails (FSE 2011, section 4.3).  Here every same-type pair is tried (in an order
drawn from ``rng``) and kept only if every invariant holds.  Unlike Synoptic, a pair that
failed is tried again in the next pass when another merge succeeded; passes repeat until
one merges nothing, so no two nodes of one type of the result can be merged without
breaking an invariant.  (Merges only add paths, so a merge that breaks an invariant also
breaks it in every coarser model.)

That monotonicity also makes most trials unnecessary: once merging groups A and B has
failed, merging any group containing A with any group containing B would fail too (its
model is coarser), so such pairs are known to fail and are not checked again.  Skipping
them changes no decision: the result is the one every trial would give.

A trial relabels the grouped model's edge list (O(edges)) and runs the vectorized check
(:class:`~.check.MergeCheck`: it starts from the current model's fix-points and stops at
the first violation); no pass over the events.
"""

from __future__ import annotations

import numpy as np

from ...arrays import sorted_unique
from .check import InvariantCodes, MergeCheck
from .model import INIT_NODE, TERM_NODE, PartitionModel


class _Grouping:
    """Nodes of a fine model grouped into coarser nodes; ``group[n]`` is the smallest
    original id of the group of node ``n``."""

    def __init__(self, model: PartitionModel, inv: InvariantCodes):
        src, dst = np.nonzero(model.edge_counts())
        self.node_type = model.node_type
        self.group = np.arange(model.n_nodes)
        self.check = MergeCheck(
            model.node_type, inv, len(model.log.types), src, dst, INIT_NODE, TERM_NODE
        )
        #: failed[p]: representatives q such that merging the groups of p and q fails
        self.failed: dict[int, set[int]] = {}

    def try_merge(self, p: int, q: int) -> bool:
        """Merge the groups whose representatives are ``p`` and ``q`` if all invariants
        hold (not checked again when a finer version of this merge already failed)."""
        if q in self.failed.get(p, ()):
            return False
        keep, gone = min(p, q), max(p, q)
        if not self.check.merge(keep, gone):
            self.failed.setdefault(p, set()).add(q)
            self.failed.setdefault(q, set()).add(p)
            return False
        self.group[self.group == gone] = keep
        moved = self.failed.pop(gone, set())
        for x in moved:  # a failure with gone's group is one with the merged group
            self.failed[x].discard(gone)
            self.failed[x].add(keep)
        self.failed.setdefault(keep, set()).update(moved)
        return True

    def reps_of_type(self, t: int) -> np.ndarray:
        """Representatives of the current groups of type ``t``."""
        reps = sorted_unique(self.group)
        return reps[self.node_type[reps] == t]


def coarsen(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator | None = None,
    types: np.ndarray | None = None,
) -> PartitionModel:
    """Merge same-type nodes of ``model`` while every invariant of ``inv`` holds (only
    nodes of the type codes ``types`` when given)."""
    grouping = _Grouping(model, inv)
    if types is None:
        types = sorted_unique(model.node_type[model.node_type >= 0])
    changed = True
    while changed:
        changed = False
        pairs = [
            (int(p), int(q))
            for t in types
            for reps in [grouping.reps_of_type(t)]
            for i, p in enumerate(reps)
            for q in reps[i + 1 :]
        ]
        if rng is not None and pairs:
            pairs = [pairs[k] for k in rng.permutation(len(pairs))]
        for p, q in pairs:
            if grouping.group[p] != p or grouping.group[q] != q:
                continue  # one of them joined another group in this pass
            if grouping.try_merge(p, q):
                changed = True
    part = grouping.group[model.part]
    return PartitionModel(model.log, part, model.node_type.copy()).compact()


def merge_and_repair(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator,
    rounds: int = 3,
    target: int = 0,
    type_bounds: np.ndarray | None = None,
    steps: int = 40,
) -> PartitionModel:
    """Local search after coarsening, which is greedy and stops where no single merge
    keeps every invariant: for each event type with several nodes (in a seeded order),
    merge all its nodes into one, repair the invariants this breaks by refinement
    (:func:`~.refine.refine`, ``steps`` counterexample-guided splits, finished by the
    targeted history split), coarsen the nodes of that type and of the types the repair split, and keep the
    result when it has fewer nodes.  ``rounds`` passes at most, stopping at a pass that
    gains nothing.  Every kept model is a refinement-then-coarsening result, so it accepts
    every trace and satisfies every invariant; the node count never grows.
    (Synoptic's refinement only splits and its coarsening only merges; the two-step move
    lets a model leave that local minimum: repo-apache-cse142 goes from 239 to 233 nodes.)
    Stops early once the model has ``target`` nodes or fewer (a lower bound); with
    ``type_bounds`` (per type code, a lower bound on its nodes:
    :func:`~.bounds.type_lower_bounds`), only types with more nodes than their bound are
    tried.
    """
    from .refine import refine

    log = model.log
    for _ in range(rounds):
        gained = False
        counts = np.bincount(model.node_type[model.node_type >= 0], minlength=len(log.types))
        floor = np.ones(len(counts), dtype=np.int64)
        if type_bounds is not None:
            floor[: len(type_bounds)] = np.maximum(type_bounds[: len(counts)], 1)
        for t in rng.permutation(np.nonzero(counts > floor)[0]):
            nodes = np.nonzero(model.node_type == t)[0]
            if nodes.size < 2:
                continue  # an earlier trial of this pass merged them already
            part = model.part.copy()
            part[np.isin(part, nodes)] = nodes[0]
            merged = PartitionModel(log, part, model.node_type.copy()).compact()
            repaired = refine(merged, inv, rng, max_steps=steps, finish="targeted")
            trial = _coarsen_repaired(merged, repaired, int(t), inv, rng)
            if trial.n_nodes < model.n_nodes:
                model, gained = trial, True
                if model.n_nodes <= target:
                    return model
        if not gained:
            break
    return model


#: Budget of :func:`recolour`: trials times the model's nodes (each trial's repair and
#: coarsening costs about O(nodes) checks), so a 40-node model gets up to 25 colourings and
#: repo-apache-cse142's 233 nodes 4.
RECOLOUR_NODE_TRIALS = 1_000


def recolour(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator,
    classes: list[tuple[np.ndarray, np.ndarray]],
    type_bounds: np.ndarray,
    tries: int = 2,
    rounds: int = 3,
    max_trials: int = 25,
    target: int = 0,
) -> PartitionModel:
    """Local search by colouring: for each event type with more nodes than its lower
    bound (seeded order), replace its nodes by a colouring of its instance classes with
    the bound's number of colours under the pairwise conflicts of
    :func:`~.bounds.type_classes` (``tries`` distinct colourings from seeded class orders,
    :func:`~.bounds.colour_classes`), repair the invariants that still fail through other
    nodes by the targeted history split, coarsen the nodes of that type and of the types
    the repair split, and keep the result when it has fewer nodes.  Each kept model is a
    split of a partition followed by sound merges, so it accepts every trace and satisfies
    every invariant; the node count never grows.  ``rounds`` passes at most (stopping at
    one that gains nothing), ``max_trials`` colourings in all (fewer on large models:
    :data:`RECOLOUR_NODE_TRIALS`), stopping early at
    ``target`` nodes (a lower bound).  Types with more than
    :data:`~.bounds.EXACT_CLIQUE_CLASSES` classes are skipped.  Deterministic for ``rng``.
    """
    from .bounds import EXACT_CLIQUE_CLASSES, colour_classes
    from .check import violated
    from .refine import refine_targeted

    log = model.log
    n_types = len(log.types)
    trials = 0
    max_trials = min(max_trials, RECOLOUR_NODE_TRIALS // model.n_nodes)
    for _ in range(rounds):
        gained = False
        counts = np.bincount(model.node_type[model.node_type >= 0], minlength=n_types)
        for t in rng.permutation(np.nonzero(counts > np.maximum(type_bounds, 1))[0]):
            cls, conflict = classes[t]
            if len(conflict) > EXACT_CLIQUE_CLASSES:
                continue
            seen: set[bytes] = set()
            for _ in range(tries):
                if trials >= max_trials:
                    return model
                colour = colour_classes(
                    conflict, int(type_bounds[t]), rng.permutation(len(conflict))
                )
                if colour is None or colour.tobytes() in seen:
                    continue
                seen.add(colour.tobytes())
                trials += 1
                trial = _recoloured(model, int(t), colour[cls])
                bad = violated(trial.edge_counts() > 0, trial.node_type, inv, n_types, trim=False)
                if bad.any():
                    repaired = refine_targeted(trial, inv, bad)
                    trial = _coarsen_repaired(trial, repaired, int(t), inv, rng)
                if trial.n_nodes < model.n_nodes:
                    model, gained = trial, True
                    if model.n_nodes <= target:
                        return model
                    break
        if not gained:
            break
    return model


def _coarsen_repaired(
    before: PartitionModel,
    repaired: PartitionModel,
    t: int,
    inv: InvariantCodes,
    rng: np.random.Generator,
) -> PartitionModel:
    """:func:`coarsen` on ``repaired`` (a split of ``before``, whose new nodes are
    numbered after ``before``'s), merging only nodes of type ``t`` and of the types the
    repair split."""
    touched = sorted_unique(np.append(repaired.node_type[before.n_nodes :], t))
    return coarsen(repaired, inv, rng, types=touched)


def _recoloured(model: PartitionModel, t: int, colour: np.ndarray) -> PartitionModel:
    """``model`` with the instances of type ``t`` regrouped into one node per colour
    (``colour``: per instance of ``t`` in log order, 0..k-1)."""
    nodes = np.nonzero(model.node_type == t)[0]
    k = int(colour.max()) + 1
    extra = max(0, k - nodes.size)
    ids = np.concatenate([nodes[:k], model.n_nodes + np.arange(extra)])
    part = model.part.copy()
    part[model.log.codes == t] = ids[colour]
    node_type = np.concatenate([model.node_type, np.full(extra, t)])
    return PartitionModel(model.log, part, node_type).compact()  # drops emptied nodes
