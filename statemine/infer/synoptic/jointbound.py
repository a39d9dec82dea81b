"""A lower bound on a Perfume model's nodes from walk values shared by each node's events
(issue 31, helper "perfumejoint"): the *joint relaxation*, solved exactly by CP-SAT.

Take any model that accepts the traces and keeps every constrained invariant
(:mod:`.timecheck`).  For a source type ``a`` with time bounds and every node ``v``:

* ``H_a(v)``: the longest walk time (each edge its largest delta) from an ``a`` node to
  ``v`` (every-pair upper bounds: AlwaysFollowedBy, IntrBy);
* ``Q_a(v)``: the same over walks from a *starting* ``a`` node (one reached from INITIAL
  through nodes that are no ``a``) through nodes that are no ``a`` (AlwaysPrecedes upper
  bounds: Perfume times only the path's first ``a``);
* ``G_a(v)``: the shortest walk time (each edge its smallest delta) from an ``a`` node to
  ``v``, 0 at ``a`` nodes (lower bounds, every pair).

An edge's largest delta is at least, and its smallest at most, the delay ``d`` of every
trace step ``e -> e'`` it carries, so along the traces (``node(e)`` reached from an ``a``
node, i.e. the trace has an ``a`` at or before ``e``; for ``Q`` exactly one, and ``e'``
no ``a``): ``H(node(e')) >= H(node(e)) + d``, ``Q(node(e')) >= Q(node(e)) + d`` (``Q`` 0
at the trace's first ``a``), ``G(node(e')) <= G(node(e)) + d``.  The invariants give
``H, Q <= U(a, b)`` and ``G >= L(a, b)`` at reached nodes of a bounded type ``b``.
``H`` and ``Q`` are imposed only where finite in every valid model: on steps into an
event ``e'`` followed in its trace (for ``Q``: before the next ``a``) by a bounded event
``f`` (then ``H(node(e')) <= U - (t(f) - t(e'))``); elsewhere a node's value is free,
and a node of infinite value is given the domain's top, which no imposed constraint
sees.  ``G`` is capped at the largest ``L`` (``min(G, L_max)`` keeps every constraint).
Each node's events share its values.  So every valid model gives a *relaxed solution*:
per type a partition of its events into groups, per group and system a value, meeting
the constraints above; besides, per type at least :func:`~.perfume_cpsat.type_lows`
groups and, optionally, no two events of a time or cycle conflict
(:mod:`.timeconflicts`) in one group.  The fewest groups of any relaxed solution, plus
INITIAL and TERMINAL, is therefore at most the nodes of every valid model; CP-SAT proves
"no relaxed solution has at most ``c`` nodes" for ``c`` = the starting bound, ``c + 1``,
... (:func:`joint_bound`), and each INFEASIBLE answer raises the bound to ``c + 1``.
Not imposed (sound to leave out): IntrBy lower bounds, the untimed invariants beyond
their per-type bounds, and a node reached through another trace's event in it (for
sources other than a first event found nowhere else, ``Init``, whose systems reach every
event).  With ``full``, :func:`joint_bound` deepens the exact formulation of
:mod:`.perfume_cpsat` the same way instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .exact import cp_model, isolated, one_worker
from .log import EventLog
from .timecheck import TimedCodes


@dataclass(frozen=True)
class System:
    """One walk-value system (module doc): ``kind`` ("upper", "first" or "lower"),
    source type ``a``, per event whether its copy is used (``used``) and its fixed value
    where known (``zero``: the ``a`` events' 0 for "first" and "lower"), per event the
    cap (upper kinds: ``U``, else -1) or floor (``L``, else -1) in ticks, per step ``e ->
    e + 1`` whether the step constraint holds (``step``), and the domain top ``top``."""

    kind: str
    a: int
    used: np.ndarray
    zero: np.ndarray
    limit: np.ndarray
    step: np.ndarray
    top: int


def systems(log: EventLog, codes: TimedCodes, bounds: np.ndarray) -> list[System]:
    """The systems of the module doc for ``log``'s time bounds (``bounds``: their values
    in integer ticks, :func:`~.perfume_cpsat.int_ticks`).  An IntrBy upper bound ``U`` (``a``
    to a later ``a``) caps ``H_a`` at every ``a`` event: ``H_a`` of an ``a`` node is the
    larger of 0 and its longest walk of at least one edge from an ``a`` node, and ``U >=
    0``.  IntrBy lower bounds are left out."""
    n = log.n_events
    types = log.codes
    groups: dict[tuple[str, int], dict[int, int]] = {}
    for a, b, v, up, fo in zip(
        codes.bound_a.tolist(),
        codes.bound_b.tolist(),
        bounds.tolist(),
        codes.bound_upper.tolist(),
        codes.bound_first_only.tolist(),
    ):
        if a == b and not up:
            continue  # an IntrBy lower bound (walks of at least one edge): left out
        kind = "first" if fo else ("upper" if up else "lower")
        lim = groups.setdefault((kind, a), {})
        lim[b] = (min if up else max)(lim.get(b, v), v)
    out = []
    for (kind, a), lim in sorted(groups.items()):
        is_a = types == a
        seen = log.seen_in_trace(is_a)  # a events at or before each event
        per_type = np.full(len(log.types), -1, dtype=np.int64)
        for b, v in lim.items():
            per_type[b] = v
        bounded = per_type[types] >= 0
        if kind == "first":
            reached = seen == 1
            # a bounded event at or after e before the next a (e itself may be the a)
            capped = np.zeros(n, dtype=bool)
            for k in range(log.n_traces):
                later = False
                for e in range(int(log.starts[k + 1]) - 1, int(log.starts[k]) - 1, -1):
                    if is_a[e]:
                        capped[e] = later
                        later = False
                        continue
                    later = later or bool(bounded[e])
                    capped[e] = later
            limit = np.where(reached & bounded & ~is_a, per_type[types], -1)
            step = np.zeros(n, dtype=bool)
            nxt = np.nonzero(~log.is_last)[0]
            step[nxt] = reached[nxt] & ~is_a[nxt + 1] & capped[nxt + 1]
            zero = reached & is_a
        else:
            reached = seen >= 1
            limit = np.where(reached & bounded, per_type[types], -1)
            step = np.zeros(n, dtype=bool)
            nxt = np.nonzero(~log.is_last)[0]
            if kind == "upper":
                capped = np.zeros(n, dtype=bool)
                for k in range(log.n_traces):
                    s, e = int(log.starts[k]), int(log.starts[k + 1])
                    capped[s:e] = np.maximum.accumulate(bounded[s:e][::-1])[::-1]
                step[nxt] = reached[nxt] & capped[nxt + 1]
                zero = np.zeros(n, dtype=bool)
            else:
                step[nxt] = reached[nxt]
                zero = is_a.copy()
        used = (limit >= 0) | zero | step
        used[1:] |= step[:-1]
        top = int(max(lim.values()))
        out.append(System(kind, a, used, zero, limit, step, top))
    return out


@dataclass(frozen=True)
class JointBound:
    """:func:`joint_bound`'s answer: ``bound`` (on every valid model's nodes, INITIAL and
    TERMINAL included), ``start`` (the bound it started from), ``status`` (CP-SAT's
    answer per total tried, in order), ``deterministic_time`` (seconds, all tries)."""

    bound: int
    start: int
    status: list[tuple[int, str]]
    deterministic_time: float


def _build(
    cp: Any,
    log: EventLog,
    iticks: np.ndarray,
    syst: list[System],
    lows: np.ndarray,
    total: int,
    forbid: dict[int, np.ndarray] | None,
) -> Any:
    """The CP-SAT model "a relaxed solution (module doc) with at most ``total`` nodes,
    INITIAL and TERMINAL included, and at least ``lows[t]`` of each type ``t``"."""
    mdl = cp.CpModel()
    types = log.codes
    present = lows > 0
    slack = total - 2 - int(lows.sum())
    caps = np.where(present, lows + max(slack, 0), 0)
    used_any = np.zeros(log.n_events, dtype=bool)
    for s in syst:
        used_any |= s.used
    if forbid:
        for pairs in forbid.values():
            if len(pairs):
                used_any[pairs.ravel()] = True
    slot: dict[int, Any] = {}
    count: dict[int, Any] = {}
    for t in np.nonzero(present)[0].tolist():
        k = int(caps[t])
        ev = np.nonzero((types == t) & used_any)[0].tolist()
        prev: Any = None
        for e in ev:
            v = mdl.new_int_var(0, k - 1, "")
            slot[e] = v
            if prev is None:
                mdl.add(v == 0)
                prev = v
                continue
            mdl.add(v <= prev + 1)
            m = mdl.new_int_var(0, k - 1, "")
            mdl.add_max_equality(m, [prev, v])
            prev = m
        n_t = mdl.new_int_var(int(lows[t]), k, "")
        if prev is not None:
            mdl.add(n_t >= prev + 1)
        count[t] = n_t
    mdl.add(sum(count.values()) + 2 <= total)
    d = np.zeros(log.n_events, dtype=np.int64)
    d[:-1] = iticks[1:] - iticks[:-1]
    for s in syst:
        vals: dict[int, list[Any]] = {}
        copy: dict[int, Any] = {}

        def at(e: int, s: System = s, vals: dict = vals, copy: dict = copy) -> Any:
            got = copy.get(e)
            if got is not None:
                return got
            t = int(types[e])
            if t not in vals:
                vals[t] = [mdl.new_int_var(0, s.top, "") for _ in range(int(caps[t]))]
            if len(vals[t]) == 1:
                got = vals[t][0]
            else:
                got = mdl.new_int_var(0, s.top, "")
                mdl.add_element(slot[e], vals[t], got)
            copy[e] = got
            return got

        upper = s.kind != "lower"
        for e in np.nonzero(s.zero)[0].tolist():
            mdl.add(at(e) == 0)
        for e in np.nonzero(s.limit >= 0)[0].tolist():
            mdl.add(at(e) <= int(s.limit[e]) if upper else at(e) >= int(s.limit[e]))
        for e in np.nonzero(s.step)[0].tolist():
            if upper:
                mdl.add(at(e + 1) >= at(e) + int(d[e]))
            else:
                mdl.add(at(e + 1) <= at(e) + int(d[e]))
    if forbid:
        for pairs in forbid.values():
            for x, y in pairs.tolist():
                mdl.add(slot[x] != slot[y])
    return mdl


