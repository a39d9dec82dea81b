"""statemine's own implementation of Synoptic (Beschastnikh et al., FSE 2011).

Pipeline: :mod:`.log` (integer-coded traces) -> :mod:`.invariants` (mining) ->
:mod:`.model` (partition graph, one node per event type) -> :mod:`.refine` (split along
counterexamples until every invariant holds) -> :mod:`.coarsen` (k-tails, k = 0, merges
that keep every invariant) -> :mod:`.formats` (Synoptic's dot / invariants / json) and
networkx.  :mod:`.check` is the model checker, :mod:`.jar` runs a real ``synoptic.jar``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...traces import TraceSet
from .check import InvariantCodes, violated
from .coarsen import coarsen as coarsen_model
from .invariants import mine
from .log import EventLog
from .model import PartitionModel
from .refine import refine as refine_model

__all__ = ["SynopticResult", "infer_synoptic", "infer_log"]


@dataclass
class SynopticResult:
    """An inferred model with the invariants it satisfies."""

    model: PartitionModel
    invariants: pd.DataFrame

    @property
    def log(self) -> EventLog:
        """The coded traces the model was inferred from."""
        return self.model.log

    def to_networkx(self):
        """The model as a networkx DiGraph (see :meth:`PartitionModel.to_networkx`)."""
        return self.model.to_networkx()


def infer_log(log: EventLog, seed: int = 0, invariants: pd.DataFrame | None = None,
              refine: bool = True, coarsen: bool = True) -> SynopticResult:
    """Mine invariants (unless given), refine and coarsen (each can be switched off, as
    Synoptic's ``--noRefinement``/``--noCoarsening``); deterministic for a seed.

    >>> res = infer_log(EventLog.from_sequences([["a", "b", "c"], ["x", "b", "d"]]))
    >>> res.model.n_nodes  # b splits in two: 'a ... d' would break 'a NFby d'
    8
    """
    inv = mine(log) if invariants is None else invariants
    codes = InvariantCodes.from_frame(inv, {t: i for i, t in enumerate(log.types)})
    rng = np.random.default_rng(seed)
    model = PartitionModel.initial(log)
    if refine and violated(model.edge_counts() > 0, model.node_type, codes,
                           len(log.types)).any():
        model = refine_model(model, codes, rng)
        if coarsen:
            model = coarsen_model(model, codes, rng)
    return SynopticResult(model, inv)


def infer_synoptic(ts: TraceSet, seed: int = 0) -> SynopticResult:
    """Synoptic's model of a trace set (each event's ``state`` is its type)."""
    return infer_log(EventLog.from_traceset(ts), seed)
