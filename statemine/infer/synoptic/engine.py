"""statemine's Synoptic engine: :func:`infer_log` (Beschastnikh et al., FSE 2011).

Pipeline: :mod:`.log` (integer-coded traces) -> :mod:`.invariants` (mining) ->
:mod:`.model` (partition graph, one node per event type) -> :mod:`.refine` (split along
counterexamples until every invariant holds) -> :mod:`.coarsen` (k-tails, k = 0, merges
that keep every invariant; merge-and-repair), :mod:`.regions` (the region search over
per-event region bits) -> :mod:`.formats` (Synoptic's dot /
invariants / json) and networkx.  :mod:`.check` is the model checker, :mod:`.bounds` the
lower bound on any model's size (the search stops there), :mod:`.jar` runs a real
``synoptic.jar``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .bounds import clique_bounds, type_classes
from .check import InvariantCodes, violated
from .coarsen import coarsen as coarsen_model
from .coarsen import merge_and_repair, recolour
from .elimination import elimination_search, grow_coarsen, recombine
from .exact import cp_model, polish
from .invariants import Invariants, mine_invariants
from .log import EventLog
from .model import PartitionModel
from .refine import refine as refine_model
from .refine import refine_targeted
from .regions import (
    free_runs,
    neighbourhood_search,
    random_vectors,
    regroup_coarsen,
    regroup_vectors,
)

if TYPE_CHECKING:
    import pandas as pd

    from ...traces import TraceSet


@dataclass
class SynopticResult:
    """An inferred model with the invariants it satisfies (``table``: columns, or a frame
    such as :func:`~.invariants.mine`'s or Perfume's constrained one, kept as given; None
    from k-tails, which mines none)."""

    model: PartitionModel
    table: Invariants | pd.DataFrame | None

    @cached_property
    def invariants(self) -> pd.DataFrame | None:
        """The invariants as a frame (``kind, first, second, support``, and Perfume's
        columns when it gave them; None: k-tails)."""
        if isinstance(self.table, Invariants):
            return self.table.to_frame()
        return self.table

    @property
    def log(self) -> EventLog:
        """The coded traces the model was inferred from."""
        return self.model.log

    def to_networkx(self):
        """The model as a networkx DiGraph (see :meth:`PartitionModel.to_networkx`)."""
        return self.model.to_networkx()


#: Refinement attempts beside the targeted history split (the smallest model wins):
#: (max events, number of counterexample-splitting seeds, the finishes tried per seed,
#: the split steps before the finish).  Each attempt is coarsened; attempts stop as soon
#: as one reaches the lower bound of :func:`~.bounds.node_lower_bound` (no model can be
#: smaller).  Step counts: 60 steps then the history split gave the smallest models on
#: small logs, 30 steps reach 36 nodes on a generated 6e3-event log where 60 give 38
#: (bound: 35).  Larger logs get fewer seeds (each split step costs O(events)).
ATTEMPTS_BY_SIZE: tuple[tuple[int | None, int, tuple[str, ...], tuple[int, ...]], ...] = (
    (1_000, 5, ("history", "targeted"), (60,)),
    (5_000, 3, ("history", "targeted"), (60, 30)),
    (None, 1, ("targeted",), (60,)),
)


#: Counterexample-guided split steps per :func:`~.coarsen.merge_and_repair` trial before
#: the targeted history split finishes its repair, on logs up to 5,000 events and above
#: (each step costs O(events); the 10-step repair keeps a 1e4-event log's search near
#: 0.03 s).
REPAIR_STEPS = 40
REPAIR_STEPS_LARGE = 10

#: Distinct colourings per type and pass of :func:`~.coarsen.recolour` on logs up to
#: 5,000 events and above.
RECOLOUR_TRIES = 4
RECOLOUR_TRIES_LARGE = 2

#: Rounds of :func:`local_search` on logs up to 1,000 events (over ten seeds, one round
#: takes cc-events-small to its lower bound of 33 nodes in three, at 0.01-0.05 s each)...
LOCAL_SEARCH_ROUNDS = 6
#: ... but at most this many divided by the model's nodes, at least one (each step's
#: cost grows with the nodes: repo-apache-cse142's 233-node model gets six rounds, 227
#: nodes in 77 s of CPU, where one round takes 19 s and two 39 s for 233; the real
#: Synoptic took 286 s for 234).
LOCAL_SEARCH_NODE_ROUNDS = 1_500


#: On logs above 5,000 events, the region search (:func:`regions_search`) runs only when
#: the attempts leave at least this many nodes above the lower bound: on the benchmark's
#: 1e4-event log (31 nodes, bound 29) it would add about 10 ms of CPU (+10% of the
#: inference) and the local search reaches 30 nodes either way; 6e3-event logs with gaps
#: of 3-40 nodes gain 1-16 nodes.
REGIONS_MIN_GAP = 3
#: Mixed into the seed of :func:`regions_search`'s generators (a stream apart from the
#: attempts' and the local search's, which spawn from the seed alone).
REGIONS_STREAM = 2
#: The same for :func:`~.regions.neighbourhood_search`'s generator.
NEIGHBOURHOOD_STREAM = 3
#: ``(events up to, random starts)`` of :func:`regions_search`
#: (:func:`random_region_starts`): the region search's refined starts sit in one basin on
#: two-capture logs; random region bits reach others.  20 up to 2,000 events (was 1,000):
#: at 1,024 events seeds 1-5 give 70-72 nodes instead of 70-75 for about 1 CPU s more.
REGION_RANDOM_STARTS: tuple[tuple[int | None, int], ...] = ((2_000, 20), (5_000, 8), (None, 0))
#: Above 5,000 events (no random starts) and up to ``SECOND_PASS_MAX_EVENTS``, the region
#: stages run a second time with this many random starts, and the smaller model is kept
#: (ties: the first pass's), at about twice the CPU of those logs.  Random starts in place
#: of the first pass do not do: on fresh two-capture logs (seeds 1-5) they took 10,016
#: events from 67, 65, 58, 64, 64 nodes to 58, 58, 58, 64, 58 (58: the proved minimum) but
#: 10,028 events from 56 on every seed to 57-62; the better of both passes is never above
#: the first (docs/synoptic-engine.md, "Fresh logs, session 34").
SECOND_PASS_STARTS = 8
SECOND_PASS_MAX_EVENTS = 30_000
#: Rounds of :func:`~.regions.neighbourhood_search` after the region search: up to
#: ``NEIGHBOURHOOD_SMALL_EVENTS`` events ``NEIGHBOURHOOD_MAX_ROUNDS``, above this many
#: divided by the events (each round costs O(events), about 0.05 s at 1e4 events): 29
#: rounds at 6,010 events, 17 at 1e4, 5 at 3e4 (two capture files, seeds 1-5: 65-67 ->
#: 64-66 nodes at 6,010, 57-61 -> 57-58 at 1e4, for about twice the CPU of the whole
#: inference: docs/synoptic-engine.md); none above ``NEIGHBOURHOOD_MAX_EVENTS``, where
#: one round costs about 1 s.
NEIGHBOURHOOD_EVENT_ROUNDS = 180_000
NEIGHBOURHOOD_MAX_ROUNDS = 60
NEIGHBOURHOOD_SMALL_EVENTS = 5_000
NEIGHBOURHOOD_MAX_EVENTS = 60_000
#: ... and at most this many divided by the nodes of the model it starts from (a round's
#: cost grows with the groups: repo-apache-cse142's 200-node model would pay 9 s of CPU
#: for 60 rounds that find nothing; it gets 22).
NEIGHBOURHOOD_NODE_ROUNDS = 4_500
#: Mixed into the seed of :func:`~.elimination.elimination_search`'s generator.
ELIMINATION_STREAM = 4
#: Rounds of :func:`~.elimination.elimination_search` after the region search: this
#: many divided by the events, at most ``ELIMINATION_MAX_ROUNDS`` (a round costs about
#: 0.15 CPU s at 6,010 events: 4 rounds there, 2 at 1e4, 1 at 2e4, none above 30,000).
ELIMINATION_EVENT_ROUNDS = 30_000
ELIMINATION_MAX_ROUNDS = 8
#: :func:`~.elimination.grow_coarsen` runs on logs up to this many events: two capture
#: files of 20,023 and 30,010 events gain 2-4 nodes for about 0.7 CPU s (+50%); at
#: 100,013 it cost 3.2 s (1.95 -> 5.1) for no node.
GROW_MAX_EVENTS = 50_000
#: Mixed into the seed of :func:`~.elimination.recombine`'s generator.
RECOMBINE_STREAM = 5
#: Rounds of :func:`~.elimination.recombine` after the elimination search: this many
#: divided by the events, at most ``RECOMBINE_MAX_ROUNDS`` (20 at 1,024 events, 7 at
#: 3,001, 3 at 6,010, 1 at 20,023, none from 24,001; a round costs about 0.06 CPU s at
#: 1,000 events: two-capture logs of 1,010 and 1,024 events 71-72 -> 68-70 nodes,
#: 3,001 events 58-61 -> 58-59, docs/synoptic-engine.md).
RECOMBINE_EVENT_ROUNDS = 24_000
RECOMBINE_MAX_ROUNDS = 20
#: CP-SAT's random seed is the engine's seed modulo this (it takes a 32-bit int).
EXACT_SEEDS = 1 << 31


def attempt_plan(n_events: int, seed: int) -> list[tuple[str, int, np.random.SeedSequence]]:
    """The refinement attempts for a log of ``n_events`` events: ``(finish, split steps,
    seed)``, finish ``"targeted"`` with 0 steps being the targeted history split alone
    (first), then ``ATTEMPTS_BY_SIZE``'s splitting runs; deterministic for ``seed``."""
    n_seeds, finishes, steps = next(
        (k, f, st) for limit, k, f, st in ATTEMPTS_BY_SIZE if limit is None or n_events <= limit
    )
    seeds = np.random.SeedSequence(seed).spawn(n_seeds)
    plan = [("targeted", 0, seeds[0])]
    plan += [(f, st, s) for st in steps for f in finishes for s in seeds]
    return plan


