"""Slow, independent reference for the Perfume engine's tests: a model read from a
``model.json`` (its ``log`` and ``partitions``) as a networkx graph whose edges carry the
exact decimal deltas of their transitions, constrained invariants checked by networkx's
Bellman-Ford on one walk source at a time (not the engine's vectorised fix-points), and
Perfume's edge-label text rebuilt from the definitions."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path

import networkx as nx
from synoptic_reference import accepts, invariant_holds


def read_model_json(path: Path) -> tuple[nx.DiGraph, list[list[tuple[str, Decimal]]]]:
    """(graph, traces) of a Perfume/Synoptic ``model.json``: nodes ``("p", k)`` per
    partition plus ``"INITIAL"``/``"TERMINAL"`` (attrs ``label``, ``state``); edges with
    ``deltas`` (exact decimals; none on INITIAL/TERMINAL edges) and ``count``."""
    data = json.loads(Path(path).read_text(), parse_float=Decimal, parse_int=Decimal)
    traces = [[(e["eventType"], Decimal(e["timestamp"])) for e in t["events"]] for t in data["log"]]
    node_of: dict[tuple[int, int], tuple[str, int]] = {}
    g: nx.DiGraph = nx.DiGraph()
    g.add_node("INITIAL", label="INITIAL", state=None)
    g.add_node("TERMINAL", label="TERMINAL", state=None)
    for k, p in enumerate(data["partitions"]):
        g.add_node(("p", k), label=p["eventType"], state=p["eventType"])
        for e in p["events"]:
            node_of[(int(e["traceID"]), int(e["eventIndex"]))] = ("p", k)
    for t, tr in enumerate(traces):
        prev: str | tuple[str, int] = "INITIAL"
        for i, (typ, time) in enumerate(tr):
            node = node_of[(t, i)]
            assert g.nodes[node]["state"] == typ
            if not g.has_edge(prev, node):
                g.add_edge(prev, node, deltas=[], count=0)
            g.edges[prev, node]["count"] += 1
            if prev != "INITIAL":
                g.edges[prev, node]["deltas"].append(time - tr[i - 1][1])
            prev = node
        if not g.has_edge(prev, "TERMINAL"):
            g.add_edge(prev, "TERMINAL", deltas=[], count=0)
        g.edges[prev, "TERMINAL"]["count"] += 1
    return g, traces


def _of_type(g: nx.DiGraph, t: str) -> list:
    return [n for n, d in g.nodes(data=True) if d["state"] == t]


def bound_holds(
    g: nx.DiGraph, a: str, b: str, limit: Decimal, upper: bool, first_only: bool
) -> bool:
    """Every walk from an ``a`` node (``first_only``: a first ``a`` of a path from
    INITIAL, not passing another ``a`` node) to a ``b`` node totals at most ``limit``
    (``upper``: each edge counts its largest delta) / at least ``limit`` (smallest)."""
    a_nodes = set(_of_type(g, a))
    b_nodes = set(_of_type(g, b))
    if first_only:
        before = g.subgraph([n for n in g if n not in a_nodes])
        seen = nx.descendants(before, "INITIAL") | {"INITIAL"}
        starts = {n for n in a_nodes if any(p in seen for p in g.predecessors(n))}
    else:
        starts = a_nodes
    w: nx.DiGraph = nx.DiGraph()
    for u, v, d in g.edges(data=True):
        if u == "INITIAL" or v == "TERMINAL" or (first_only and u in a_nodes):
            continue
        w.add_edge(u, v, w=-max(d["deltas"]) if upper else min(d["deltas"]))
    for s in starts:
        h = w.copy()
        h.add_node("SOURCE")
        for v in g.successors(s):
            if v != "TERMINAL":
                d = g.edges[s, v]["deltas"]
                h.add_edge("SOURCE", v, w=-max(d) if upper else min(d))
        ends = b_nodes & set(h.nodes)
        towards: set = set()
        for e in ends:
            towards |= nx.ancestors(h, e) | {e}
        sub = h.subgraph({"SOURCE"} | (nx.descendants(h, "SOURCE") & towards))
        try:
            dist = nx.single_source_bellman_ford_path_length(sub, "SOURCE", weight="w")
        except nx.NetworkXUnbounded:
            return False
        for e in ends:
            if e in dist:
                total = -dist[e] if upper else dist[e]
                if (total > limit) if upper else (total < limit):
                    return False
    return True


def intr_holds(g: nx.DiGraph, a: str, b: str) -> bool:
    """No walk from an ``a`` node reaches an ``a`` node without passing a ``b`` node."""
    a_nodes = set(_of_type(g, a))
    for s in a_nodes:
        h: nx.DiGraph = nx.DiGraph()
        h.add_node("SOURCE")
        for u, v in g.edges:
            if g.nodes[u]["state"] not in (a, b, None) and g.nodes[v]["state"] != b:
                h.add_edge(u, v)
        for v in g.successors(s):
            if g.nodes[v]["state"] != b:
                h.add_edge("SOURCE", v)
        if a_nodes & (nx.descendants(h, "SOURCE")):
            return False
    return True


def violated_rows(g: nx.DiGraph, rows: list[dict], strict: bool = False) -> list[int]:
    """Indices of the constrained invariants (``kind, first, second, bound, value``) that
    fail on ``g`` (Perfume's semantics: an AlwaysPrecedes upper bound from the first
    ``a`` only, unless ``strict``)."""
    bad = []
    for i, r in enumerate(rows):
        kind, a, b = r["kind"], r["first"], r["second"]
        ok = intr_holds(g, a, b) if kind == "IntrBy" else invariant_holds(g, kind, a, b)
        if ok and r["bound"]:
            upper = r["bound"] == "upperbound"
            target = a if kind == "IntrBy" else b
            first = upper and kind == "AlwaysPrecedes" and not strict
            ok = bound_holds(g, a, target, Decimal(r["value"]), upper, first)
        if not ok:
            bad.append(i)
    return bad


def rejected(g: nx.DiGraph, traces: list[list[tuple[str, Decimal]]]) -> list[int]:
    """Traces the model does not accept."""
    return [k for k, tr in enumerate(traces) if not accepts(g, [t for t, _ in tr])]


def label_text(deltas: list[Decimal]) -> str:
    """Perfume's ``<times>`` from the definition: min and max, 3 significant digits half
    up, Java BigDecimal text, trailing zeros of a text with a '.' dropped."""
    ctx = Context(prec=3, rounding=ROUND_HALF_UP)

    def one(d: Decimal) -> str:
        s = str(ctx.create_decimal(d))
        while "." in s and s.endswith("0"):
            s = s[:-1]
        return s[:-1] if s.endswith(".") else s

    lo, hi = one(min(deltas)), one(max(deltas))
    return lo if lo == hi else f"[{lo},{hi}]"


def edge_labels(g: nx.DiGraph, prob: bool) -> list[tuple[str, str, str]]:
    """Sorted (source label, target label, edge label) of every edge of ``g``."""
    out = []
    for u, v, d in g.edges(data=True):
        times = "" if u == "INITIAL" or v == "TERMINAL" else label_text(d["deltas"])
        total = sum(g.edges[u, x]["count"] for x in g.successors(u))
        p = (Decimal(repr(float(d["count"]) / float(total)))).quantize(
            Decimal("0.01"), rounding=ROUND_HALF_UP
        )
        out.append((g.nodes[u]["label"], g.nodes[v]["label"], f"{times} {p}" if prob else times))
    return sorted(out)


def dot_edge_labels(path: Path) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(sorted node labels, sorted (source label, target label, edge label)) of a
    Perfume ``model.dot``."""
    import re

    nodes: dict[str, str] = {}
    edges = []
    for line in Path(path).read_text().splitlines():
        m = re.match(r'^\s*(\d+) \[label="(.*?)"(?:,shape=\w+)?\];$', line)
        if m:
            nodes[m.group(1)] = m.group(2)
            continue
        m = re.match(r'^(\d+)->(\d+) \[label="(.*)"\];$', line)
        if m:
            edges.append((nodes[m.group(1)], nodes[m.group(2)], m.group(3)))
    return sorted(nodes.values()), sorted(edges)


