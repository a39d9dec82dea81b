"""A lower bound on a Perfume model's nodes that sees walks over several nodes: the
*levels* of a log whose every trace starts with one event of a type ``a`` found nowhere
else (``Init`` in the connection logs), timed by upper bounds ``a AlwaysPrecedes(t) b``.

Take any valid model and, per node ``v``, ``H(v)``: the longest time of a walk from an
``a`` node to ``v``, each edge counting its largest delta (the walks Perfume times for
those bounds: an ``a`` node has only INITIAL before it, so no walk meets a second
``a``).  Then for every event ``e`` after the ``a`` of its trace, ``pi(e) =
H(node(e))`` satisfies

* ``pi(e') >= pi(e) + d`` for the next event ``e'`` of the trace, ``d`` their delay
  (``pi(e') = 0 + d`` at least after the ``a`` event);
* ``pi(e) <= U_b`` when ``e`` has type ``b`` and ``U_b`` is the bound's value;
* events of one node have one ``pi``: a type has at least as many nodes as distinct
  ``pi`` values among its events.

So ``pi(e)`` lies in ``[lo(e), hi(e)]`` (``lo``: the time since the trace's ``a``; ``hi``:
the least ``U_f - (t(f) - t(e))`` over the trace's events ``f`` from ``e`` on), and the
``pi`` values of a type *stab* its events' intervals.  If a type may have only ``m``
nodes and ``m`` is also the most pairwise disjoint intervals it has, its points lie
between those of the earliest and the latest greedy stabbing (sorted: the ``i``-th
point of every ``m``-point stabbing is at least the ``i``-th of the greedy that places
points at the largest ``lo`` first, at most the ``i``-th of the greedy that places them
at the smallest ``hi`` first), which raises ``lo(e)`` to the earliest point that can be
its own and lowers ``hi(e)`` likewise; the delays carry the change along the trace.
Repeated, an interval may empty or a type may need more than ``m`` points: then no model
has those node counts.  :func:`level_bound` tries node counts from the per-type bounds
up (every way of adding one, then two nodes) and returns the first total it cannot
refute.  The argument ignores every other invariant, so it is a relaxation: sound, and
weaker than the exact minimum.
"""

from __future__ import annotations

import itertools

import numpy as np

from .log import EventLog
from .timecheck import TimedCodes

#: Propagation rounds per budget and budgets tried (deterministic caps).
ROUNDS = 40
BUDGETS = 300


def source_type(log: EventLog) -> int | None:
    """The type code that is every trace's first event and occurs nowhere else, if any."""
    if log.n_events == 0:
        return None
    first = log.codes[log.starts[:-1]]
    c = int(first[0])
    if (first != c).any() or int((log.codes == c).sum()) != log.n_traces:
        return None
    return c


