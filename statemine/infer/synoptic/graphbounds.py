"""Lower bounds on the colours of a conflict graph, within a deterministic budget.

The nodes of one type in a model split that type's events into groups with no
conflicting pair, i.e. a proper colouring of the type's conflict graph: every model has
at least the graph's chromatic number of nodes of that type, and so at least the size of
any clique.  Two exact searches, each stopped after a fixed number of steps (so the
answer depends on the graph only, never on the machine's speed or load):

* :func:`max_clique`: branch and bound over vertex bitsets, each branch bounded by a
  greedy colouring of its candidates (Tomita and Seki's MCQ, 2003); out of budget, the
  largest clique found so far (still a clique, so still a lower bound).
* :func:`chromatic_lower_bound`: for ``k`` from the clique size up, is the graph
  ``k``-colourable?  A backtracking search in DSATUR order (Brelaz, 1979; the largest
  number of distinct neighbour colours first) with forward checking, on the graph's
  ``k``-core (a vertex of fewer than ``k`` neighbours always takes a colour left free
  by them, so removing it keeps ``k``-colourability).  Each ``k`` whose search ends
  with no colouring proves chromatic number ``> k``; out of budget, the last proven
  value stands.

Both first merge *false twins* (non-adjacent vertices with the same neighbours): a
clique holds at most one of them and a colouring can give them one colour, so neither
number changes.
"""

from __future__ import annotations

import numpy as np

#: Steps (branches of the clique search, colour trials of the colouring search) per
#: graph: a few CPU seconds at most on graphs of thousands of vertices.
CLIQUE_STEPS = 20_000
COLOUR_STEPS = 50_000


class _OutOfSteps(Exception):
    pass


def twin_quotient(adj: np.ndarray) -> np.ndarray:
    """The graph ``adj`` (symmetric bool, no loops) with its false twins merged: one
    vertex per distinct row (module doc); the same clique and chromatic numbers."""
    if len(adj) < 2:
        return adj
    _, first = np.unique(adj, axis=0, return_index=True)
    keep = np.sort(first)
    return adj[np.ix_(keep, keep)]