def conflict_pairs(log: EventLog, codes: TimedCodes, ticks: np.ndarray) -> dict[int, np.ndarray]:
    """Per type, the pairs ``(x, y)`` (``x < y``) of its events that no model puts in one
    node: time conflicts and cycle conflicts (:mod:`.timeconflicts`)."""
    from .timeconflicts import cycle_conflicts, timed_sides

    sides = timed_sides(log, codes, ticks)
    out: dict[int, np.ndarray] = {}
    for t in np.unique(log.codes).tolist():
        ev = np.nonzero(log.codes == t)[0]
        adj = np.zeros((len(ev), len(ev)), dtype=bool)
        for k in range(len(sides.limit)):
            p, s = sides.p[k, ev], sides.s[k, ev]
            adj |= p[:, None] + s[None, :] > sides.limit[k]
        adj |= adj.T
        if len(sides.limit):
            adj |= cycle_conflicts(log, codes, sides, ev, ticks)
        i, j = np.nonzero(np.triu(adj, 1))
        out[t] = np.stack([ev[i], ev[j]], axis=1) if len(i) else np.zeros((0, 2), np.int64)
    return out


def joint_bound(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: float,
    start: int | None = None,
    seed: int = 0,
    conflicts: bool = False,
    ceiling: int | None = None,
    full: bool = False,
    lows: np.ndarray | None = None,
) -> JointBound:
    """A lower bound on the nodes of every valid model of ``log`` (module doc): from
    ``start`` (a proven bound; default :func:`~.timeconflicts.perfume_lower_bound`),
    CP-SAT (one worker, seed ``seed``, forked children: :func:`~.exact.isolated`) is
    asked for a relaxed solution of at most ``c`` nodes for ``c = start, start + 1,
    ...``; INFEASIBLE proves ``c + 1``, any other answer (or ``ceiling``, or ``budget``
    deterministic seconds in all) stops.  ``conflicts``: also forbid the conflicting pairs
    of :func:`conflict_pairs` in one node.  ``full``: the same deepening on the exact
    formulation (:func:`~.perfume_cpsat.build`: "a valid model of at most ``c`` nodes"),
    whose INFEASIBLE is that of every valid model, not only of the relaxation.  ``lows``:
    per-type lower bounds valid for every model (e.g. ``type_relaxation_bound``'s
    ``per_type``), used where above :func:`~.perfume_cpsat.type_lows`.  ValueError when
    the times do not fit (:func:`~.perfume_cpsat.int_ticks`)."""
    from .perfume_cpsat import ROUND_COST, int_ticks, type_lows
    from .timeconflicts import perfume_lower_bound

    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    iticks, bounds = fit
    cp = cp_model()
    base = type_lows(log, codes, ticks)
    lows = base if lows is None else np.maximum(base, np.asarray(lows, dtype=np.int64))
    if start is None:
        start = perfume_lower_bound(log, codes, ticks)
    start = max(int(start), int(lows.sum()) + 2)
    syst = systems(log, codes, bounds)
    forbid = conflict_pairs(log, codes, ticks) if conflicts else None
    best, spent = start, 0.0
    tried: list[tuple[int, str]] = []
    c = start
    while ceiling is None or c < ceiling:
        left = budget - spent
        if left <= 1e-3:
            break
        if full:
            mdl = _build_full(log, codes, iticks, bounds, lows, c)
        else:
            mdl = _build(cp, log, iticks, syst, lows, c, forbid)
        got = _solve(cp, mdl, left, seed)
        if got is None:
            tried.append((c, "CRASHED"))
            break
        name, det = got
        spent += max(det, ROUND_COST)
        tried.append((c, name))
        if name != "INFEASIBLE":
            break
        best = c + 1
        c += 1
    return JointBound(best, start, tried, spent)


