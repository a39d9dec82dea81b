"""Checking a Perfume model read from a file against Perfume's constrained invariants
(``statemine check-model``).

A ``model.json`` names every event's node, so the edges' time ranges are exact
(:func:`~.timecheck.timed_graph` over the parsed log).  A ``model.dot`` only has each
edge's smallest and largest delta rounded to 3 significant digits (half up, as Perfume
prints them): the label ``1.23E+3`` stands for any delta in [1225, 1235], ``5.5`` for
[5.495, 5.505] (cut to the log's time resolution: with whole-millisecond times every label
below 1000 is exact).  The bounds are checked twice, on the edges' most favourable and
least favourable values: a bound that fails on the favourable ones fails on the model
(walk totals only grow with the largest deltas and shrink with the smallest), one that
holds on the unfavourable ones holds; any other is *undecided* (the dot's rounding
hides the answer; the model's ``model.json`` settles it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError
from .check import rejected_traces
from .timecheck import TimedCodes, TimedGraph, aggregate_edges, exact_ticks, violations

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

    from .log import EventLog
    from .model import PartitionModel


def label_ticks(text: str, scale: int) -> tuple[float, float]:
    """The delta range (ticks of 10**-scale) a Perfume edge time ``text`` can stand for:
    the values that round to it at 3 significant digits, on the tick grid.

    >>> label_ticks("1.23E+3", 0), label_ticks("5.5", 0), label_ticks("5.5", 3)
    ((1225.0, 1235.0), (6.0, 5.0), (5495.0, 5505.0))
    >>> label_ticks("212", 0), label_ticks("0", 2)
    ((212.0, 212.0), (0.0, 0.0))
    """
    v = Decimal(text)
    if v == 0:
        return 0.0, 0.0
    half = Decimal(5).scaleb(v.adjusted() - 3)
    lo = (v - half).scaleb(scale)
    hi = (v + half).scaleb(scale)
    return float(math.ceil(lo)), float(math.floor(hi))


@dataclass
class ConstrainedReport:
    """Constrained invariants on a model: ``violated`` (rows of the invariant frame that
    fail), ``undecided`` (rows the dot's rounded times cannot settle; empty for a
    model.json), ``rejected`` (traces the model does not accept)."""

    rejected: list[int]
    violated: pd.DataFrame
    undecided: pd.DataFrame
    n_traces: int
    n_invariants: int

    @property
    def ok(self) -> bool:
        """Every trace accepted, every invariant shown to hold."""
        return not self.rejected and self.violated.empty and self.undecided.empty


def _on_paths(graph: nx.DiGraph, init: object, term: object) -> set:
    """Nodes on some INITIAL -> TERMINAL path."""
    import networkx as nx

    return ({init} | nx.descendants(graph, init)) & ({term} | nx.ancestors(graph, term))


def graph_bounds(
    graph: nx.DiGraph,
    log: EventLog,
    scale: int,
    type_code: dict[str, int],
    exact: dict[tuple, tuple[float, float]] | None = None,
) -> tuple[TimedGraph, TimedGraph]:
    """``(favourable, unfavourable)`` :class:`~.timecheck.TimedGraph` of a Perfume dot
    graph (edge attrs ``time_lo``/``time_hi``): nodes 0/1 INITIAL/TERMINAL, then the
    other nodes on an INITIAL -> TERMINAL path; favourable edges take the largest
    possible smallest delta and the smallest possible largest one, unfavourable the
    other ends; an edge in ``exact`` takes its (smallest, largest) delta from there.
    ``type_code`` grows by labels the log does not have."""
    init, term = _ends(graph)
    keep = _on_paths(graph, init, term)
    index = {init: 0, term: 1}
    for n in graph.nodes:
        if n in keep and n not in index:
            index[n] = len(index)
    node_type = np.full(len(index), -1, dtype=np.int64)
    for n, i in index.items():
        st = graph.nodes[n]["state"]
        if st is not None:
            node_type[i] = type_code.setdefault(st, len(type_code))
    rows = []
    for u, v, d in graph.edges(data=True):
        if u not in keep or v not in keep:
            continue
        if u == init or v == term:
            rows.append((index[u], index[v], 0.0, 0.0, 0.0, 0.0))
            continue
        if d.get("time_lo") is None:
            raise InputError(
                None,
                None,
                f"edge {u}->{v} has no time: constrained invariants need "
                "a Perfume model (times on its edges)",
            )
        lo_a, lo_b = label_ticks(d["time_lo"], scale)
        hi_a, hi_b = label_ticks(d["time_hi"], scale)
        if lo_a > lo_b or hi_a > hi_b:
            raise InputError(
                None,
                None,
                f"edge {u}->{v}: no delta at the log's time resolution prints "
                f"as {d['time_lo']} or {d['time_hi']}: not a model of this log",
            )
        if exact is not None and (u, v) in exact:
            lo_a, hi_b = exact[(u, v)]
            lo_b, hi_a = lo_a, hi_b
        rows.append((index[u], index[v], min(lo_b, hi_b), max(hi_a, lo_a), lo_a, hi_b))
    a = np.array(rows, dtype=np.float64).reshape(-1, 6)
    if not len(a):  # no INITIAL -> TERMINAL path: no walk breaks a bound
        empty = np.zeros(0, dtype=np.int64)
        g = TimedGraph(len(index), empty, empty, empty * 0.0, empty * 0.0, node_type)
        return g, g
    src, dst = a[:, 0].astype(np.int64), a[:, 1].astype(np.int64)
    good = aggregate_edges(len(index), src, dst, a[:, 2], a[:, 3], node_type)
    bad = aggregate_edges(len(index), src, dst, a[:, 4], a[:, 5], node_type)
    return good, bad


def traced_ranges(
    graph: nx.DiGraph, log: EventLog, ticks: np.ndarray, scale: int
) -> dict[tuple, tuple[float, float]] | None:
    """The exact (smallest, largest) delta of every edge the traces take, when the dot
    pins each trace to one path: the only INITIAL -> TERMINAL path labelled with its
    events whose every delta lies in its edge's rounded range, and each edge's smallest
    and largest delta over those paths print as the edge's label.  None when some trace
    has no such path or several, or the extremes do not match the labels (then only the
    rounded ranges are known)."""
    init, term = _ends(graph)
    ranges = {}
    succ: dict[object, dict[str, list]] = {}
    for u, v, d in graph.edges(data=True):
        if v == term or u == init:
            ranges[(u, v)] = (-np.inf, np.inf)
        elif d.get("time_lo") is None:
            return None
        else:
            ranges[(u, v)] = (
                label_ticks(d["time_lo"], scale)[0],
                label_ticks(d["time_hi"], scale)[1],
            )
        if v != term:
            succ.setdefault(u, {}).setdefault(graph.nodes[v]["label"], []).append(v)
    seen: dict[tuple, list[float]] = {}
    for k in range(log.n_traces):
        lo, hi = int(log.starts[k]), int(log.starts[k + 1])
        events = log.trace(k)
        # per step, per node: (number of consistent paths, capped at 2; predecessor)
        steps: list[dict[object, tuple[int, object]]] = [{init: (1, None)}]
        for i, ev in enumerate(events):
            delta = 0.0 if i == 0 else float(ticks[lo + i] - ticks[lo + i - 1])
            nxt: dict[object, tuple[int, object]] = {}
            for u, (c, _) in steps[-1].items():
                for v in succ.get(u, {}).get(ev, ()):
                    a, b = ranges[(u, v)]
                    if a <= delta <= b:
                        old = nxt.get(v, (0, u))
                        nxt[v] = (min(2, old[0] + c), old[1])
            steps.append(nxt)
        ends = [(c, u) for u, (c, _) in steps[-1].items() if graph.has_edge(u, term)]
        if sum(c for c, _ in ends) != 1:
            return None
        path = [ends[0][1]]
        for step in reversed(steps[2:]):
            path.append(step[path[-1]][1])
        path.reverse()
        for i in range(1, hi - lo):
            seen.setdefault((path[i - 1], path[i]), []).append(
                float(ticks[lo + i] - ticks[lo + i - 1])
            )
    out = {}
    for (u, v), deltas in seen.items():
        a, b = min(deltas), max(deltas)
        d = graph.edges[u, v]
        la, lb = label_ticks(d["time_lo"], scale)
        ha, hb = label_ticks(d["time_hi"], scale)
        if not (la <= a <= lb and ha <= b <= hb):
            return None
        out[(u, v)] = (a, b)
    return out


def _ends(graph: nx.DiGraph) -> tuple[object, object]:
    synthetic = {d["label"]: n for n, d in graph.nodes(data=True) if d.get("state") is None}
    if "INITIAL" not in synthetic or "TERMINAL" not in synthetic:
        raise InputError(None, None, "the model has no INITIAL or no TERMINAL node")
    return synthetic["INITIAL"], synthetic["TERMINAL"]


def _rejected(graph: nx.DiGraph, log: EventLog) -> list[int]:
    init, term = _ends(graph)
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    labels = [
        graph.nodes[n]["label"] if graph.nodes[n]["state"] is not None else "\0" for n in nodes
    ]
    src = np.array([index[u] for u, _ in graph.edges], dtype=np.int64)
    dst = np.array([index[v] for _, v in graph.edges], dtype=np.int64)
    traces = [log.trace(k) for k in range(log.n_traces)]
    return rejected_traces(src, dst, labels, traces, index[init], index[term])


def check_constrained(
    graph: nx.DiGraph,
    log: EventLog,
    frame: pd.DataFrame,
    partition: PartitionModel | None = None,
) -> ConstrainedReport:
    """Check Perfume's constrained invariants ``frame`` (:func:`~.perfume.mine_constrained`
    or :func:`~.model_files.read_constrained_txt`) on a model: exactly on ``partition``
    (a model.json's), else on the dot ``graph``'s rounded edge times (module doc)."""
    from .timecheck import timed_graph

    ticks, scale = exact_ticks(log)
    type_code = {t: i for i, t in enumerate(log.types)}
    for name in [*frame["first"], *frame["second"]]:
        type_code.setdefault(name, len(type_code))
    types = sorted(type_code, key=type_code.__getitem__)
    codes = TimedCodes.from_frame(frame, types, scale)
    if partition is not None:
        g = timed_graph(partition.part, partition.node_type, log, ticks)
        bad = violations(g, codes, len(types))
        unsure = np.zeros_like(bad)
    else:
        exact = traced_ranges(graph, log, ticks, scale)
        good, worst = graph_bounds(graph, log, scale, type_code, exact)
        bad = violations(good, codes, len(type_code))
        unsure = violations(worst, codes, len(type_code)) & ~bad
    return ConstrainedReport(
        _rejected(graph, log),
        frame[bad].reset_index(drop=True),
        frame[unsure].reset_index(drop=True),
        log.n_traces,
        len(frame),
    )
