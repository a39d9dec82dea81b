"""Model checking: does a model accept every trace, and does every invariant hold on it?

An invariant holds on a model when it holds on every path from INITIAL to TERMINAL (the
finite-trace semantics of Synoptic's model checker, FSE 2011 section 4).  All invariants
are checked at once with boolean matrix fix-points over the node x type matrices (a few
BLAS products per check), which keeps refinement and coarsening fast:

* ``a NFby b`` fails iff a ``b`` node is reachable (>= 1 step) from an ``a`` node;
* ``a AFby b`` fails iff from a successor of an ``a`` node, TERMINAL is reachable through
  nodes none of which is a ``b`` node (``INITIAL AFby x``: from a successor of INITIAL);
* ``a AP b`` fails iff a ``b`` node has a predecessor reachable from INITIAL through nodes
  none of which is an ``a`` node.

Nodes that are not on any INITIAL -> TERMINAL path are dropped first (they are on no
trace).  :func:`counterexample` returns a shortest violating path for one invariant.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .invariants import AFBY, AP, NFBY
from .log import INITIAL

_KIND_CODE = {AFBY: 0, NFBY: 1, AP: 2}


@dataclass(frozen=True)
class InvariantCodes:
    """Invariants as integer arrays: ``kind`` (0 AFby, 1 NFby, 2 AP), ``a``/``b`` type
    codes (``a == -1`` for INITIAL)."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, type_code: dict[str, int]) -> "InvariantCodes":
        """Code a frame of :func:`~.invariants.mine`; unknown type names get fresh codes
        appended to ``type_code`` (they label no node)."""
        def code(name: str) -> int:
            if name == INITIAL:
                return -1
            return type_code.setdefault(name, len(type_code))
        return cls(frame["kind"].map(_KIND_CODE).to_numpy(dtype=np.int64),
                   np.array([code(x) for x in frame["first"]], dtype=np.int64),
                   np.array([code(x) for x in frame["second"]], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.kind)


def _trim(adj: np.ndarray, init: int, term: int) -> np.ndarray:
    """Nodes on some init -> term path (bool mask)."""
    n = len(adj)
    fwd = np.zeros(n, dtype=bool)
    fwd[init] = True
    bwd = np.zeros(n, dtype=bool)
    bwd[term] = True
    a = adj.astype(np.float32)
    while True:
        nf = fwd | ((fwd.astype(np.float32) @ a) > 0)
        nb = bwd | ((a @ bwd.astype(np.float32)) > 0)
        if (nf == fwd).all() and (nb == bwd).all():
            return fwd & bwd
        fwd, nb_ = nf, nb
        bwd = nb_


def _fix(step: np.ndarray, start: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Least X with X >= start and X >= (step @ X) & allowed (float32 0/1 matrices)."""
    x = start.copy()
    while True:
        nxt = np.maximum(start, ((step @ x) > 0) * allowed)
        if np.array_equal(nxt, x):
            return x
        x = nxt


def violated(adj: np.ndarray, node_type: np.ndarray, inv: InvariantCodes,
             n_types: int, init: int = 0, term: int = 1) -> np.ndarray:
    """Bool per invariant: does it fail on the model (``adj[u, v]``: edge u->v;
    ``node_type``: type code per node, -1 for INITIAL/TERMINAL)?"""
    keep = _trim(adj, init, term)
    a = (adj & keep[:, None] & keep[None, :]).astype(np.float32)
    n_codes = max(n_types, int(max(inv.a.max(initial=-1), inv.b.max(initial=-1))) + 1)
    lab = np.zeros((len(adj), n_codes), dtype=np.float32)
    real = (node_type >= 0) & keep
    lab[np.nonzero(real)[0], node_type[real]] = 1.0
    out = np.zeros(len(inv), dtype=bool)
    not_lab = 1.0 - lab

    # NFby: D[v, a] = v reachable in >= 1 step from an a-node.
    d = _fix(a.T, (a.T @ lab > 0).astype(np.float32), np.ones_like(lab))
    nfby = (lab.T @ d).T > 0  # [a, b]
    # AFby: E[v, b] = v is not a b-node and reaches TERMINAL avoiding b-nodes.
    start = np.zeros_like(lab)
    start[term] = 1.0
    e = _fix(a, start, not_lab)
    succ_e = (a @ e) > 0  # [u, b]: some successor of u starts a b-free path to the end
    afby = (lab.T @ succ_e.astype(np.float32)) > 0  # [a, b]
    # AP: G[v, a] = v reachable from INITIAL through nodes that are not a-nodes.
    start = np.zeros_like(lab)
    start[init] = 1.0
    g = _fix(a.T, start, not_lab)
    pred_g = (a.T @ g) > 0  # [v, a]
    ap = ((lab.T @ pred_g.astype(np.float32)) > 0).T  # [a, b]

    k, x, y = inv.kind, inv.a, inv.b
    is_init = x < 0
    sel = (k == 0) & is_init
    out[sel] = succ_e[init, y[sel]]
    sel = (k == 0) & ~is_init
    out[sel] = afby[x[sel], y[sel]]
    sel = k == 1
    out[sel] = nfby[x[sel], y[sel]]
    sel = k == 2
    out[sel] = ap[x[sel], y[sel]]
    return out


def counterexample(adj: np.ndarray, node_type: np.ndarray, kind: int, a: int, b: int,
                   init: int = 0, term: int = 1) -> list[int] | None:
    """A shortest node path from ``init`` that violates the invariant (for AFby and
    ``INITIAL AFby``: ending at ``term``; NFby: at the ``b`` node; AP: at the ``b`` node),
    or None if it holds."""
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
                cur = (v, phase)
                while cur is not None:
                    path.append(cur[0])
                    cur = parent[cur]
                return path[::-1]
            queue.append(state)
    return None


def rejected_traces(adj: np.ndarray, node_labels: list[str], traces: list[list[str]],
                    init: int = 0, term: int = 1) -> list[int]:
    """Indices of the traces the model does not accept (no path INITIAL, nodes labelled
    with the trace's events in order, TERMINAL).  Subset simulation, memoized per
    (node set, label) so long logs cost one dict lookup per event."""
    by_label: list[dict[str, frozenset[int]]] = []
    for row in adj:
        d: dict[str, set[int]] = {}
        for w in np.nonzero(row)[0]:
            d.setdefault(node_labels[w], set()).add(int(w))
        by_label.append({k: frozenset(v) for k, v in d.items()})
    memo: dict[tuple[frozenset[int], str], frozenset[int]] = {}
    start = frozenset([init])
    bad = []
    for k, trace in enumerate(traces):
        cur = start
        for ev in trace:
            key = (cur, ev)
            nxt = memo.get(key)
            if nxt is None:
                nxt = frozenset().union(*(by_label[v].get(ev, ()) for v in cur))
                memo[key] = nxt
            cur = nxt
            if not cur:
                break
        if not cur or not any(adj[v, term] for v in cur):
            bad.append(k)
    return bad


@dataclass
class CheckReport:
    """What :func:`check_model` found: ``rejected`` (indices of traces the model does not
    accept) and ``violated`` (the invariants that fail on the model, a frame)."""

    rejected: list[int]
    violated: pd.DataFrame
    n_traces: int
    n_invariants: int

    @property
    def ok(self) -> bool:
        """True when every trace is accepted and every invariant holds."""
        return not self.rejected and self.violated.empty


def check_model(graph, log, invariants: pd.DataFrame) -> CheckReport:
    """Check a model (a DiGraph whose nodes carry ``label`` and ``state``, None for the
    synthetic INITIAL/TERMINAL, as :meth:`~.model.PartitionModel.to_networkx` and
    :func:`~.formats.read_dot` give) against the traces of ``log`` (an
    :class:`~.log.EventLog`) and ``invariants`` (a frame of :func:`~.invariants.mine`)."""
    from ...errors import InputError

    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    labels = [graph.nodes[n].get("label", "") for n in nodes]
    states = [graph.nodes[n].get("state") for n in nodes]
    synthetic = {lab: i for i, (lab, st) in enumerate(zip(labels, states)) if st is None}
    if "INITIAL" not in synthetic or "TERMINAL" not in synthetic:
        raise InputError(None, None, "the model has no INITIAL or no TERMINAL node")
    init, term = synthetic["INITIAL"], synthetic["TERMINAL"]
    adj = np.zeros((len(nodes), len(nodes)), dtype=bool)
    for u, v in graph.edges:
        adj[index[u], index[v]] = True
    type_code = {t: i for i, t in enumerate(log.types)}
    codes = InvariantCodes.from_frame(invariants, type_code)
    node_type = np.array([-1 if st is None else type_code.setdefault(st, len(type_code))
                          for st in states], dtype=np.int64)
    bad = violated(adj, node_type, codes, len(type_code), init, term)
    node_labels = [lab if st is not None else f"\0{lab}" for lab, st in zip(labels, states)]
    rejected = rejected_traces(adj, node_labels, [log.trace(k) for k in range(log.n_traces)],
                               init, term)
    return CheckReport(rejected, invariants[bad].reset_index(drop=True), log.n_traces,
                       len(invariants))