def _bits(adj: np.ndarray) -> list[int]:
    """Each vertex's neighbours as an integer bitset (bit ``u`` for vertex ``u``)."""
    packed = np.packbits(adj, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def greedy_members(adj: np.ndarray) -> list[int]:
    """A clique of ``adj`` built greedily, vertices by falling degree (in that order)."""
    clique: list[int] = []
    for v in np.argsort(-adj.sum(axis=1), kind="stable").tolist():
        if all(adj[v, u] for u in clique):
            clique.append(v)
    return clique


def greedy_clique(adj: np.ndarray) -> int:
    """Size of a clique of ``adj`` built greedily, vertices by falling degree."""
    return len(greedy_members(adj))


def largest_clique(adj: np.ndarray, steps: int = CLIQUE_STEPS) -> tuple[list[int], bool]:
    """``(members, proven)``: a largest clique of ``adj`` (symmetric bool, no loops) as
    vertex indices, or when ``steps`` branches did not settle it the largest found, at
    least the greedy one (``proven`` False)."""
    adj = np.asarray(adj, dtype=bool)
    n = len(adj)
    if n == 0:
        return [], True
    # low-degree vertices last in the bitsets: the search takes the highest bit first
    order = np.argsort(adj.sum(axis=1), kind="stable")
    nbrs = _bits(adj[np.ix_(order, order)])
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    best = [int(position[v]) for v in greedy_members(adj)]
    count = 0

    def colour_sort(cand: int) -> list[tuple[int, int]]:
        """Candidates with their colour numbers (a bound on the clique among those up to
        them), by rising colour."""
        out: list[tuple[int, int]] = []
        colour = 0
        while cand:
            colour += 1
            q = cand
            while q:
                v = q.bit_length() - 1
                q &= ~nbrs[v] & ~(1 << v)
                cand &= ~(1 << v)
                out.append((v, colour))
        return out

    def expand(cur: list[int], cand: int) -> None:
        nonlocal best, count
        count += 1
        if count > steps:
            raise _OutOfSteps
        for v, colour in reversed(colour_sort(cand)):
            if len(cur) + colour <= len(best):
                return
            sub = cand & nbrs[v]
            if sub:
                expand([*cur, v], sub)
            elif len(cur) + 1 > len(best):
                best = [*cur, v]
            cand &= ~(1 << v)

    try:
        expand([], (1 << n) - 1)
    except _OutOfSteps:
        return [int(order[v]) for v in best], False
    return [int(order[v]) for v in best], True


def max_clique(
    adj: np.ndarray, steps: int = CLIQUE_STEPS, merged: bool = False
) -> tuple[int, bool]:
    """``(size, proven)``: the size of :func:`largest_clique` of ``adj``.  ``merged``:
    ``adj`` is already its :func:`twin_quotient` (else it is taken first: the same
    clique number, fewer vertices)."""
    adj = np.asarray(adj, dtype=bool)
    members, proven = largest_clique(adj if merged else twin_quotient(adj), steps)
    return len(members), proven


def _core(adj: np.ndarray, k: int) -> np.ndarray:
    """The ``k``-core of ``adj``: vertices of fewer than ``k`` neighbours removed until
    none is left (module doc: the same ``k``-colourability)."""
    alive = np.ones(len(adj), dtype=bool)
    deg = adj.sum(axis=1)
    while True:
        low = alive & (deg < k)
        if not low.any():
            return adj[np.ix_(alive, alive)]
        alive &= ~low
        deg -= adj[:, low].sum(axis=1)


def _colourable(adj: np.ndarray, k: int, budget: list[int]) -> bool:
    """Has ``adj`` a proper colouring with ``k`` colours?  Exhaustive backtracking (DSATUR
    order, a new colour only as the next unused one, forward checking); raises
    :class:`_OutOfSteps` when ``budget[0]`` trials are used up."""
    adj = _core(adj, k)
    n = len(adj)
    if n == 0:
        return True
    seen = np.zeros((n, k), dtype=np.int32)  # coloured neighbours per colour
    colour = np.full(n, -1, dtype=np.int64)
    deg = adj.sum(axis=1)
    stack: list[tuple[int, list[int], int]] = []  # (vertex, colours left, used before)
    used = 0
    while True:
        open_ = colour < 0
        if not open_.any():
            return True
        sat = (seen > 0).sum(axis=1)
        if not (sat[open_] >= k).any():  # else a vertex has no colour left: backtrack
            v = int(np.argmax(np.where(open_, sat * (n + 1) + deg, -1)))
            free = np.nonzero(seen[v, : min(used + 1, k)] == 0)[0].tolist()
            stack.append((v, free[::-1], used))
        # the top vertex takes its next colour, dropping its previous one
        while stack:
            v, left, before = stack[-1]
            if colour[v] >= 0:
                seen[adj[v], colour[v]] -= 1
                colour[v] = -1
                used = before
            if left:
                c = left.pop()
                budget[0] -= 1
                if budget[0] < 0:
                    raise _OutOfSteps
                seen[adj[v], c] += 1
                colour[v] = c
                used = max(before, c + 1)
                break
            stack.pop()
        else:
            return False


def chromatic_lower_bound(
    adj: np.ndarray, clique: int, steps: int = COLOUR_STEPS, merged: bool = False
) -> tuple[int, bool]:
    """``(bound, proven)``: a lower bound on the chromatic number of ``adj``, starting
    from a known ``clique`` size; ``proven`` when it is the chromatic number itself
    (a ``bound``-colouring was found), else ``steps`` trials ran out (module doc).
    ``merged``: ``adj`` is already its :func:`twin_quotient`."""
    adj = np.asarray(adj, dtype=bool)
    adj = adj if merged else twin_quotient(adj)
    bound = max(clique, 1 if len(adj) else 0)
    budget = [steps]
    while bound < len(adj):
        try:
            if _colourable(adj, bound, budget):
                return bound, True
        except _OutOfSteps:
            return bound, False
        bound += 1
    return bound, True
