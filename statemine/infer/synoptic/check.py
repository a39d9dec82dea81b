"""Model checking: does a model accept every trace, and does every invariant hold on it?

An invariant holds on a model when it holds on every path from INITIAL to TERMINAL (the
finite-trace semantics of Synoptic's model checker, FSE 2011 section 4).  All invariants
are checked at once by propagating per-node bitsets of types along the edge list to a
fix-point (a few vectorized passes per check), which keeps refinement and coarsening fast:

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
from typing import TYPE_CHECKING, overload

import numpy as np

from ._walks import bits_gather, bits_grow
from .invariants import AFBY, AP, NFBY, Invariants
from .log import INITIAL

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

    from .log import EventLog

_KIND_CODE = {AFBY: 0, NFBY: 1, AP: 2}


@dataclass(frozen=True)
class InvariantCodes:
    """Invariants as integer arrays: ``kind`` (0 AFby, 1 NFby, 2 AP), ``a``/``b`` type
    codes (``a == -1`` for INITIAL)."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def from_frame(
        cls, frame: Invariants | pd.DataFrame, type_code: dict[str, int]
    ) -> InvariantCodes:
        """Code :class:`~.invariants.Invariants` or a frame of :func:`~.invariants.mine`;
        unknown type names get fresh codes appended to ``type_code`` (they label no node)."""

        def code(name: str) -> int:
            if name == INITIAL:
                return -1
            return type_code.setdefault(name, len(type_code))

        return cls(
            np.array([_KIND_CODE[k] for k in frame["kind"]], dtype=np.int64),
            np.array([code(x) for x in frame["first"]], dtype=np.int64),
            np.array([code(x) for x in frame["second"]], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.kind)

    def select(self, mask: np.ndarray) -> InvariantCodes:
        """The invariants that ``mask`` (bool per invariant) marks."""
        return InvariantCodes(self.kind[mask], self.a[mask], self.b[mask])


def _trim(adj: np.ndarray, init: int, term: int) -> np.ndarray:
    """Nodes on some init -> term path (bool mask)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    graph = csr_matrix(adj)
    keep = np.zeros(len(adj), dtype=bool)
    keep[breadth_first_order(graph, init, return_predecessors=False)] = True
    back = np.zeros(len(adj), dtype=bool)
    back[breadth_first_order(graph.T.tocsr(), term, return_predecessors=False)] = True
    return keep & back


def _or_by_label(values: np.ndarray, node_type: np.ndarray, n_codes: int) -> np.ndarray:
    """out[t] = OR of values[v] over the nodes v of type t."""
    out = np.zeros((n_codes, values.shape[1]), dtype=np.uint64)
    real = node_type >= 0
    np.bitwise_or.at(out, node_type[real], values[real])
    return out


def _has_bit(
    words: np.ndarray, rows: np.ndarray, blocks: np.ndarray, width: int, bits: np.ndarray
) -> np.ndarray:
    """Does bitset ``blocks[i]`` of row ``rows[i]`` have bit ``bits[i]`` set?  Each row of
    ``words`` holds bitsets of ``width`` uint64 words side by side; a negative bit counts
    from the end of its bitset, as a negative index does (bit -1: the last word's bit 63)."""
    w = words[rows, blocks * width + (bits // 64) % width]
    return ((w >> (bits % 64).astype(np.uint64)) & np.uint64(1)).astype(bool)


def violated(
    adj: np.ndarray,
    node_type: np.ndarray,
    inv: InvariantCodes,
    n_types: int,
    init: int = 0,
    term: int = 1,
    trim: bool = True,
) -> np.ndarray:
    """Bool per invariant: does it fail on the model (``adj[u, v]``: edge u->v;
    ``node_type``: type code per node, negative for INITIAL/TERMINAL and unused nodes)?
    ``trim=False`` skips dropping nodes that are on no INITIAL -> TERMINAL path (safe when
    every node is, as in models built from traces)."""
    node_type = np.asarray(node_type)
    if trim:
        keep = _trim(adj, init, term)
        adj = adj & keep[:, None] & keep[None, :]
        node_type = np.where(keep, node_type, -2)
    src, dst = np.nonzero(adj)
    return violated_edges(len(adj), src, dst, node_type, inv, n_types, init, term)


def _type_bits(
    n: int, node_type: np.ndarray, inv: InvariantCodes, n_types: int
) -> tuple[np.ndarray, int]:
    """Per node, the bitset (uint64 words) of its own event type; row ``n`` is an always
    empty extra row. Returns ``(bits, number of type codes the bitsets cover)``."""
    n_codes = max(n_types, int(max(inv.a.max(initial=-1), inv.b.max(initial=-1))) + 1, 1)
    words = (n_codes + 63) // 64
    lab = np.zeros((n + 1, words), dtype=np.uint64)
    real = np.nonzero(node_type >= 0)[0]
    t = node_type[real]
    lab[real, t // 64] = np.uint64(1) << (t % 64).astype(np.uint64)
    return lab, n_codes


def violated_edges(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    node_type: np.ndarray,
    inv: InvariantCodes,
    n_types: int,
    init: int = 0,
    term: int = 1,
) -> np.ndarray:
    """:func:`violated` on an edge list (``src[i] -> dst[i]``, no duplicates needed) of a
    model whose every node is on an INITIAL -> TERMINAL path.  Per node, sets of types are
    bitsets (uint64 words) propagated along the edges until they stop changing."""
    lab, n_codes = _type_bits(n, node_type, inv, n_types)
    words = lab.shape[1]
    allowed = ~lab
    full = np.broadcast_to(np.full(words, np.iinfo(np.uint64).max, dtype=np.uint64), lab.shape)
    forward = _Gather(src, dst, n)  # over predecessors
    backward = _Gather(dst, src, n)  # over successors

    # NFby: D[v] = types a with v reachable in >= 1 step from an a-node; AP: G[v] = types a
    # such that v is reachable from INITIAL through no a-node (one propagation).
    start = np.zeros((n + 1, 2 * words), dtype=np.uint64)
    start[:, :words] = forward(lab)
    start[init, words:] = full[0]
    fix = _grow(forward, start, start, np.concatenate([full, allowed], axis=1))
    # AFby: E[v] = types b such that v is no b-node and reaches TERMINAL avoiding b-nodes.
    start = np.zeros_like(lab)
    start[term] = full[0]
    succ_e = backward(_grow(backward, start, start, allowed))  # [u] -> set of b
    # per type t, three bitsets side by side: NFby's a at the b-nodes (b = t), AP's a at
    # the b-nodes (over predecessors), AFby's b after the a-nodes (a = t); then a row
    # n_codes with INITIAL's AFby set
    node_type = np.append(node_type, -2)
    per_node = np.concatenate([fix[:, :words], forward(fix[:, words:]), succ_e], axis=1)
    tables = np.vstack(
        [
            _or_by_label(per_node, node_type, n_codes),
            np.concatenate([np.zeros(2 * words, dtype=np.uint64), succ_e[init]]),
        ]
    )
    k, x, y = inv.kind, inv.a, inv.b
    afby = k == 0
    rows = np.where(afby, np.where(x < 0, n_codes, x), y % n_codes)
    return _has_bit(tables, rows, np.where(afby, 2, k - 1), words, np.where(afby, y, x))


class MergeCheck:
    """Coarsening's merge trials on a model with nodes ``0..n-1`` of types ``node_type``
    and edges ``src[i] -> dst[i]``: does every invariant still hold once node ``gone`` is
    merged into node ``keep``?  The answer is ``not violated_edges(...).any()`` on the
    merged model (a merged-away node keeps its id, without edges: it is inert), but:

    * the bitsets of forbidden types are made once, and NFby's and AP's forward
      propagations run as one;
    * each propagation starts from the fix-point of the current model (merging only adds
      paths, so that is below the merged model's least fix-point, and iterating from it
      reaches the same fix-point in a few steps);
    * it stops at the first violation (the sets only grow while they propagate, so a
      violation seen early is one of the fix-point).  A node's own type is never
      forbidden to it (``a AP a`` and ``a AFby a`` fail on every trace with an ``a``, so
      they are never mined), so a violation shows in ``start | gather(X) & allowed``.
    """

    def __init__(
        self,
        node_type: np.ndarray,
        inv: InvariantCodes,
        n_types: int,
        src: np.ndarray,
        dst: np.ndarray,
        init: int = 0,
        term: int = 1,
    ):
        n = len(node_type)
        lab, n_codes = _type_bits(n, node_type, inv, n_types)
        words = lab.shape[1]
        real = np.nonzero(node_type >= 0)[0]
        t = node_type[real]
        full = np.full(words, np.iinfo(np.uint64).max, dtype=np.uint64)

        def forbid(at_type: np.ndarray, bit: np.ndarray) -> np.ndarray:
            """Per real node of type at_type[i]: bit[i] (a violation when present)."""
            by_type = np.zeros((n_codes, words), dtype=np.uint64)
            np.bitwise_or.at(
                by_type, (at_type, bit // 64), np.uint64(1) << (bit % 64).astype(np.uint64)
            )
            out = np.zeros_like(lab)
            out[real] = by_type[t]
            return out

        k, a, b = inv.kind, inv.a, inv.b
        # forward: [D | X]; D = types reaching a node in >= 1 step (NFby: a at b-nodes),
        # X = types a such that INITIAL reaches the node avoiding a-nodes (AP: a at the
        # b-nodes of gather(X))
        self.lab = lab
        self.reach = np.zeros_like(lab)
        self.reach[init] = full
        self.fwd_allowed = np.concatenate([np.broadcast_to(full, lab.shape), ~lab], axis=1)
        self.fwd_forbidden = np.concatenate(
            [forbid(b[k == 1], a[k == 1]), forbid(b[k == 2], a[k == 2])], axis=1
        )
        # backward: E = types b such that the node reaches TERMINAL avoiding b-nodes
        # (AFby: b at the a-nodes of gather(E); INITIAL AFby b: b at INITIAL)
        self.bwd_allowed = ~lab
        self.bwd_start = np.zeros_like(lab)
        self.bwd_start[term] = full
        sel = (k == 0) & (a >= 0)
        self.bwd_forbidden = forbid(a[sel], b[sel])
        init_b = b[(k == 0) & (a < 0)]
        np.bitwise_or.at(
            self.bwd_forbidden[init], init_b // 64, np.uint64(1) << (init_b % 64).astype(np.uint64)
        )
        self.n = n
        self.src, self.dst = np.asarray(src), np.asarray(dst)
        #: fix-points of the current model (None: an invariant fails on it already)
        self.fix = self._fix_points(self.src, self.dst, None)

    def merge(self, keep: int, gone: int) -> bool:
        """Does every invariant hold on the current model with ``gone`` merged into
        ``keep``?  If so, that is the current model from now on."""
        if self.fix is None:
            return False  # merging only adds paths: a violation stays
        src = np.where(self.src == gone, keep, self.src)
        dst = np.where(self.dst == gone, keep, self.dst)
        warm = []
        for x in self.fix:
            x = x.copy()
            x[keep] |= x[gone]
            x[gone] = 0
            warm.append(x)
        fix = self._fix_points(src, dst, warm)
        if fix is None:
            return False
        self.src, self.dst, self.fix = src, dst, fix
        return True

    def _fix_points(
        self, src: np.ndarray, dst: np.ndarray, warm: list[np.ndarray] | None
    ) -> list[np.ndarray] | None:
        """The forward and backward fix-points of the model with these edges, None as
        soon as an invariant fails on it (``warm``: fix-points below them to start from)."""
        forward = _Gather(src, dst, self.n)
        start = np.concatenate([forward(self.lab), self.reach], axis=1)
        fwd = _grow(
            forward,
            start,
            start if warm is None else warm[0] | start,
            self.fwd_allowed,
            self.fwd_forbidden,
        )
        if fwd is None:
            return None
        start = self.bwd_start
        bwd = _grow(
            _Gather(dst, src, self.n),
            start,
            start if warm is None else warm[1] | start,
            self.bwd_allowed,
            self.bwd_forbidden,
        )
        return None if bwd is None else [fwd, bwd]


class _Gather:
    """out[v] = OR of x[u] over edges u -> v, for bitset rows (uint64 words) over nodes
    0..n, row n never an edge's end (in C: :func:`~._walks.bits_gather`)."""

    def __init__(self, frm: np.ndarray, to: np.ndarray, n: int):
        self.frm = np.ascontiguousarray(frm, dtype=np.int64)
        self.to = np.ascontiguousarray(to, dtype=np.int64)
        self.rows = n + 1

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.uint64)
        out = np.zeros_like(x)
        bits_gather(self.frm, self.to, x, out, len(self.frm), self.rows, x.shape[1])
        return out


@overload
def _grow(
    gather: _Gather, start: np.ndarray, x: np.ndarray, allowed: np.ndarray, forbidden: None = None
) -> np.ndarray: ...
@overload
def _grow(
    gather: _Gather, start: np.ndarray, x: np.ndarray, allowed: np.ndarray, forbidden: np.ndarray
) -> np.ndarray | None: ...
def _grow(
    gather: _Gather,
    start: np.ndarray,
    x: np.ndarray,
    allowed: np.ndarray,
    forbidden: np.ndarray | None = None,
) -> np.ndarray | None:
    """The least X >= start with X = start | (gather(X) & allowed), iterated from ``x``
    (start <= x <= that fix-point); None as soon as X meets ``forbidden`` (never when it
    is None).  In C (:func:`~._walks.bits_grow`: bits added in place, edge by edge, to
    the same fix-point)."""
    x = np.array(x, dtype=np.uint64, order="C")
    held = bits_grow(
        gather.frm,
        gather.to,
        np.ascontiguousarray(start, dtype=np.uint64),
        x,
        np.ascontiguousarray(allowed, dtype=np.uint64),
        None if forbidden is None else np.ascontiguousarray(forbidden, dtype=np.uint64),
        len(gather.frm),
        gather.rows,
        x.shape[1],
    )
    return x if held else None


def counterexample(
    adj: np.ndarray, node_type: np.ndarray, kind: int, a: int, b: int, init: int = 0, term: int = 1
) -> list[int] | None:
    """A shortest node path from ``init`` that violates the invariant (for AFby and
    ``INITIAL AFby``: ending at ``term``; NFby: at the ``b`` node; AP: at the ``b`` node),
    or None if it holds.  Breadth-first search over (node, automaton phase) with a
    first-in first-out queue, successors in node order; the automaton's moves are
    tabulated per (phase, node) first."""
    n = len(adj)
    src, dst = np.nonzero(adj)
    bounds = np.searchsorted(src, np.arange(n + 1)).tolist()
    targets = dst.tolist()
    succ = [targets[bounds[v] : bounds[v + 1]] for v in range(n)]
    # the moves from phase 0 (row 0) and from phase 1 (row 1), in one evaluation
    phases = np.array([[0], [1]])
    move = _next_phase(kind, a, b, term, phases, np.arange(n), np.asarray(node_type)).tolist()
    start = (init, 1 if (kind == 0 and a < 0) else 0)
    parent: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
    queue = deque([start])
    while queue:
        v, phase = queue.popleft()
        after = move[phase]
        for w in succ[v]:
            nphase = after[w]
            if nphase < 0:
                continue
            state = (w, nphase)
            if state in parent:
                continue
            parent[state] = (v, phase)
            if nphase == _ACCEPT:
                path = [w]
                cur: tuple[int, int] | None = (v, phase)
                while cur is not None:
                    path.append(cur[0])
                    cur = parent[cur]
                return path[::-1]
            queue.append(state)
    return None


#: Automaton phase of a violation (the search's goal); -1: the path cannot violate.
_ACCEPT = 9


def _next_phase(
    kind: int, a: int, b: int, term: int, phase: np.ndarray, node: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """Phase of the violation automaton after entering ``node`` (of type ``t``) from
    ``phase`` (0 watching, 1 armed), per element; ``_ACCEPT`` or -1 (dead)."""
    at_term = node == term
    if kind == 0:  # AFby (a == -1: INITIAL, the search starts armed)
        out = np.where(at_term, np.where(phase == 1, _ACCEPT, -1), phase)
        out = np.where((t == a) & (t >= 0), 1, out)
        return np.where((t == b) & (t >= 0), 0, out)
    if kind == 1:  # NFby
        out = np.where(at_term, -1, phase)
        out = np.where(t == a, 1, out)
        return np.where((phase == 1) & (t == b), _ACCEPT, out)
    out = np.where(at_term, -1, phase)  # AP
    out = np.where(t == b, _ACCEPT, out)
    return np.where(t == a, -1, out)


def rejected_traces(
    src: np.ndarray,
    dst: np.ndarray,
    node_labels: list[str],
    traces: list[list[str]],
    init: int = 0,
    term: int = 1,
) -> list[int]:
    """Indices of the traces the model (edges ``src[i] -> dst[i]``, nodes ``0 ..
    len(node_labels) - 1``) does not accept (no path INITIAL, nodes labelled with the
    trace's events in order, TERMINAL).  Subset simulation, memoized per (node set,
    label) so long logs cost one dict lookup per event; O(nodes + edges) memory."""
    sets: list[dict[str, set[int]]] = [{} for _ in node_labels]
    for u, w in zip(src.tolist(), dst.tolist()):
        sets[u].setdefault(node_labels[w], set()).add(w)
    by_label = [{k: frozenset(v) for k, v in d.items()} for d in sets]
    ends = {u for u, w in zip(src.tolist(), dst.tolist()) if w == term}
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
        if not cur or not any(v in ends for v in cur):
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


def check_model(
    graph: nx.DiGraph, log: EventLog, invariants: Invariants | pd.DataFrame
) -> CheckReport:
    """Check a model (a DiGraph whose nodes carry ``label`` and ``state``, None for the
    synthetic INITIAL/TERMINAL, as :meth:`~.model.PartitionModel.to_networkx` and
    :func:`~.formats.read_dot` give) against the traces of ``log`` (an
    :class:`~.log.EventLog`) and ``invariants`` (a frame of :func:`~.invariants.mine`)."""
    from ...errors import InputError

    if isinstance(invariants, Invariants):
        invariants = invariants.to_frame()
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
    node_type = np.array(
        [-1 if st is None else type_code.setdefault(st, len(type_code)) for st in states],
        dtype=np.int64,
    )
    bad = violated(adj, node_type, codes, len(type_code), init, term)
    node_labels = [lab if st is not None else f"\0{lab}" for lab, st in zip(labels, states)]
    src, dst = np.nonzero(adj)
    rejected = rejected_traces(
        src, dst, node_labels, [log.trace(k) for k in range(log.n_traces)], init, term
    )
    return CheckReport(
        rejected, invariants[bad].reset_index(drop=True), log.n_traces, len(invariants)
    )
