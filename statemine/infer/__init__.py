"""Model inference: from traces to a state machine (networkx DiGraph).

Engines: ``observed`` (one node per state, the paper's Fig. 13 model, :mod:`.observed`),
``synoptic`` (Synoptic's invariant-guided refinement and coarsening, :mod:`.synoptic`).
"""
