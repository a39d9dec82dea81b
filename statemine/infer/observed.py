"""The observed-state model: one node per state, the model of the paper's Figure 13.

Nodes are the states seen in the traces plus ``INITIAL`` and ``TERMINAL``; an edge
``a -> b`` exists when some trace goes from ``a`` straight to ``b``. Node attributes:
``time_fraction``, ``time_fraction_lo``, ``time_fraction_hi``, ``visits``, ``time_s``;
edge attributes: ``count``, ``probability``, ``probability_lo``, ``probability_hi``
(definitions in :mod:`statemine.stats.summary`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..parse.statenames import is_derived
from ..stats.options import StatsOptions
from ..stats.tables import INITIAL, TERMINAL

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

    from ..traces import TraceSet

#: A table as a DataFrame or as columns (name -> array), e.g. from :func:`statemine.stats.tables.columns`.
Table = Union["pd.DataFrame", Mapping[str, np.ndarray]]


def observed_model(
    traces: TraceSet, options: StatsOptions | None = None, **changes: Any
) -> nx.DiGraph:
    """Build the observed-state model of ``traces`` as a networkx DiGraph (one node per
    state: at most ``max_states``, as :func:`statemine.stats.summary.summarize`, which
    takes the same ``options`` and keywords).

    >>> import pandas as pd
    >>> from statemine.traces import TraceSet
    >>> ts = TraceSet.from_events(pd.DataFrame({"trace": ["a"] * 3, "time": [0.0, 1.0, 4.0],
    ...                                         "state": ["SlowStart", "Recovery", "SlowStart"]}))
    >>> G = observed_model(ts, n_boot=0)
    >>> sorted(G.successors("SlowStart")), G.edges["SlowStart", "Recovery"]["probability"]
    (['Recovery', 'TERMINAL'], 0.5)
    """
    from ..stats.summary import summarize

    return model_from_stats(*summarize(traces, options, **changes))


def model_from_stats(states: Table, transitions: Table) -> nx.DiGraph:
    """The model graph from :func:`~statemine.stats.summary.state_stats` and
    :func:`~statemine.stats.summary.transition_stats` tables (DataFrames, or the same columns
    as a mapping of arrays)."""
    return model_graph(states, transitions).to_networkx()


def model_graph(states: Table, transitions: Table) -> ModelGraph:
    """:func:`model_from_stats` as a :class:`ModelGraph` (the same nodes, edges and
    attributes in the same order), without importing networkx: what ``infer --out``
    writes its model.dot and model.json from (networkx's import alone is ~0.14 s of CPU)."""
    G = ModelGraph(engine="observed")
    G.add_node(INITIAL, kind="initial")
    for state, fraction, lo, hi, time_s, visits in _rows(
        states, "state", "time_fraction", "time_fraction_lo", "time_fraction_hi", "time_s", "visits"
    ):
        G.add_node(
            state,
            kind="state",
            time_fraction=float(fraction),
            time_fraction_lo=float(lo),
            time_fraction_hi=float(hi),
            time_s=float(time_s),
            visits=int(visits),
            **({"derived": True} if is_derived(state) else {}),
        )
    G.add_node(TERMINAL, kind="terminal")
    for src, dst, count, p, lo, hi in _rows(
        transitions, "src", "dst", "count", "probability", "probability_lo", "probability_hi"
    ):
        G.add_edge(
            src,
            dst,
            count=int(count),
            probability=float(p),
            probability_lo=float(lo),
            probability_hi=float(hi),
        )
    return G


class _NodeView(dict[Any, dict[str, Any]]):
    """Node -> its attributes, in insertion order; called as networkx's ``G.nodes(data=True)``
    is: the (node, attributes) pairs (``data=False``: the nodes)."""

    def __call__(self, data: bool = False) -> Any:
        return self.items() if data else self.keys()


class ModelGraph:
    """A directed graph holding what :func:`~statemine.output.diagram.to_dot` and
    :func:`model_to_json` read of a networkx DiGraph, with networkx's semantics for that
    part: ``graph`` (the graph's attributes), ``nodes`` (``G.nodes[n]``, ``G.nodes(data=True)``,
    in insertion order), ``edges(data=True)`` (by source in node order, then by target in
    insertion order), ``add_node``/``add_edge`` (attributes merged, an edge's missing ends
    added), ``n in G``. :meth:`to_networkx` makes the equal networkx DiGraph."""

    def __init__(self, **graph: Any) -> None:
        self.graph: dict[str, Any] = dict(graph)
        self.nodes: _NodeView = _NodeView()
        self._succ: dict[Any, dict[Any, dict[str, Any]]] = {}

    def add_node(self, node: Any, **attrs: Any) -> None:
        """Add ``node`` (or update its attributes)."""
        if node not in self._succ:
            self._succ[node] = {}
            self.nodes[node] = {}
        self.nodes[node].update(attrs)

    def add_edge(self, src: Any, dst: Any, **attrs: Any) -> None:
        """Add the edge ``src -> dst`` (or update its attributes), adding its ends."""
        for node in (src, dst):
            if node not in self._succ:
                self.add_node(node)
        self._succ[src].setdefault(dst, {}).update(attrs)

    def edges(self, data: bool = False) -> list[tuple]:
        """``(src, dst, attributes)`` of every edge (``data=False``: ``(src, dst)``), in
        networkx's order."""
        return [
            (src, dst, attrs) if data else (src, dst)
            for src, succ in self._succ.items()
            for dst, attrs in succ.items()
        ]

    def is_directed(self) -> bool:
        return True

    def is_multigraph(self) -> bool:
        return False

    def __contains__(self, node: object) -> bool:
        return node in self._succ

    def __iter__(self) -> Iterator[Any]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def to_networkx(self) -> nx.DiGraph:
        """The networkx DiGraph with the same graph, node and edge attributes, in order."""
        import networkx as nx

        G: nx.DiGraph = nx.DiGraph(**self.graph)
        G.add_nodes_from((node, dict(attrs)) for node, attrs in self.nodes.items())
        G.add_edges_from((u, v, dict(attrs)) for u, v, attrs in self.edges(data=True))
        return G


def _rows(table: Table, *columns: str) -> Iterator[tuple]:
    """The rows of ``table`` (DataFrame or mapping of columns), restricted to ``columns``."""
    return zip(*(table[c] for c in columns))


def model_to_json(G: nx.DiGraph | ModelGraph) -> str:
    """Serialise a model graph as JSON (networkx node-link form; NaN written as null).

    The text of ``json.dumps(node_link_data(G), indent=1, sort_keys=True)``, written one
    node and one edge at a time, so a model of 1e5 states needs a few times the text's
    size, not the ~10x that the whole node-link dict and its copy take."""
    if G.is_multigraph():
        raise ValueError("model_to_json writes simple graphs (the observed-state model)")
    nodes = ({**attrs, "id": node} for node, attrs in G.nodes(data=True))
    edges = ({**attrs, "source": u, "target": v} for u, v, attrs in G.edges(data=True))
    fields: dict[str, Any] = {
        "directed": G.is_directed(),
        "edges": edges,
        "graph": G.graph,
        "multigraph": False,
        "nodes": nodes,
    }
    parts = []
    for key, value in fields.items():  # in sorted key order, as sort_keys=True writes them
        text = _json_list(value) if key in ("nodes", "edges") else _json_item(value, 1)
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}"


def _json_list(items: Iterator[dict]) -> str:
    """A list as ``json.dumps(..., indent=1)`` writes it one level down, item by item."""
    texts = [_json_item(item, 2) for item in items]
    return "[\n  " + ",\n  ".join(texts) + "\n ]" if texts else "[]"


def _json_item(value: Any, depth: int) -> str:
    """``json.dumps(value, indent=1, sort_keys=True)`` as it reads ``depth`` levels down
    (JSON text has no raw newline inside strings, so indenting every line is safe)."""
    return json.dumps(_nan_to_none(value), indent=1, sort_keys=True).replace(
        "\n", "\n" + " " * depth
    )


def model_from_json(text: str) -> nx.DiGraph:
    """Read a model graph written by :func:`model_to_json`."""
    import networkx as nx

    G = nx.node_link_graph(json.loads(text), directed=True, edges="edges")
    if not isinstance(G, nx.DiGraph):  # the text said "directed": false
        raise ValueError("a model is a directed graph")
    return G


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value
