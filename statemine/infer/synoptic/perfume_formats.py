"""Perfume's model files: ``model.dot`` with time-range edge labels and the ``invariants``
part of ``model.json`` (the layout of the real Perfume's files, as described in
``../shared/synoptic-oracle/README-perfume-ktails.md``; no code is taken from Perfume).

Edge label: ``<times> <P>`` (``--outputProbLabels=true``) or ``<times>``; ``<times>`` is
empty on edges out of INITIAL and into TERMINAL, else the smallest and largest delta of
the edge's event-level transitions (exact decimals of the times as written), each
rounded to 3 significant digits half up, printed as Java's ``BigDecimal.toString``,
trailing zeros (and then a trailing ``.``) stripped when the text has a ``.``, shown once
when both print the same, else ``[min,max]``.  Node ids: real nodes by label (Java
string order), then fewer outgoing edges, then first event; then TERMINAL, INITIAL.
Edges grouped by source id, ordered by target label, count, probability, sorted deltas.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Context, Decimal

import numpy as np
import pandas as pd

from .formats import dot_escape
from .invariants import java_key
from .model import INIT_NODE, TERM_NODE, PartitionModel, probability_text

_THREE = Context(prec=3, rounding=ROUND_HALF_UP)


def time_text(delta: Decimal) -> str:
    """One delta as Perfume prints it on an edge.

    >>> [time_text(Decimal(x)) for x in ("64", "5.0", "1.125", "212.25", "1225", "1000")]
    ['64', '5', '1.13', '212', '1.23E+3', '1.00E+3']
    """
    text = str(_THREE.plus(delta))
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def range_text(lo: Decimal, hi: Decimal) -> str:
    """``lo`` alone when both print the same, else ``[lo,hi]``."""
    a, b = time_text(lo), time_text(hi)
    return a if a == b else f"[{a},{b}]"


def sparse_edges(model: PartitionModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, count)`` of every edge, sorted by ``(src, dst)``: O(events) memory
    (a near-trace-graph model has as many nodes as events, so no nodes x nodes matrix)."""
    log = model.log
    src = np.concatenate([np.full(log.n_traces, INIT_NODE, dtype=np.int64), model.part])
    dst = np.concatenate([model.part[log.starts[:-1]], model.successor_nodes()])
    key, count = np.unique(src * model.n_nodes + dst, return_counts=True)
    return key // model.n_nodes, key % model.n_nodes, count.astype(np.int64)


def perfume_order(model: PartitionModel) -> np.ndarray:
    """Node ids in Perfume's dot order (``order[k]`` is the node of dot id k)."""
    labels = model.labels()
    out_deg = np.bincount(sparse_edges(model)[0], minlength=model.n_nodes)
    first = np.full(model.n_nodes, np.iinfo(np.int64).max)
    np.minimum.at(first, model.part, np.arange(len(model.part)))
    real = sorted(
        range(2, model.n_nodes), key=lambda n: (java_key(labels[n]), out_deg[n], first[n])
    )
    return np.array([*real, TERM_NODE, INIT_NODE], dtype=np.int64)


def edge_rows(model: PartitionModel, ticks: np.ndarray, prob: bool) -> pd.DataFrame:
    """One row per edge in Perfume's order: ``src``, ``dst`` (dot ids), ``label``."""
    log = model.log
    order = perfume_order(model)
    dot_id = np.empty(model.n_nodes, dtype=np.int64)
    dot_id[order] = np.arange(model.n_nodes)
    labels = model.labels()
    e_src, e_dst, e_count = sparse_edges(model)
    sizes = model.node_sizes()
    texts = log.time_texts()
    inner = np.nonzero(~log.is_last)[0]
    src_n, dst_n = model.part[inner], model.part[inner + 1]
    delta = ticks[inner + 1] - ticks[inner]
    by_edge: dict[tuple[int, int], list[int]] = {}
    for k, (s, d) in enumerate(zip(src_n.tolist(), dst_n.tolist())):
        by_edge.setdefault((s, d), []).append(k)
    rows = []
    for s, d, c in zip(e_src.tolist(), e_dst.tolist(), e_count.tolist()):
        ks = by_edge.get((s, d), [])
        times = ""
        deltas: list[float] = []
        if ks and s != INIT_NODE and d != TERM_NODE:
            dk = delta[ks]
            deltas = sorted(dk.tolist())
            lo, hi = inner[ks[int(np.argmin(dk))]], inner[ks[int(np.argmax(dk))]]
            times = range_text(
                Decimal(texts[lo + 1]) - Decimal(texts[lo]),
                Decimal(texts[hi + 1]) - Decimal(texts[hi]),
            )
        p = probability_text(c, int(sizes[s]))
        label = f"{times} {p}" if prob else times
        key = (c, c / int(sizes[s]), deltas, int(dot_id[d]))
        rows.append((int(dot_id[s]), java_key(labels[d]), key, int(dot_id[d]), label))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    return pd.DataFrame([(r[0], r[3], r[4]) for r in rows], columns=["src", "dst", "label"]).astype(
        {"src": np.int64, "dst": np.int64}
    )


def perfume_dot(
    model: PartitionModel,
    ticks: np.ndarray,
    prob: bool = False,
    show_initial: bool = True,
    show_terminal: bool = True,
) -> str:
    """Perfume's ``model.dot`` (INITIAL/TERMINAL and their edges can be hidden; the other
    nodes keep consecutive ids)."""
    order = perfume_order(model)
    labels = model.labels()
    hidden = {k for k, n in enumerate(order) if (n == INIT_NODE and not show_initial)}
    hidden |= {k for k, n in enumerate(order) if (n == TERM_NODE and not show_terminal)}
    shown = [k for k in range(len(order)) if k not in hidden]
    ident = {k: i for i, k in enumerate(shown)}
    out = ["digraph G {"]
    for k in shown:
        n = order[k]
        lab = dot_escape(labels[n])
        shape = ",shape=diamond" if n == TERM_NODE else ",shape=box" if n == INIT_NODE else ""
        out.append(f'  {ident[k]} [label="{lab}"{shape}];')
    for s, d, label in edge_rows(model, ticks, prob).itertuples(index=False):
        if s in ident and d in ident:
            out.append(f'{ident[s]}->{ident[d]} [label="{dot_escape(label)}"];')
    out.append("}")
    return "\n".join(out) + "\n"


def invariants_json(entries: list[dict]) -> str:
    """The ``invariants`` list of Perfume's ``model.json`` (compact JSON)."""
    return ",".join(json.dumps(e, separators=(",", ":")) for e in entries)