def generated_timed_log(kind: str, n_traces: int, seed: int) -> str:
    """A generated log with times (``<time> <Type>`` lines, ``--`` between traces; parse
    with ``-r '^(?<DTIME>)(?<TYPE>)$' -s '^--$'``):

    * ``latency``: Connect, TokenAuth (fast) or PasswordAuth (slow), Query, Reply, Close;
      integer milliseconds;
    * ``retry``: Request, then (Challenge, Request) repeated 0-3 times, then Accept or
      Reject; seconds with 3 decimals (loops: IntrBy invariants);
    * ``states``: congestion-control states with loops (Init, SlowStart, then
      CongestionAvoidance / Recovery / ApplicationLimited / SlowStart), microseconds.
    """
    import random

    rnd = random.Random(seed)
    lines: list[str] = []
    for k in range(n_traces):
        if k:
            lines.append("--")
        if kind == "latency":
            t = Decimal(rnd.randint(0, 5))
            slow = rnd.random() < 0.5
            steps = [
                ("Connect", 0),
                ("PasswordAuth" if slow else "TokenAuth", rnd.randint(2, 5)),
                ("Query", rnd.randint(2, 6)),
                ("Reply", rnd.randint(200, 1200) if slow else rnd.randint(4, 9)),
                ("Close", rnd.randint(1, 3)),
            ]
            for name, dt in steps:
                t += dt
                lines.append(f"{t} {name}")
        elif kind == "retry":
            t = Decimal(rnd.randint(0, 999)) / 1000
            lines.append(f"{t} Request")
            for _ in range(rnd.randint(0, 3)):
                for name in ("Challenge", "Request"):
                    t += Decimal(rnd.randint(50, 3000)) / 1000
                    lines.append(f"{t} {name}")
            t += Decimal(rnd.randint(60, 130)) / 1000
            lines.append(f"{t} {'Accept' if rnd.random() < 0.6 else 'Reject'}")
        else:
            t = Decimal(0)
            lines.append(f"{t} Init")
            t += rnd.randint(100, 3000)
            lines.append(f"{t} SlowStart")
            for _ in range(rnd.randint(1, 6)):
                name = rnd.choice(
                    ["CongestionAvoidance", "CongestionAvoidance", "Recovery", "ApplicationLimited"]
                )
                t += int(rnd.lognormvariate(11, 1))
                lines.append(f"{t} {name}")
                if name == "ApplicationLimited" and rnd.random() < 0.5:
                    t += int(rnd.lognormvariate(10, 1))
                    lines.append(f"{t} SlowStart")
    return "\n".join(lines) + "\n"
