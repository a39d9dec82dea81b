"""A lower bound on a Perfume model's nodes from *boxes*: every walk-value system of
:mod:`.jointbound` at once, per type anchored on a clique (issue 31, helper "perfumemin").

Take any valid model.  Each node ``v`` has, per system ``s`` of
:func:`~.jointbound.systems` (per source type: longest walks ``H``, first-only walks
``Q``, shortest walks ``G``), a value ``val_s(v)``, and every event ``e`` of the node
sees it: ``val_s(node(e))`` lies in an interval ``[lo_s(e), hi_s(e)]`` (the domain
``[0, top]``, the caps ``U`` or floors ``L`` at bounded events, 0 at the zero events) and
the trace steps are difference constraints (``H(e') >= H(e) + d``, ``G(e') <= G(e) +
d``), which carry each interval along the trace (forward and backward).  Where a system
does not constrain an event its interval is the whole line.  So each event has a *box*
(one interval per system) and the events of one node share a point of every box.

Per type ``t`` allowed at most ``m`` nodes (a *budget*):

* two events whose boxes are disjoint (in some system) or that conflict
  (:func:`~.jointbound.conflict_pairs`: time and cycle conflicts) never share a node; a
  clique of more than ``m`` such events refutes the budget;
* *anchoring*: a clique ``C`` of exactly ``m`` puts one member in each node, so every
  other event joins the node of a member it is compatible with (no conflict with the
  events already known to be there, a common point with their boxes' intersection, the
  node's *region*).  An event with no such member refutes the budget; one with a single
  candidate is placed there (the region shrinks to the intersection); otherwise its box
  shrinks to the hull of its intersections with the candidates' regions;
* per system alone, the levels' exchange argument (:mod:`.levelbound`): if the type's
  constrained intervals need ``m`` points, the ``i``-th point lies between the ``i``-th
  of the two greedy stabbings, which shrinks every interval.

These steps and the trace propagation repeat until nothing changes (or ``ROUNDS``); an
empty box refutes the budget.  :func:`box_bound` first raises each type's bound alone
(the other types not limited), then refutes every budget vector with ``j`` nodes more
than the per-type bounds for ``j = 0, 1, ...`` (a vector below a refuted one is
refuted too: budgets are "at most"), and adds the first ``j`` it cannot refute.  Every
step is a deduction over constraints that every valid model meets, so the bound is
sound; it needs no solver (numpy), but its cost grows with the types' sizes (quadratic
per type and round), so it is not part of the default bound
(:func:`~.timeconflicts.perfume_lower_bound`); :func:`box_lower_bound` is the larger of
the two.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .graphbounds import largest_clique
from .jointbound import System, conflict_pairs, systems
from .levelbound import _stabbing
from .log import EventLog
from .timecheck import TimedCodes
from .timeconflicts import perfume_lower_bound, perfume_type_bounds

#: Propagation rounds per budget vector at most.
ROUNDS = 30
#: Budget vectors checked at most (each a propagation to its fix-point).
CHECKS = 3000
#: Nodes added to the per-type bounds' sum at most.
MAX_EXTRA = 12
#: Intervals split by shaving (:func:`refuted`) per budget vector of :func:`box_bound`
#: that propagation alone does not refute: off by default (601 connection events: 90
#: nodes in ~20 CPU s without, 91 in ~255 with 100).
PROBES = 0
#: Branches of one clique search at most (the best clique found so far is used).
CLIQUE_STEPS = 20_000


@dataclass(frozen=True)
class BoxBound:
    """:func:`box_bound`'s answer: ``bound`` (every valid model's nodes, INITIAL and
    TERMINAL included), ``per_type`` (per type code, a bound on its nodes: the starting
    bounds raised type by type), ``extra`` (nodes refuted above ``per_type``'s sum:
    ``bound = sum(per_type) + extra + 2``), ``complete`` (False when ``CHECKS`` or
    ``MAX_EXTRA`` stopped the search: the bound holds, a larger budget may raise it) and
    ``checks`` (budget vectors propagated)."""

    bound: int
    per_type: np.ndarray
    extra: int
    complete: bool
    checks: int


@dataclass
class _State:
    """What every budget check shares: the log's step delays ``d`` (ticks, float), the
    systems, the initial boxes ``lo``/``hi`` (systems x events), per type its events and
    its conflict matrix."""

    log: EventLog
    syst: list[System]
    d: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    events: dict[int, np.ndarray]
    confs: dict[int, np.ndarray]


def initial_boxes(log: EventLog, syst: list[System]) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, systems x events: the domain ``[0, top]`` where a system constrains
    the event (``used``), its cap (upper kinds) or floor (lower) at bounded events, 0 at
    its zero events; ``-inf``/``+inf`` elsewhere (the trace steps not yet applied)."""
    n = log.n_events
    lo = np.full((len(syst), n), -np.inf)
    hi = np.full((len(syst), n), np.inf)
    for k, s in enumerate(syst):
        lo[k, s.used] = 0.0
        hi[k, s.used] = float(s.top)
        at = s.limit >= 0
        if s.kind == "lower":
            lo[k, at] = np.maximum(lo[k, at], s.limit[at])
        else:
            hi[k, at] = np.minimum(hi[k, at], s.limit[at])
        hi[k, s.zero] = np.minimum(hi[k, s.zero], 0.0)
        lo[k, s.zero] = np.maximum(lo[k, s.zero], 0.0)
    return lo, hi