def _build_full(
    log: EventLog,
    codes: TimedCodes,
    iticks: np.ndarray,
    bounds: np.ndarray,
    lows: np.ndarray,
    total: int,
) -> Any:
    """The exact formulation (:func:`~.perfume_cpsat.build`) of "a valid model with at
    most ``total`` nodes": caps ``lows[t] + total - 2 - sum(lows)`` (every such model fits:
    each other type has at least ``lows`` nodes) and the total as a constraint."""
    from .perfume_cpsat import build

    present = lows > 0
    slack = max(total - 2 - int(lows.sum()), 0)
    caps = np.where(present, lows + slack, 1)
    b = build(log, codes, iticks, bounds, caps)
    mdl = b.mdl
    mdl.clear_objective()
    count = []
    for t in np.nonzero(present)[0].tolist():
        n_t = mdl.new_int_var(int(lows[t]), int(caps[t]), "")
        for e in np.nonzero(log.codes == t)[0].tolist():
            mdl.add(n_t >= b.slot[e] + 1)
        count.append(n_t)
    mdl.add(sum(count) + 2 <= total)
    return mdl


def _solve(cp: Any, mdl: Any, budget: float, seed: int) -> tuple[str, float] | None:
    """``mdl`` solved on one worker within ``budget`` deterministic seconds in a forked
    child: ``(status name, deterministic seconds)``, None when the child died."""

    def run() -> tuple[str, float]:
        solver = one_worker(cp, seed, budget)
        status = solver.solve(mdl)
        return solver.status_name(status), float(solver.deterministic_time)

    return isolated(run)
