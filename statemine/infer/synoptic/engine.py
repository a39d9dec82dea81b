"""statemine's Synoptic engine: :func:`infer_log` (Beschastnikh et al., FSE 2011).

Pipeline: :mod:`.log` (integer-coded traces) -> :mod:`.invariants` (mining) ->
:mod:`.model` (partition graph, one node per event type) -> :mod:`.refine` (split along
counterexamples until every invariant holds) -> :mod:`.coarsen` (k-tails, k = 0, merges
that keep every invariant) -> :mod:`.formats` (Synoptic's dot / invariants / json) and
networkx.  :mod:`.check` is the model checker, :mod:`.jar` runs a real ``synoptic.jar``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from .check import InvariantCodes, violated
from .coarsen import coarsen as coarsen_model
from .coarsen import merge_and_repair
from .invariants import Invariants, mine_invariants
from .log import EventLog
from .model import PartitionModel
from .refine import refine as refine_model
from .refine import refine_targeted

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


#: Counterexample-guided split steps before the history split finishes refinement.
MAX_SPLIT_STEPS = 60
#: Refinement attempts beside the targeted history split (the smallest model wins):
#: (max events, number of counterexample-splitting seeds, the finishes tried per seed).
#: Larger logs get one splitting run finished by the targeted split: on generated
#: congestion-control event logs it takes the model from 51/43/43/25 nodes to 38/26/27/17
#: at 6e3/1e4/3e4/1e5 events (Synoptic: 27/24/18/18), for about 0.1-0.5 s.
ATTEMPTS_BY_SIZE = (
    (1_000, 5, ("history", "targeted")),
    (5_000, 3, ("history", "targeted")),
    (None, 1, ("targeted",)),
)
#: Logs up to this many events get :func:`~.coarsen.merge_and_repair` after coarsening
#: (each of its trials refines, O(events) per split step); it takes repo-apache-cse142
#: from 236 to 233 nodes (Synoptic: 234).  On generated event logs of 6e3 and 1e4 events
#: (benchmarks/bench_synoptic.py's generator, seeds 0-3) it found no smaller model and
#: took 0.15-0.19 s CPU of 0.2-0.25 s, so larger logs skip it (was 20,000).
REPAIR_MAX_EVENTS = 5_000


def infer_log(
    log: EventLog,
    seed: int = 0,
    invariants: Invariants | pd.DataFrame | None = None,
    refine: bool = True,
    coarsen: bool = True,
) -> SynopticResult:
    """Mine invariants (unless given), refine until they all hold, coarsen (each step can
    be switched off, as Synoptic's ``--noRefinement``/``--noCoarsening``).

    Refinement: the targeted history split (one vectorized pass) and counterexample-guided
    splitting (Synoptic's) with five, three or (above 5000 events) one seed derived from
    ``seed`` (see ``ATTEMPTS_BY_SIZE``), each finished after ``MAX_SPLIT_STEPS`` steps by
    the global or targeted history split (large logs: targeted only).  Each is coarsened and
    the model with the fewest nodes wins (ties: the first); on logs up to
    ``REPAIR_MAX_EVENTS`` events, :func:`~.coarsen.merge_and_repair` then looks for a
    smaller one.  Deterministic for a seed.

    >>> res = infer_log(EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]]))
    >>> res.model.n_nodes  # b splits in two: 'a ... d' would break 'a NFby d'
    8
    """
    inv = mine_invariants(log) if invariants is None else Invariants.of(invariants)
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    initial = PartitionModel.initial(log)
    bad = violated(initial.edge_counts() > 0, initial.node_type, codes, len(log.types), trim=False)
    if not refine or not bad.any():
        return SynopticResult(initial, inv)
    n_seeds, finishes = next(
        (k, f) for limit, k, f in ATTEMPTS_BY_SIZE if limit is None or log.n_events <= limit
    )
    seeds = np.random.SeedSequence(seed).spawn(max(n_seeds, 1))
    attempts = [("targeted", seeds[0])]
    attempts += [(f"split-{finish}", s) for finish in finishes for s in seeds[:n_seeds]]
    best: PartitionModel | None = None
    for how, sub_seed in attempts:
        rng = np.random.default_rng(sub_seed)
        if how == "targeted":
            model = refine_targeted(initial, codes, bad)
        else:
            model = refine_model(
                initial, codes, rng, max_steps=MAX_SPLIT_STEPS, finish=how.split("-", 1)[1]
            )
        if coarsen:
            model = coarsen_model(model, codes, rng)
        if best is None or model.n_nodes < best.n_nodes:
            best = model
    assert best is not None  # attempts begins with "targeted"
    if coarsen and log.n_events <= REPAIR_MAX_EVENTS:
        best = merge_and_repair(best, codes, np.random.default_rng(seeds[0]))
    return SynopticResult(best, inv)


def infer_synoptic(ts: TraceSet, seed: int = 0) -> SynopticResult:
    """Synoptic's model of a trace set (each event's ``state`` is its type)."""
    return infer_log(EventLog.from_traceset(ts), seed)