def level_intervals(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, a: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` per event (module doc; the ``a`` events get ``[0, 0]``; ``hi`` is
    +inf where no bound caps it), in ticks."""
    cap = np.full(len(log.types), np.inf)
    for k in np.nonzero(
        (codes.bound_a == a) & codes.bound_upper & codes.bound_first_only & (codes.bound_b != a)
    )[0]:
        b = int(codes.bound_b[k])
        cap[b] = min(cap[b], float(codes.bound_value[k]))
    t = ticks.astype(np.float64)
    start = log.starts[:-1][log.trace_of]
    lo = t - t[start]
    hi = np.empty(log.n_events)
    u = cap[log.codes] - t  # hi(e) = t(e) + min over f >= e in the trace of U_f - t(f)
    for i in range(log.n_traces):
        s, e = int(log.starts[i]), int(log.starts[i + 1])
        hi[s:e] = t[s:e] + np.minimum.accumulate(u[s:e][::-1])[::-1]
    hi[log.codes == a] = 0.0
    return lo, hi


def _stabbing(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(early, late)``: the points, ascending, of the greedy stabbings of the intervals
    that place each point at the largest ``lo`` / smallest ``hi`` not yet stabbed; both
    have the fewest points possible (module doc)."""
    late: list[float] = []
    point = -np.inf
    for i in np.argsort(hi, kind="stable").tolist():
        if lo[i] > point:
            point = float(hi[i])
            late.append(point)
    early: list[float] = []
    point = np.inf
    for i in np.argsort(-lo, kind="stable").tolist():
        if hi[i] < point:
            point = float(lo[i])
            early.append(point)
    return np.asarray(early[::-1]), np.asarray(late)


def _padded(log: EventLog) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """Each event's (trace, position in trace) and the shape of a traces x positions
    table."""
    col = np.arange(log.n_events) - log.starts[:-1][log.trace_of]
    width = int(col.max()) + 1 if log.n_events else 0
    return log.trace_of, col, (log.n_traces, width)


def refuted(
    log: EventLog,
    ticks: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    budget: dict[int, int],
    rounds: int = ROUNDS,
) -> bool:
    """True when no levels fit: no model has at most ``budget[T]`` nodes of each type
    ``T`` (module doc); ``lo``, ``hi`` from :func:`level_intervals`.  Types missing from
    ``budget`` are not limited.  False also when ``rounds`` pass without a refutation."""
    lo, hi = lo.copy(), hi.copy()
    row, col, shape = _padded(log)
    t = ticks.astype(np.float64)
    since = t - t[log.starts[:-1][log.trace_of]]  # pi(f) - pi(e) >= since(f) - since(e)
    events = {typ: np.nonzero(log.codes == typ)[0] for typ in budget}
    for _ in range(rounds):
        old_lo, old_hi = lo.copy(), hi.copy()
        for typ, m in budget.items():
            ev = events[typ]
            if (lo[ev] > hi[ev]).any():
                return True
            early, late = _stabbing(lo[ev], hi[ev])
            if len(early) > m:
                return True
            if len(early) < m:
                continue
            # lo up to the earliest point that can be e's; hi down likewise
            k0 = np.searchsorted(late, lo[ev], side="left")
            k1 = np.searchsorted(early, hi[ev], side="right") - 1
            lo[ev] = np.maximum(lo[ev], early[np.minimum(k0, m - 1)])
            hi[ev] = np.minimum(hi[ev], late[np.maximum(k1, 0)])
        # along the traces: lo forward, hi backward
        table = np.full(shape, -np.inf)
        table[row, col] = lo - since
        lo = np.maximum(lo, np.maximum.accumulate(table, axis=1)[row, col] + since)
        table = np.full(shape, np.inf)
        table[row, col] = hi - since
        hi = np.minimum(
            hi, np.minimum.accumulate(table[:, ::-1], axis=1)[:, ::-1][row, col] + since
        )
        if (lo > hi).any():
            return True
        if np.array_equal(lo, old_lo) and np.array_equal(hi, old_hi):
            return False
    return False


#: Nodes added to the total at most (each step tries every way to add them).
MAX_EXTRA = 8


def level_bound(log: EventLog, codes: TimedCodes, ticks: np.ndarray, per_type: np.ndarray) -> int:
    """Nodes to add to ``sum(per_type)`` (per-type lower bounds already known): the
    fewest ``j`` such that some way of adding ``j`` nodes to the types' counts is not
    :func:`refuted` (0 when the log has no source type; at most ``MAX_EXTRA``; stops at
    the last ``j`` fully refuted when ``BUDGETS`` counts have been tried)."""
    a = source_type(log)
    if a is None:
        return 0
    lo, hi = level_intervals(log, codes, ticks, a)
    types = [
        t
        for t in range(len(log.types))
        if t != a and (log.codes == t).any() and np.isfinite(hi[log.codes == t]).all()
    ]
    if not types:
        return 0
    tried = 0
    for extra in range(MAX_EXTRA):
        for combo in itertools.combinations_with_replacement(types, extra):
            tried += 1
            if tried > BUDGETS:
                return extra
            budget = {t: int(per_type[t]) for t in types}
            for t in combo:
                budget[t] += 1
            if not refuted(log, ticks, lo, hi, budget):
                return extra
    return MAX_EXTRA
