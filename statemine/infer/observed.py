"""The observed-state model: one node per state, the model of the paper's Figure 13.

Nodes are the states seen in the traces plus ``INITIAL`` and ``TERMINAL``; an edge
``a -> b`` exists when some trace goes from ``a`` straight to ``b``. Node attributes:
``time_fraction``, ``time_fraction_lo``, ``time_fraction_hi``, ``visits``, ``time_s``;
edge attributes: ``count``, ``probability``, ``probability_lo``, ``probability_hi``
(definitions in :mod:`statemine.analyze`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import networkx as nx
import pandas as pd

from ..analyze import INITIAL, TERMINAL, EndRule, summarize
from ..traces import TraceSet


def observed_model(
    traces: TraceSet,
    *,
    collapse_repeats: bool = False,
    end: EndRule = "close",
    n_boot: int = 1000,
    seed: int = 0,
) -> nx.DiGraph:
    """Build the observed-state model of ``traces`` as a networkx DiGraph.

    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> G = observed_model(ts, n_boot=0)
    >>> sorted(G.successors("SlowStart")), G.edges["SlowStart", "Recovery"]["probability"]
    (['Recovery', 'TERMINAL'], 0.5)
    """
    opts = dict(collapse_repeats=collapse_repeats, end=end, n_boot=n_boot, seed=seed)
    return model_from_stats(*summarize(traces, **opts))


def model_from_stats(states: pd.DataFrame, transitions: pd.DataFrame) -> nx.DiGraph:
    """The model graph from :func:`~statemine.analyze.state_stats` and
    :func:`~statemine.analyze.transition_stats` tables."""
    G = nx.DiGraph(engine="observed")
    G.add_node(INITIAL, kind="initial")
    for row in states.itertuples(index=False):
        G.add_node(
            row.state,
            kind="state",
            time_fraction=float(row.time_fraction),
            time_fraction_lo=float(row.time_fraction_lo),
            time_fraction_hi=float(row.time_fraction_hi),
            time_s=float(row.time_s),
            visits=int(row.visits),
        )
    G.add_node(TERMINAL, kind="terminal")
    for row in transitions.itertuples(index=False):
        G.add_edge(
            row.src,
            row.dst,
            count=int(row.count),
            probability=float(row.probability),
            probability_lo=float(row.probability_lo),
            probability_hi=float(row.probability_hi),
        )
    return G


def model_to_json(G: nx.DiGraph) -> str:
    """Serialise a model graph as JSON (networkx node-link form; NaN written as null)."""
    data = nx.node_link_data(G, edges="edges")
    return json.dumps(_nan_to_none(data), indent=1, sort_keys=True)


def model_from_json(text: str) -> nx.DiGraph:
    """Read a model graph written by :func:`model_to_json`."""
    return nx.node_link_graph(json.loads(text), directed=True, edges="edges")


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value