def local_search(
    model: PartitionModel,
    inv: InvariantCodes,
    classes: list[tuple[np.ndarray, np.ndarray]],
    type_bounds: np.ndarray,
    seed: int,
) -> PartitionModel:
    """Search for a smaller model than the coarsened ``model``, stopping at the lower
    bound ``sum(type_bounds) + 2``.  One round: :func:`~.coarsen.merge_and_repair` then
    :func:`~.coarsen.recolour`.  Logs up to 1,000 events get ``LOCAL_SEARCH_ROUNDS``
    rounds (at most ``LOCAL_SEARCH_NODE_ROUNDS`` / nodes), each starting from the
    previous one's result with fresh generators, and in each round also the two steps in
    the other order from the round's starting model, keeping the smaller result (ties:
    the first).  The first merge-and-repair runs with the generator the engine used
    before recolouring existed and no step adds nodes, so the result never has more
    nodes than that engine's.  Deterministic for ``seed``."""
    bound = int(type_bounds.sum()) + 2
    n_events = model.log.n_events
    small = n_events <= 5_000
    steps = REPAIR_STEPS if small else REPAIR_STEPS_LARGE
    tries = RECOLOUR_TRIES if small else RECOLOUR_TRIES_LARGE
    tiny = n_events <= 1_000
    rounds = min(LOCAL_SEARCH_ROUNDS, max(1, LOCAL_SEARCH_NODE_ROUNDS // model.n_nodes))
    rounds = rounds if tiny else 1
    seeds = np.random.SeedSequence(seed).spawn(4 * rounds)

    def repair(m: PartitionModel, k: int) -> PartitionModel:
        rng = np.random.default_rng(seeds[k])
        return merge_and_repair(m, inv, rng, target=bound, type_bounds=type_bounds, steps=steps)

    def colour(m: PartitionModel, k: int) -> PartitionModel:
        rng = np.random.default_rng(seeds[k])
        return recolour(m, inv, rng, classes, type_bounds, tries=tries, target=bound)

    for r in range(0, 4 * rounds, 4):
        start = model
        model = repair(start, r)
        if model.n_nodes > bound:
            model = colour(model, r + 1)
        if tiny and model.n_nodes > bound:
            other = colour(start, r + 2)
            if other.n_nodes > bound:
                other = repair(other, r + 3)
            if other.n_nodes < model.n_nodes:
                model = other
        if model.n_nodes <= bound:
            break
    return model


def random_region_starts(n_events: int) -> int:
    """How many :func:`~.regions.random_vectors` starts :func:`regions_search` adds on a
    log of ``n_events`` events (``REGION_RANDOM_STARTS``)."""
    return next(k for limit, k in REGION_RANDOM_STARTS if limit is None or n_events <= limit)


def second_pass_starts(n_events: int) -> int:
    """Random starts of the second pass of the region stages on a log of ``n_events``
    events (``SECOND_PASS_STARTS``; 0: no second pass): only where the first has none."""
    if random_region_starts(n_events) or n_events > SECOND_PASS_MAX_EVENTS:
        return 0
    return SECOND_PASS_STARTS


def region_stages(
    starts: list[PartitionModel],
    inv: InvariantCodes,
    failing: np.ndarray,
    seed: int,
    n_random: int,
    bound: int,
) -> PartitionModel:
    """:func:`regions_search` from ``starts`` with ``n_random`` random starts, then, while
    above ``bound``, :func:`~.elimination.elimination_search`,
    :func:`~.elimination.recombine` (the region search's start models as partners) and
    :func:`~.elimination.grow_coarsen`, each with its round count for the log's size.
    Sound, never larger than the region search's model; deterministic for ``seed``."""
    log = starts[0].log
    k = recombine_rounds(log.n_events)
    # the start models are kept only where recombination will use them
    pool: list[PartitionModel] | None = [] if k > 0 else None
    rounds = neighbourhood_rounds(log.n_events)
    best = regions_search(starts, inv, failing, seed, n_random, bound, rounds, pool)
    if best.n_nodes > bound:
        rng = np.random.default_rng(np.random.SeedSequence([seed, ELIMINATION_STREAM]))
        runs = free_runs(log, inv.select(failing))
        best = elimination_search(
            best, inv, failing, runs, rng, elimination_rounds(log.n_events), bound
        )
        if best.n_nodes > bound and pool is not None:
            cross = np.random.default_rng(np.random.SeedSequence([seed, RECOMBINE_STREAM]))
            best = recombine(best, pool, inv, failing, runs, cross, k, bound)
        if best.n_nodes > bound and log.n_events <= GROW_MAX_EVENTS:
            best = grow_coarsen(best, inv, failing, runs, rng)
    return best


def neighbourhood_rounds(n_events: int) -> int:
    """Rounds of :func:`~.regions.neighbourhood_search` on a log of ``n_events`` events
    (``NEIGHBOURHOOD_EVENT_ROUNDS``, ``NEIGHBOURHOOD_MAX_ROUNDS``; none above
    ``NEIGHBOURHOOD_MAX_EVENTS``, where one round costs about 1 s)."""
    if n_events <= NEIGHBOURHOOD_SMALL_EVENTS:
        return NEIGHBOURHOOD_MAX_ROUNDS
    if n_events > NEIGHBOURHOOD_MAX_EVENTS:
        return 0
    return min(NEIGHBOURHOOD_MAX_ROUNDS, NEIGHBOURHOOD_EVENT_ROUNDS // n_events)


def recombine_rounds(n_events: int) -> int:
    """Rounds of :func:`~.elimination.recombine` on a log of ``n_events`` events
    (``RECOMBINE_EVENT_ROUNDS``, ``RECOMBINE_MAX_ROUNDS``)."""
    return min(RECOMBINE_MAX_ROUNDS, RECOMBINE_EVENT_ROUNDS // max(1, n_events))


def elimination_rounds(n_events: int) -> int:
    """Rounds of :func:`~.elimination.elimination_search` on a log of ``n_events``
    events (``ELIMINATION_EVENT_ROUNDS``, ``ELIMINATION_MAX_ROUNDS``)."""
    return min(ELIMINATION_MAX_ROUNDS, ELIMINATION_EVENT_ROUNDS // max(1, n_events))


def regions_search(
    starts: list[PartitionModel],
    inv: InvariantCodes,
    failing: np.ndarray,
    seed: int,
    n_random: int = 0,
    bound: int = 0,
    rounds: int = 0,
    pool: list[PartitionModel] | None = None,
) -> PartitionModel:
    """The smallest (ties: the first) of :func:`~.regions.regroup_coarsen` from each of
    ``starts`` (models satisfying every invariant of ``inv``; ``failing``: those failing
    on the initial model), then from ``n_random`` seeded random region-bit assignments
    (:func:`~.regions.random_vectors`, regrouped and coarsened first), with generators
    derived from ``seed``, then ``rounds`` of :func:`~.regions.neighbourhood_search`
    from it (at most ``NEIGHBOURHOOD_NODE_ROUNDS`` / its nodes; kept only when smaller);
    stops early at ``bound`` nodes.  ``pool``: each start's result is appended to it
    (partners for :func:`~.elimination.recombine`)."""
    log = starts[0].log
    sub = inv.select(failing)
    runs = free_runs(log, sub)
    seeds = np.random.SeedSequence([seed, REGIONS_STREAM]).spawn(len(starts) + n_random)
    best: PartitionModel | None = None
    for k, s in enumerate(seeds):
        rng = np.random.default_rng(s)
        if k < len(starts):
            start = starts[k]
        else:
            vectors = random_vectors(runs, rng)
            start = coarsen_model(regroup_vectors(log, sub, runs, vectors, rng), inv, rng)
        found = regroup_coarsen(start, inv, failing, rng, runs)
        if pool is not None:
            pool.append(found)
        if best is None or found.n_nodes < best.n_nodes:
            best = found
        if best.n_nodes <= bound:
            break
    assert best is not None
    rounds = min(rounds, NEIGHBOURHOOD_NODE_ROUNDS // best.n_nodes)
    if rounds > 0 and best.n_nodes > bound:
        rng = np.random.default_rng(np.random.SeedSequence([seed, NEIGHBOURHOOD_STREAM]))
        found = neighbourhood_search(best, inv, failing, runs, rng, rounds, bound)
        if found.n_nodes < best.n_nodes:  # ties: the region search's model, as before
            best = found
    return best


def infer_log(
    log: EventLog,
    seed: int = 0,
    invariants: Invariants | pd.DataFrame | None = None,
    refine: bool = True,
    coarsen: bool = True,
    exact_budget: float = 0.0,
) -> SynopticResult:
    """Mine invariants (unless given), refine until they all hold, coarsen (each step can
    be switched off, as Synoptic's ``--noRefinement``/``--noCoarsening``).

    Refinement: the targeted history split (one vectorized pass) and counterexample-guided
    splitting (Synoptic's) with several seeds derived from ``seed`` (see
    :func:`attempt_plan`), each finished after a number of steps by the global or targeted
    history split.  Each is coarsened and the model with the fewest nodes wins (ties: the
    first); :func:`region_stages` (on logs up to 5,000 events, or where the attempts
    leave ``REGIONS_MIN_GAP`` nodes above the bound: :func:`regions_search`, then
    :func:`~.elimination.elimination_search`, ``elimination_rounds`` rounds,
    :func:`~.elimination.recombine` with the region search's start models as partners,
    ``recombine_rounds`` rounds, and :func:`~.elimination.grow_coarsen`, which may add
    groups to drop more; a second time with :func:`second_pass_starts` random starts,
    the smaller kept) and :func:`local_search` then look for a smaller one.  Every step
    stops once the model has :func:`~.bounds.node_lower_bound` nodes, which no model can
    undercut.  Deterministic for a seed.

    ``exact_budget`` > 0 (deterministic seconds of OR-Tools' CP-SAT, ``statemine[exact]``;
    UsageError naming the extra without it): a last, optional stage,
    :func:`~.exact.polish`, searches exactly over region bits from the model found (at
    most ``exact.SLACK`` nodes per type more than its groups) and keeps its model only when smaller
    and valid; deterministic for the seed and budget.

    >>> res = infer_log(EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]]))
    >>> res.model.n_nodes  # b splits in two: 'a ... d' would break 'a NFby d'
    8
    """
    if exact_budget > 0:
        cp_model()  # the one-line error naming the extra, before any work
    inv = mine_invariants(log) if invariants is None else Invariants.of(invariants)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    initial = PartitionModel.initial(log)
    bad = violated(initial.edge_counts() > 0, initial.node_type, codes, len(log.types), trim=False)
    if not refine or not bad.any():
        return SynopticResult(initial, inv)
    # without coarsening the refined model is kept as it is: no bound needed
    classes = type_classes(log, codes, bad) if coarsen else None
    type_bounds = None if classes is None else clique_bounds(classes)
    bound = 0 if type_bounds is None else int(type_bounds.sum()) + 2
    best: PartitionModel | None = None
    targeted = initial
    for finish, steps, sub_seed in attempt_plan(log.n_events, seed):
        rng = np.random.default_rng(sub_seed)
        if steps == 0:
            model = targeted = refine_targeted(initial, codes, bad)
        else:
            model = refine_model(initial, codes, rng, max_steps=steps, finish=finish)
        if coarsen:
            model = coarsen_model(model, codes, rng)
        if best is None or model.n_nodes < best.n_nodes:
            best = model
        if best.n_nodes <= bound:
            break
    assert best is not None  # the plan begins with the targeted split
    gap = best.n_nodes - bound
    if classes is not None and gap > 0 and (log.n_events <= 5_000 or gap >= REGIONS_MIN_GAP):
        starts = [targeted, best]
        best = region_stages(starts, codes, bad, seed, random_region_starts(log.n_events), bound)
        extra = second_pass_starts(log.n_events)
        if extra and best.n_nodes > bound:
            other = region_stages(starts, codes, bad, seed, extra, bound)
            best = other if other.n_nodes < best.n_nodes else best
    if classes is not None and type_bounds is not None and best.n_nodes > bound:
        best = local_search(best, codes, classes, type_bounds, seed)
    if classes is not None and exact_budget > 0 and best.n_nodes > bound:
        best = polish(
            best, codes, bad, exact_budget, seed % EXACT_SEEDS, bound, type_bounds=type_bounds
        )
    return SynopticResult(best, inv)


def infer_synoptic(ts: TraceSet, seed: int = 0) -> SynopticResult:
    """Synoptic's model of a trace set (each event's ``state`` is its type)."""
    return infer_log(EventLog.from_traceset(ts), seed)
