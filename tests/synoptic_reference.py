"""Slow, obviously-correct reference implementations for the Synoptic engine's tests:
invariants straight from their definitions, and model checking by reachability in an
explicit product graph built with networkx (independent of the engine's matrix code)."""

from __future__ import annotations

import networkx as nx
import numpy as np


def brute_invariants(traces: list[list[str]]) -> set[tuple[str, str, str, int]]:
    """(kind, a, b, support) from the definitions, pair by pair and event by event."""
    types = sorted({t for tr in traces for t in tr})
    count = {t: sum(tr.count(t) for tr in traces) for t in types}
    out = set()
    for a in types:
        for b in types:
            followed = sum(
                1 for tr in traces for i, x in enumerate(tr) if x == a and b in tr[i + 1 :]
            )
            preceded = sum(1 for tr in traces for i, x in enumerate(tr) if x == b and a in tr[:i])
            if followed == count[a]:
                out.add(("AlwaysFollowedBy", a, b, count[a]))
            if followed == 0:
                out.add(("NeverFollowedBy", a, b, count[a]))
            if preceded == count[b]:
                out.add(("AlwaysPrecedes", a, b, count[b]))
    for x in types:
        if all(x in tr for tr in traces):
            out.add(("AlwaysFollowedBy", "INITIAL", x, count[x]))
    return out


def _synthetic(g: nx.DiGraph, name: str):
    return next(n for n, d in g.nodes(data=True) if d.get("state") is None and d["label"] == name)


def invariant_holds(g: nx.DiGraph, kind: str, a: str, b: str) -> bool:
    """Does the invariant hold on every INITIAL -> TERMINAL path of ``g``?  Builds the
    product of ``g`` with the invariant's violation automaton and asks networkx whether
    an accepting product state is reachable."""
    init, term = _synthetic(g, "INITIAL"), _synthetic(g, "TERMINAL")
    state = {n: d.get("state") for n, d in g.nodes(data=True)}

    # phases: 0 = watching, 1 = armed (a seen / b still owed), "bad" = violation
    def move(phase, node):
        s = state[node]
        if kind == "NeverFollowedBy":
            if phase == 1 and s == b:
                return "bad"
            return 1 if (s == a or phase == 1) else 0
        if kind == "AlwaysPrecedes":
            if phase == 1:
                return 1
            if s == a:
                return 1
            return "bad" if s == b else 0
        # AlwaysFollowedBy (a may be INITIAL)
        if node == term:
            return "bad" if phase == 1 else 0
        if s == b:
            return 0
        return 1 if s == a else phase

    start_phase = 1 if (kind == "AlwaysFollowedBy" and a == "INITIAL") else 0
    prod: nx.DiGraph = nx.DiGraph()
    seen = {(init, start_phase)}
    stack = [(init, start_phase)]
    while stack:
        node, phase = stack.pop()
        for nxt in g.successors(node):
            p2 = move(phase, nxt)
            prod.add_edge((node, phase), (nxt, p2))
            if p2 != "bad" and (nxt, p2) not in seen:
                seen.add((nxt, p2))
                stack.append((nxt, p2))
    return not any(p == "bad" for _, p in prod.nodes)


def accepts(g: nx.DiGraph, trace: list[str]) -> bool:
    """Is there a path INITIAL, nodes whose states spell ``trace``, TERMINAL?"""
    init, term = _synthetic(g, "INITIAL"), _synthetic(g, "TERMINAL")
    cur = {init}
    for ev in trace:
        cur = {w for v in cur for w in g.successors(v) if g.nodes[w].get("state") == ev}
    return any(g.has_edge(v, term) for v in cur)


def coarsen_every_trial(model, codes, rng):
    """The coarsening loop with every merge trial checked from scratch by
    ``violated_edges`` on the relabelled model (what the engine's incremental
    :class:`MergeCheck` and its skipping of known failures must reproduce exactly)."""
    import numpy as np

    from statemine.infer.synoptic.check import violated_edges
    from statemine.infer.synoptic.model import INIT_NODE, TERM_NODE, PartitionModel

    src, dst = np.nonzero(model.edge_counts())
    group = np.arange(model.n_nodes)
    n_types = len(model.log.types)

    def holds(trial):
        reps, dense = np.unique(trial, return_inverse=True)
        return not violated_edges(
            len(reps),
            dense[src],
            dense[dst],
            model.node_type[reps],
            codes,
            n_types,
            int(dense[INIT_NODE]),
            int(dense[TERM_NODE]),
        ).any()

    types = np.unique(model.node_type[model.node_type >= 0])
    changed = True
    while changed:
        changed = False
        pairs = []
        for t in types:
            reps = np.unique(group)
            reps = reps[model.node_type[reps] == t]
            pairs += [(int(p), int(q)) for i, p in enumerate(reps) for q in reps[i + 1 :]]
        if pairs:
            pairs = [pairs[k] for k in rng.permutation(len(pairs))]
        for p, q in pairs:
            if group[p] != p or group[q] != q:
                continue
            trial = group.copy()
            trial[group == max(p, q)] = min(p, q)
            if holds(trial):
                group = trial
                changed = True
    return PartitionModel(model.log, group[model.part], model.node_type.copy()).compact()


