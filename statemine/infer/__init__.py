"""Model inference: from traces to a state machine (a networkx DiGraph).

Engines: ``observed`` (one node per state, the paper's Fig. 13 model, :mod:`.observed`),
``synoptic`` (Synoptic's invariant-guided refinement and coarsening, :mod:`.synoptic`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # networkx is imported by the engines that build graphs, when they run
    import networkx as nx

    from ..traces import TraceSet

ENGINES = ("observed", "synoptic")


def infer(
    traces: TraceSet, engine: str = "observed", *, seed: int = 0, **options: Any
) -> nx.DiGraph:
    """Infer the state machine of ``traces``.

    ``engine="observed"``: one node per state with time fractions and transition
    probabilities (``options``: the fields of :class:`~statemine.stats.options.StatsOptions`).
    ``engine="synoptic"``: Synoptic's model (several nodes may share a state), in which
    every invariant mined from the traces holds; point events count as events too.

    >>> import pandas as pd
    >>> from statemine.traces import TraceSet
    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a", "a"], "time": [0.0, 1.0],
    ...                                         "state": ["SlowStart", "Recovery"]}))
    >>> sorted(infer(ts, n_boot=0).successors("SlowStart"))
    ['Recovery']
    """
    if engine == "observed":
        from .observed import observed_model

        return observed_model(traces, seed=seed, **options)
    if engine == "synoptic":
        from .synoptic import infer_synoptic

        if options:
            raise TypeError(f"the synoptic engine takes no options {sorted(options)}")
        return infer_synoptic(traces, seed=seed).to_networkx()
    raise ValueError(f"unknown engine {engine!r}; choose one of {ENGINES}")