def propagate_steps(syst: list[System], d: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    """The trace steps' difference constraints applied in place to their fix-point
    (chains: one pass forward, one backward): upper kinds ``v(e+1) >= v(e) + d(e)``
    (``lo`` forward, ``hi`` backward), lower ``v(e+1) <= v(e) + d(e)`` (``hi`` forward,
    ``lo`` backward), on the steps each system constrains."""
    for k, s in enumerate(syst):
        steps = np.nonzero(s.step)[0].tolist()
        fwd, back = (lo[k], hi[k]) if s.kind != "lower" else (hi[k], lo[k])
        up = s.kind != "lower"
        for e in steps:
            v = fwd[e] + d[e]
            if (v > fwd[e + 1]) if up else (v < fwd[e + 1]):
                fwd[e + 1] = v
        for e in reversed(steps):
            v = back[e + 1] - d[e]
            if (v < back[e]) if up else (v > back[e]):
                back[e] = v


def disjoint(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Events x events (the columns of ``lo``/``hi``): True where the two boxes are
    disjoint in some system."""
    out = ((lo[:, :, None] > hi[:, None, :]) | (lo[:, None, :] > hi[:, :, None])).any(axis=0)
    return np.asarray(out, dtype=bool)


def anchor(lo: np.ndarray, hi: np.ndarray, conf: np.ndarray, m: int) -> bool | None:
    """One type with at most ``m`` nodes (its events' boxes: the columns of ``lo``,
    ``hi``, narrowed in place; ``conf``: their conflict matrix): True when refuted, None
    when no clique of ``m`` was found (nothing learnt), else False (module doc)."""
    adj = disjoint(lo, hi) | conf
    np.fill_diagonal(adj, False)
    members = largest_clique(adj, CLIQUE_STEPS)[0]
    if len(members) > m:
        return True
    if len(members) < m:
        return None
    n = lo.shape[1]
    rlo, rhi = lo[:, members].copy(), hi[:, members].copy()  # systems x anchors
    home = np.full(n, -1)
    home[members] = np.arange(m)
    compat = ~conf[:, members]  # events x anchors: no conflict with the node's events
    changed = True
    while changed:
        changed = False
        for j in np.nonzero(home < 0)[0].tolist():
            cl = np.maximum(lo[:, j, None], rlo)
            ch = np.minimum(hi[:, j, None], rhi)
            ok = compat[j] & (cl <= ch).all(axis=0)
            cand = np.nonzero(ok)[0]
            if not len(cand):
                return True
            if len(cand) == 1:
                i = int(cand[0])
                rlo[:, i], rhi[:, i] = cl[:, i], ch[:, i]
                home[j] = i
                compat[:, i] &= ~conf[:, j]
                changed = True
                continue
            nl = cl[:, cand].min(axis=1)
            nh = ch[:, cand].max(axis=1)
            if (nl > lo[:, j]).any() or (nh < hi[:, j]).any():
                lo[:, j], hi[:, j] = nl, nh
    placed = home >= 0
    lo[:, placed] = rlo[:, home[placed]]
    hi[:, placed] = rhi[:, home[placed]]
    return False


def stab_each(lo: np.ndarray, hi: np.ndarray, m: int) -> bool:
    """The levels' exchange argument (:mod:`.levelbound`) in each system alone, on the
    events it constrains (finite intervals), narrowing in place: True when some system
    needs more than ``m`` points."""
    for k in range(lo.shape[0]):
        fin = np.nonzero(np.isfinite(lo[k]) & np.isfinite(hi[k]))[0]
        if not len(fin):
            continue
        lk, hk = lo[k, fin], hi[k, fin]
        early, late = _stabbing(lk, hk)
        if len(early) > m:
            return True
        if len(early) < m:
            continue
        k0 = np.searchsorted(late, lk, side="left")
        k1 = np.searchsorted(early, hk, side="right") - 1
        lo[k, fin] = np.maximum(lk, early[np.minimum(k0, m - 1)])
        hi[k, fin] = np.minimum(hk, late[np.maximum(k1, 0)])
    return False


def fix_point(
    st: _State, budget: dict[int, int], lo: np.ndarray, hi: np.ndarray, rounds: int = ROUNDS
) -> tuple[np.ndarray, np.ndarray] | None:
    """The boxes ``lo``, ``hi`` (not changed) narrowed by the steps of the module doc
    under ``budget`` (types missing are not limited), repeated to their fix-point or
    ``rounds``; None when they refute it (no valid model has at most ``budget[t]`` nodes
    of each type ``t``)."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(rounds):
        old_lo, old_hi = lo.copy(), hi.copy()
        propagate_steps(st.syst, st.d, lo, hi)
        if (lo > hi).any():
            return None
        for t, m in budget.items():
            ev = st.events[t]
            blo, bhi = lo[:, ev], hi[:, ev]
            if stab_each(blo, bhi, m) or anchor(blo, bhi, st.confs[t], m):
                return None
            lo[:, ev], hi[:, ev] = blo, bhi
        if (lo > hi).any():
            return None
        if np.array_equal(lo, old_lo) and np.array_equal(hi, old_hi):
            break
    return lo, hi


def refuted(st: _State, budget: dict[int, int], rounds: int = ROUNDS, probes: int = 0) -> bool:
    """True when no valid model has at most ``budget[t]`` nodes of each type ``t`` in
    ``budget``: :func:`fix_point` refutes it, or *shaving* does: at the fix-point, up to
    ``probes`` (system, event) intervals (a seeded order, the same for every call) are
    split at their middle (node values are whole ticks: sums of delays, bounds, 0) and
    each half propagated to its fix-point; both refuted refutes the budget, one refuted
    leaves the other half (a case split: every valid model's value lies in one half).
    False otherwise (also when ``rounds`` pass without a refutation)."""
    got = fix_point(st, budget, st.lo, st.hi, rounds)
    if got is None:
        return True
    lo, hi = got
    if probes <= 0:
        return False
    k, e = np.nonzero(np.isfinite(lo) & np.isfinite(hi) & (hi > lo))
    order = np.random.default_rng(0).permutation(len(k))[:probes]
    for i in order.tolist():
        kk, ee = int(k[i]), int(e[i])
        if not lo[kk, ee] < hi[kk, ee]:
            continue
        mid = np.floor((lo[kk, ee] + hi[kk, ee]) / 2)
        low_hi, high_lo = hi.copy(), lo.copy()
        low_hi[kk, ee] = mid
        high_lo[kk, ee] = mid + 1
        below = fix_point(st, budget, lo, low_hi, rounds)
        above = fix_point(st, budget, high_lo, hi, rounds)
        if below is None and above is None:
            return True
        if below is None or above is None:
            lo, hi = above if below is None else below  # type: ignore[misc]
    return False


def _state(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, iticks: np.ndarray, bounds: np.ndarray
) -> _State:
    syst = systems(log, codes, bounds)
    d = np.zeros(log.n_events)
    d[:-1] = (iticks[1:] - iticks[:-1]).astype(np.float64)
    lo, hi = initial_boxes(log, syst)
    pairs = conflict_pairs(log, codes, ticks)
    events: dict[int, np.ndarray] = {}
    confs: dict[int, np.ndarray] = {}
    for t in np.unique(log.codes).tolist():
        ev = np.nonzero(log.codes == t)[0]
        pos = np.full(log.n_events, -1)
        pos[ev] = np.arange(len(ev))
        c = np.zeros((len(ev), len(ev)), dtype=bool)
        p = pairs[t]
        if len(p):
            c[pos[p[:, 0]], pos[p[:, 1]]] = True
            c |= c.T
        events[t], confs[t] = ev, c
    return _State(log, syst, d, lo, hi, events, confs)


def box_bound(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    per_type: np.ndarray | None = None,
    checks: int = CHECKS,
    max_extra: int = MAX_EXTRA,
    probes: int = PROBES,
) -> BoxBound:
    """A lower bound on the nodes of every valid model of ``log`` (module doc), from
    per-type bounds ``per_type`` (valid for every model; default
    :func:`~.perfume_cpsat.type_lows`): each type's bound raised alone while
    :func:`refuted`, then the first number of extra nodes for which some budget vector
    is not refuted (at most ``checks`` vectors, ``max_extra`` extra nodes; a vector that
    propagation does not refute is shaved with ``probes`` splits, :func:`refuted`).
    Times or bounds that are not integers of at most 2**50 ticks: ``per_type``'s sum
    plus two."""
    from .perfume_cpsat import int_ticks, type_lows

    lows = type_lows(log, codes, ticks) if per_type is None else per_type
    lows = np.asarray(lows, dtype=np.int64).copy()
    present = log.type_counts > 0
    lows = np.where(present, np.maximum(lows, 1), lows)  # a type with events has a node
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str) or log.n_events == 0:
        return BoxBound(int(lows.sum()) + 2, lows, 0, False, 0)
    st = _state(log, codes, ticks, *fit)
    types = [t for t in st.events if lows[t] > 0]
    used = 0
    for t in types:  # alone: the other types' nodes are not limited
        while used < checks and refuted(st, {t: int(lows[t])}):
            used += 1
            lows[t] += 1
        used += 1
    dead: list[dict[int, int]] = []

    def check(budget: dict[int, int]) -> bool:
        nonlocal used
        if any(all(budget[t] <= r[t] for t in types) for r in dead):
            return True
        used += 1
        if refuted(st, budget, probes=probes):
            dead.append(budget)
            return True
        return False

    base = int(lows.sum()) + 2
    for extra in range(max_extra + 1):
        # first the covers: a vector of ``extra`` more nodes, ``x`` of them on its
        # largest part ``t``, lies below (t: x, every other: extra - x)
        for t in types:
            for x in range(extra, -(-extra // max(len(types), 1)) - 1, -1):
                if used >= checks:
                    break
                cover = {o: int(lows[o]) + extra - x for o in types}
                cover[t] = int(lows[t]) + x
                check(cover)
        for combo in itertools.combinations_with_replacement(types, extra):
            if used >= checks:
                return BoxBound(base + extra, lows, extra, False, used)
            budget = {t: int(lows[t]) for t in types}
            for t in combo:
                budget[t] += 1
            if not check(budget):
                return BoxBound(base + extra, lows, extra, True, used)
    return BoxBound(base + max_extra, lows, max_extra, False, used)


def box_lower_bound(log: EventLog, codes: TimedCodes, ticks: np.ndarray) -> int:
    """The larger of :func:`~.timeconflicts.perfume_lower_bound` and :func:`box_bound`,
    both from the same per-type bounds (:func:`~.timeconflicts.perfume_type_bounds`): a
    lower bound on the nodes of every valid model, INITIAL and TERMINAL included
    (seconds from ~600 events, so not the default)."""
    per_type = perfume_type_bounds(log, codes, ticks)
    return max(
        perfume_lower_bound(log, codes, ticks, per_type),
        box_bound(log, codes, ticks, per_type).bound,
    )