def counterexample_queue(
    adj: np.ndarray, node_type: np.ndarray, kind: int, a: int, b: int, init: int = 0, term: int = 1
) -> list[int] | None:
    """The engine's counterexample search as a plain first-in first-out queue over
    (node, phase), one state at a time (the vectorized search must return its path)."""
    from collections import deque

    import numpy as np

    succ = [np.nonzero(row)[0].tolist() for row in adj]

    def step(phase: int, v: int) -> int | None:
        """Automaton phase after entering node v; None = dead; 9 = accepting."""
        t = node_type[v]
        if kind == 0:  # AFby (a == -1: INITIAL, phase starts at 1)
            if t == b and t >= 0:
                return 0
            if t == a and t >= 0:
                return 1
            if v == term:
                return 9 if phase == 1 else None
            return phase
        if kind == 1:  # NFby
            if phase == 1 and t == b:
                return 9
            if t == a:
                return 1
            return None if v == term else phase
        # AP
        if t == a:
            return None
        if t == b:
            return 9
        return None if v == term else phase

    start = (init, 1 if (kind == 0 and a < 0) else 0)
    parent: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        v, phase = queue.popleft()
        for w in succ[v]:
            nphase = step(phase, w)
            if nphase is None:
                continue
            state = (w, nphase)
            if state in parent:
                continue
            parent[state] = (v, phase)
            if nphase == 9:
                path = [w]
                cur: tuple[int, int] | None = (v, phase)
                while cur is not None:
                    path.append(cur[0])
                    cur = parent[cur]
                return path[::-1]
            queue.append(state)
    return None


def model_json_text(model, invariants) -> str:
    """``model.json`` written event by event with ``json.dumps`` (what the engine's
    block-wise Arrow writer must produce byte for byte)."""
    import json

    from statemine.infer.synoptic.invariants import sort_invariants

    log = model.log
    stamps = log.time_texts()

    def number(text):
        """The text when it is a JSON number (json.loads refuses 007, 00.5), else the
        float's."""
        try:
            ok = not isinstance(json.loads(text), str) and text not in (
                "NaN",
                "Infinity",
                "-Infinity",
            )
        except ValueError:
            ok = False
        return text if ok else json.dumps(float(text))

    traces = []
    for k in range(log.n_traces):
        events = []
        for i, e in enumerate(range(log.starts[k], log.starts[k + 1])):
            events.append(
                f'{{"eventIndex":{i},"eventType":{json.dumps(log.types[log.codes[e]])},'
                f'"logLine":{int(log.lines[e])},"timestamp":{number(stamps[e])}}}'
            )
        traces.append(f'{{"traceID":{k},"events":[{",".join(events)}]}}')
    labels = model.labels()
    parts = []
    for node in model.dot_order():
        members = [e for e in range(log.n_events) if model.part[e] == node]
        if not members:
            continue
        parts.append(
            '{{"eventType":{},"events":[{}]}}'.format(
                json.dumps(labels[node]),
                ",".join(
                    f'{{"traceID":{t},"eventIndex":{int(e - log.starts[t])}}}'
                    for e in members
                    for t in [int(log.trace_of[e])]
                ),
            )
        )
    inv = sort_invariants(invariants)
    invs = ",".join(
        f'{{"invariantType":{json.dumps(k)},"predicates":[{json.dumps(a)},{json.dumps(b)}]}}'
        for k, a, b in zip(inv["kind"], inv["first"], inv["second"])
    )
    return '{{"log":[{}],"partitions":[{}],"invariants":[{}]}}'.format(
        ",".join(traces),
        ",".join(parts),
        invs,
    )


def generated_event_log(n_traces: int, seed: int) -> tuple[list[list[str]], str]:
    """(traces, log text) of a generated congestion-control event log in the oracle's
    format (``<microseconds> <Type>`` lines, ``--`` between traces; parse with
    ``-r '^(?<DTIME>)(?<TYPE>)$' -s '^--$'``).  Point events (``loss`` before
    ``Recovery``, ``rto`` before ``RetransmissionTimeout``, ``close``/``timeout`` at the
    end) give invariants that fail on the one-node-per-type graph, so the engine has to
    refine.  Made by the tests themselves, so the fast tier covers the engine without the
    third-party cases in ../shared."""
    import random

    rng = random.Random(seed)
    nxt = {
        "SlowStart": ["CongestionAvoidance", "Recovery", "RetransmissionTimeout"],
        "CongestionAvoidance": ["Recovery", "ApplicationLimited", "RetransmissionTimeout"],
        "Recovery": ["CongestionAvoidance", "ApplicationLimited"],
        "ApplicationLimited": ["SlowStart", "CongestionAvoidance"],
        "RetransmissionTimeout": ["SlowStart"],
    }
    traces, lines, t = [], [], 1_700_000_000_000_000
    for _ in range(n_traces):
        state, trace = "SlowStart", ["Init"]
        for _ in range(rng.randint(1, 7)):
            trace += {"Recovery": ["loss"], "RetransmissionTimeout": ["rto"]}.get(state, [])
            trace += [state] + ["ack"] * rng.randint(0, 2)
            state = rng.choice(nxt[state])
        trace.append("timeout" if trace[-1] == "RetransmissionTimeout" else "close")
        traces.append(trace)
        for ev in trace:
            t += rng.randint(1, 200_000)
            lines.append(f"{t} {ev}")
        lines.append("--")
    return traces, "\n".join(lines[:-1]) + "\n"
