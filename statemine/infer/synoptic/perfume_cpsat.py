"""An exact CP-SAT formulation of a Perfume model's validity (issue 31): the fewest nodes.

Each event ``e`` of type ``t`` takes a slot ``n(e)`` in ``[0, K_t)`` (a node); the model's
edges are the (node(e), node(f)) pairs of the trace transitions ``e -> f`` and an edge's
largest/smallest delta is the max/min over its transitions, so a constraint on every
*transition* with its delta ``d`` is one on every *edge* with its extreme delta.  Every
invariant of :mod:`.timecheck` is "there exist node values": per node a variable, per
event a copy ``v(e) = V[t][n(e)]`` (``AddElement``), per transition a fixed (enforced)
linear constraint on ``v(e), v(f)``.  Sources ``a``, targets ``b``; values in ticks:

* every-pair upper bounds from ``a`` (AlwaysFollowedBy, IntrBy): ``h(f) >= h(e) + d`` on
  transitions where ``r(e)`` (reachable from an ``a`` node: ``r = 1`` at ``a`` nodes,
  ``r(e) -> r(f)``) and ``c(f)`` (reaches a bounded target: ``c = 1`` there, ``c(f) ->
  c(e)``); ``0 <= h`` and ``h <= U(a, t)`` at nodes of type ``t``.  Any feasible ``r, c``
  contain the true reachability, so every walk the checker times is constrained (sound);
  the true fix-points and longest walk totals are feasible when the model is valid (a
  positive cycle off every timed walk stays free, as in the checker).  The clock is not
  reset at a later ``a`` (Perfume's automaton), so ``a`` nodes carry ``h`` on.
* AlwaysPrecedes upper bounds (first ``a`` of a path only): ``z`` (reachable from
  INITIAL through non-``a`` nodes: 1 at traces' first events, ``z(e) -> z(f)`` when
  ``e`` is no ``a``) marks the starting ``a`` nodes; from them (value 0) ``q`` grows
  through non-``a`` nodes only (``s``, ``c1`` as ``r``, ``c`` above).
* lower bounds (every pair): ``g(f) <= g(e) + d`` on every transition into a node that
  is no ``a`` (or into an ``a`` when ``a`` is a target), ``g = 0`` leaving an ``a`` node
  (the shortest walk starts at the latest ``a``), ``0 <= g <= max L``, ``g >= L(a, t)``
  at targets: any feasible ``g`` is at most the shortest walk, and the shortest walks
  (capped at ``max L``) are feasible.
* untimed invariants as least fix-points of the same kind: NFby (forward from ``a``, no
  ``b`` node reached), AP (``z`` above, no ``b`` node reached), AFby (backward "reaches
  TERMINAL avoiding ``b``", false after every ``a``), IntrBy (forward from ``a`` through
  nodes that are neither ``a`` nor ``b``, no ``a`` node reached).

Objective: the used slots of every type (value precedence per type breaks the slot
symmetry).  OPTIMAL is the minimum among models with at most ``K_t`` nodes of each type
``t``; its proven bound is a bound "under those caps".  :func:`polish` uses it from a
valid model (caps: that model's nodes per type; the model as the hint; one worker, fixed
seed, deterministic time) and returns a model only after :func:`~.timecheck.violations`
passes it; past ``WHOLE_EVENTS`` events, by neighbourhoods (the events of a few nodes
free, the rest fixed).  Times must be integers of at most ``TICK_LIMIT`` ticks
(:func:`int_ticks`); else the stage is refused with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .exact import cp_model, isolated, one_worker
from .log import EventLog
from .model import PartitionModel
from .timecheck import TimedCodes, timed_graph, violations

#: Largest tick value (and bound) the formulation takes: sums of a few of them stay far
#: inside CP-SAT's int64 domains.
TICK_LIMIT = 2**50
#: Logs of at most this many events are solved whole by :func:`polish`; larger ones by
#: neighbourhoods unless the budget reaches ``WHOLE_SECONDS`` per event.
WHOLE_EVENTS = 120
#: Deterministic seconds per event from which :func:`polish` solves a log whole: whole
#: solves need more time to start but then find more (605 connection events, 10 s:
#: 118 nodes whole in 94 CPU s, 126 by neighbourhoods in 34 and 124 with 30 s in 105;
#: 313 events, 2 s: 113 whole, 110 by neighbourhoods).
WHOLE_SECONDS = 0.01
#: ... up to this many events (1,000 events, 10 s whole: 165 nodes, none fewer than
#: the engine's, in 98 CPU s).
WHOLE_MAX_EVENTS = 700
#: Nodes freed per neighbourhood of :func:`polish` on larger logs.
HOOD_NODES = 6


def int_ticks(ticks: np.ndarray, codes: TimedCodes) -> tuple[np.ndarray, np.ndarray] | str:
    """``(ticks, bound values)`` as int64, or the one-line reason they do not fit (a
    non-integer time or bound, or one past ``TICK_LIMIT``)."""
    vals = np.asarray(codes.bound_value, dtype=np.float64)
    for name, arr in (("times", ticks), ("bounds", vals)):
        if len(arr) and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
            return f"the exact stage needs integer ticks: the {name} are not exact integers"
        if len(arr) and float(np.abs(arr).max()) > TICK_LIMIT:
            return f"the exact stage needs {name} of at most 2**50 ticks"
    return ticks.astype(np.int64), vals.astype(np.int64)


@dataclass(frozen=True)
class Solved:
    """CP-SAT's answer: ``status`` (OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, ...),
    ``model`` (the best model found, None when none), ``nodes`` (its nodes with INITIAL
    and TERMINAL; -1 when none), ``bound`` (the proven lower bound on the nodes under
    the caps, with INITIAL and TERMINAL) and ``deterministic_time`` (seconds)."""

    status: str
    model: PartitionModel | None
    nodes: int
    bound: int
    deterministic_time: float


_Val = Any  # a CP-SAT variable or a Python int


@dataclass
class _NodeVals:
    """Node values per type (``vals[t][k]``: a variable in ``[lo, hi]`` or a constant)
    and the per-event copies made so far (``cache``)."""

    vals: dict[int, list[_Val]]
    lo: int
    hi: int
    cache: dict[int, _Val]


class _Builder:
    """Slot variables per event and node-value copies per event (module doc)."""

    def __init__(self, cp: Any, log: EventLog, caps: np.ndarray, fixed: np.ndarray):
        self.mdl = cp.CpModel()
        self.log = log
        self.caps = caps
        self.fixed = fixed  # slot per event, -1: free
        self.slot: list[_Val] = []
        for e, t in enumerate(log.codes.tolist()):
            k = int(fixed[e])
            self.slot.append(k if k >= 0 else self.mdl.new_int_var(0, int(caps[t]) - 1, ""))
        first = log.starts[:-1]
        self.first = np.zeros(log.n_events, dtype=bool)
        self.first[first] = True
        nxt = np.nonzero(~log.is_last)[0]
        self.src = nxt
        self.types_present = sorted(set(log.codes.tolist()))
        self.objective_offset = 0  # used slots fixed outside the objective
        #: per type its used slots (an expression) when every event is free
        self.type_terms: dict[int, Any] = {}

    def nodes(self, lo: int, hi: int, const: dict[int, int]) -> _NodeVals:
        """Per present type a list of node values: ``const[t]`` where given, else
        variables in ``[lo, hi]``."""
        out = _NodeVals({}, lo, hi, {})
        for t in self.types_present:
            k = int(self.caps[t])
            if t in const:
                out.vals[t] = [const[t]] * k
            else:
                out.vals[t] = [self.mdl.new_int_var(lo, hi, "") for _ in range(k)]
        return out

    def at(self, nv: _NodeVals, e: int) -> _Val:
        """Event ``e``'s copy of its node's value (``AddElement`` on its slot)."""
        got = nv.cache.get(e)
        if got is not None:
            return got
        arr = nv.vals[int(self.log.codes[e])]
        s = self.slot[e]
        if isinstance(s, int):
            got = arr[s]
        elif isinstance(arr[0], int):
            got = arr[0]  # a constant of the whole type
        else:
            got = self.mdl.new_int_var(nv.lo, nv.hi, "")
            self.mdl.add_element(s, arr, got)
        nv.cache[e] = got
        return got

    def implies(self, p: _Val, q: _Val) -> None:
        """``p -> q`` on 0/1 values (constants folded)."""
        if (isinstance(p, int) and p == 0) or (isinstance(q, int) and q == 1):
            return
        if isinstance(p, int) and isinstance(q, int):
            self.mdl.add_bool_or([])  # 1 -> 0: infeasible
        elif isinstance(p, int):
            self.mdl.add(q == 1)
        elif isinstance(q, int):
            self.mdl.add(p == 0)
        else:
            self.mdl.add_implication(p, q)

    def enforced(self, lits: list[_Val], expr: Any) -> None:
        """``expr`` when every 0/1 value of ``lits`` is 1 (constants folded)."""
        if any(isinstance(x, int) and x == 0 for x in lits):
            return
        live = [x for x in lits if not isinstance(x, int)]
        if isinstance(expr, bool):
            if not expr:
                if live:
                    self.mdl.add_bool_or([x.Not() for x in live])
                else:
                    self.mdl.add_bool_or([])
            return
        ct = self.mdl.add(expr)
        if live:
            ct.only_enforce_if(live)


def _bools(b: _Builder, const: dict[int, int]) -> _NodeVals:
    """0/1 node values (``const``: types whose nodes are all that constant)."""
    return b.nodes(0, 1, const)


def _every_pair_upper(b: _Builder, a: int, limit: dict[int, int], d: np.ndarray) -> None:
    """Every-pair upper bounds from ``a`` (``limit``: the tightest per target type)."""
    r = _bools(b, {a: 1})
    c = _bools(b, {t: 1 for t in limit})
    top = max(limit.values())
    h = b.nodes(0, top, {})
    for t, cap in limit.items():
        for x in h.vals.get(t, []):
            b.mdl.add(x <= cap)
    for e in b.src.tolist():
        f = e + 1
        re_, cf = b.at(r, e), b.at(c, f)
        b.implies(re_, b.at(r, f))
        b.implies(cf, b.at(c, e))
        b.enforced([re_, cf], b.at(h, f) >= b.at(h, e) + int(d[e]))


def _first_only_upper(
    b: _Builder, a: int, limit: dict[int, int], d: np.ndarray, z: _NodeVals
) -> None:
    """AlwaysPrecedes upper bounds from ``a``: walks from the starting ``a`` nodes (``z``)
    through nodes that are no ``a``."""
    codes = b.log.codes
    s = _bools(b, {})
    c = _bools(b, {t: 1 for t in limit})
    top = max(limit.values())
    q = b.nodes(0, top, {a: 0})
    for t, cap in limit.items():
        for x in q.vals.get(t, []):
            b.mdl.add(x <= cap)
    for e in b.src.tolist():
        f = e + 1
        if codes[f] == a:
            continue
        se = b.at(z, e) if codes[e] == a else b.at(s, e)
        b.implies(se, b.at(s, f))
        cf = b.at(c, f)
        if codes[e] != a:
            b.implies(cf, b.at(c, e))
        qe = 0 if codes[e] == a else b.at(q, e)
        b.enforced([se, cf], b.at(q, f) >= qe + int(d[e]))


def _lower(b: _Builder, a: int, limit: dict[int, int], d: np.ndarray) -> None:
    """Lower bounds from ``a`` (``limit``: the largest per target type)."""
    codes = b.log.codes
    top = max(limit.values())
    g = b.nodes(0, top, {})
    for t, low in limit.items():
        for x in g.vals.get(t, []):
            b.mdl.add(x >= low)
    for e in b.src.tolist():
        f = e + 1
        if codes[f] == a and a not in limit:
            continue
        ge = 0 if codes[e] == a else b.at(g, e)
        b.enforced([], b.at(g, f) <= ge + int(d[e]))


def _z_system(b: _Builder, a: int, zero: set[int]) -> _NodeVals:
    """``z``: reachable from INITIAL through nodes that are no ``a`` (0 at ``zero``)."""
    codes = b.log.codes
    z = _bools(b, {t: 0 for t in zero})
    for e in np.nonzero(b.first)[0].tolist():
        b.implies(1, b.at(z, e))
    for e in b.src.tolist():
        if codes[e] != a:
            b.implies(b.at(z, e), b.at(z, e + 1))
    return z


def _forward_from(b: _Builder, a: int, through: set[int], zero: set[int]) -> None:
    """Reachable in >= 1 edge from an ``a`` node, passing only nodes of ``through``
    (None: all): 0 at the types of ``zero``."""
    codes = b.log.codes
    y = _bools(b, {t: 0 for t in zero})
    for e in b.src.tolist():
        ce = int(codes[e])
        src = 1 if ce == a else (b.at(y, e) if ce in through else 0)
        b.implies(src, b.at(y, e + 1))


def _afby(b: _Builder, bt: int, sources: set[int]) -> None:
    """``a AFby bt`` for every ``a`` of ``sources`` (-1: INITIAL)."""
    codes = b.log.codes
    w = _bools(b, {bt: 0})
    for e in np.nonzero(b.log.is_last & (codes != bt))[0].tolist():
        b.implies(1, b.at(w, e))
    for e in b.src.tolist():
        if codes[e] != bt:
            b.implies(b.at(w, e + 1), b.at(w, e))
        if int(codes[e]) in sources:
            b.implies(b.at(w, e + 1), 0)
    if -1 in sources:
        for e in np.nonzero(b.first)[0].tolist():
            b.implies(b.at(w, e), 0)
    for e in np.nonzero(b.log.is_last)[0].tolist():
        if int(codes[e]) in sources:
            b.mdl.add_bool_or([])  # an ``a`` ends a trace: the invariant cannot hold


def build(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    bounds: np.ndarray,
    caps: np.ndarray,
    fixed: np.ndarray | None = None,
    anchors: dict[int, list[int]] | None = None,
    order: bool = True,
) -> _Builder:
    """The CP-SAT model of every invariant of ``codes`` on ``log`` (integer ``ticks``
    and bound values ``bounds``, :func:`int_ticks`) with at most ``caps[t]`` nodes of
    type ``t``; ``fixed[e]`` >= 0 fixes event ``e``'s slot.  Objective: used slots.
    ``anchors`` (every event free only): per type, events that no valid model within the
    caps puts in one node, placed in slots ``0, 1, ...`` (:func:`_objective`).  ``order``
    False: neither the objective nor its symmetry breaking (value precedence, anchors,
    ``type_terms``), for a caller that adds them later (:func:`_objective`) on a copy."""
    cp = cp_model()
    n = log.n_events
    if fixed is None:
        fixed = np.full(n, -1, dtype=np.int64)
    b = _Builder(cp, log, caps, fixed)
    d = np.zeros(n, dtype=np.int64)
    d[:-1] = ticks[1:] - ticks[:-1]
    d[log.is_last] = 0
    ev_codes = log.codes
    present = set(b.types_present)
    # time bounds grouped by (kind, source): the tightest per target type
    groups: dict[tuple[str, int], dict[int, int]] = {}
    for a, t, v, up, fo in zip(
        codes.bound_a.tolist(),
        codes.bound_b.tolist(),
        bounds.tolist(),
        codes.bound_upper.tolist(),
        codes.bound_first_only.tolist(),
    ):
        if a not in present or t not in present:
            continue
        kind = "first" if fo else ("upper" if up else "lower")
        lim = groups.setdefault((kind, a), {})
        lim[t] = (min if up else max)(lim.get(t, v), v)
    # untimed forms
    k_, xa, xb = codes.untimed.kind.tolist(), codes.untimed.a.tolist(), codes.untimed.b.tolist()
    nfby: dict[int, set[int]] = {}
    ap: dict[int, set[int]] = {}
    afby: dict[int, set[int]] = {}
    for k, a, bt in zip(k_, xa, xb):
        if k == 0:
            afby.setdefault(bt, set()).add(a)
        elif k == 1 and a in present:
            nfby.setdefault(a, set()).add(bt)
        elif k == 2:
            ap.setdefault(a, set()).add(bt)
    for (kind, a), lim in sorted(groups.items()):
        if kind == "upper":
            _every_pair_upper(b, a, lim, d)
        elif kind == "lower":
            _lower(b, a, lim, d)
    z_of: dict[int, _NodeVals] = {}
    for a in sorted(set(ap) | {a for (kind, a) in groups if kind == "first"}):
        zero = (ap.get(a, set()) - {a}) & present
        z_of[a] = _z_system(b, a, zero)
    for (kind, a), lim in sorted(groups.items()):
        if kind == "first":
            _first_only_upper(b, a, lim, d, z_of[a])
    for a, bs in sorted(nfby.items()):
        _forward_from(b, a, present, bs & present)
    for bt, sources in sorted(afby.items()):
        if bt in present:
            _afby(b, bt, sources)
        elif sources & (present | {-1}):
            b.mdl.add_bool_or([])
    for a, bt in zip(codes.intr_a.tolist(), codes.intr_b.tolist()):
        if a in present:
            _forward_from(b, a, present - {a, bt}, {a})
    if order:
        _objective(b, ev_codes, anchors or {})
    return b


def _objective(b: _Builder, ev_codes: np.ndarray, anchors: dict[int, list[int]]) -> None:
    """Minimise the used slots: value precedence per type when every event is free,
    else a used flag per slot holding a free event.  ``anchors[t]`` (every event free):
    the ``i``-th anchor in slot ``i``, value precedence on the other events starting
    above the anchors' slots; sound when the anchors lie in distinct nodes of every
    model considered (renumber its type-``t`` nodes: an anchor's node gets the anchor's
    slot, every other node the next slot at its first event), and the type's used slots
    are still the chain's last maximum plus one (every anchor slot is used)."""
    mdl = b.mdl
    terms = []
    free = b.fixed < 0
    if free.all():
        b.type_terms = {}
        for t in b.types_present:
            prev: Any = None
            own = anchors.get(t, [])
            for i, e in enumerate(own):
                mdl.add(b.slot[e] == i)
            if own:
                prev = len(own) - 1
            skip = set(own)
            for e in np.nonzero(ev_codes == t)[0].tolist():
                if e in skip:
                    continue
                s = b.slot[e]
                if prev is None:
                    mdl.add(s == 0)
                    prev = s
                    continue
                mdl.add(s <= prev + 1)
                m = mdl.new_int_var(0, int(b.caps[t]) - 1, "")
                mdl.add_max_equality(m, [prev, s])
                prev = m
            terms.append(prev + 1)
            b.type_terms[t] = prev + 1
        b.objective_offset = 0
    else:
        used_fixed = {(int(ev_codes[e]), int(b.fixed[e])) for e in np.nonzero(~free)[0].tolist()}
        for t in b.types_present:
            free_t = [e for e in np.nonzero((ev_codes == t) & free)[0].tolist()]
            for k in range(int(b.caps[t])):
                if (t, k) in used_fixed:
                    continue
                lits = []
                for e in free_t:
                    lit = mdl.new_bool_var("")
                    mdl.add(b.slot[e] == k).only_enforce_if(lit)
                    mdl.add(b.slot[e] != k).only_enforce_if(lit.Not())
                    lits.append(lit)
                if lits:
                    used = mdl.new_bool_var("")
                    mdl.add_max_equality(used, lits)
                    terms.append(used)
        b.objective_offset = len(used_fixed)
    mdl.minimize(sum(terms))


def _model_of(b: _Builder, slots: list[int]) -> PartitionModel:
    log = b.log
    key = log.codes.astype(np.int64) * (int(b.caps.max()) + 1) + np.asarray(slots)
    _, part = np.unique(key, return_inverse=True)
    part = part.ravel().astype(np.int64) + 2
    node_type = np.full(int(part.max()) + 1, -1, dtype=np.int64)
    node_type[part] = log.codes
    return PartitionModel(log, part, node_type)


def valid(model: PartitionModel, codes: TimedCodes, ticks: np.ndarray) -> bool:
    """The engine's checker: no invariant of ``codes`` fails on ``model``."""
    g = timed_graph(model.part, model.node_type, model.log, ticks)
    return not violations(g, codes, len(model.log.types), any_only=True).any()


def _run(
    cp: Any, b: _Builder, budget: float, seed: int
) -> tuple[str, list[int] | None, float, float] | None:
    """``b``'s model solved on one worker (seed ``seed``, ``budget`` deterministic
    seconds) in a forked child (:func:`~.exact.isolated`): ``(status name, slot per event
    or None, best objective bound, deterministic seconds)``, None when the child died."""

    def run() -> tuple[str, list[int] | None, float, float]:
        solver = one_worker(cp, seed, budget)
        status = solver.solve(b.mdl)
        values = None
        if status in (cp.OPTIMAL, cp.FEASIBLE):
            values = [s if isinstance(s, int) else int(solver.value(s)) for s in b.slot]
        bound = float(solver.best_objective_bound)
        return solver.status_name(status), values, bound, float(solver.deterministic_time)

    return isolated(run)


def solve(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    caps: np.ndarray,
    budget: float,
    seed: int = 0,
    hint: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
) -> Solved:
    """:func:`build` solved by CP-SAT on one worker (seed ``seed``) within ``budget``
    deterministic seconds; ``hint``: a slot per event (e.g. a valid model's, numbered by
    first appearance per type).  The model returned is *not* re-checked here (:func:`polish`
    and the tests do)."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    iticks, bounds = fit
    cp = cp_model()
    b = build(log, codes, iticks, bounds, caps, fixed)
    if hint is not None:
        for e, s in enumerate(b.slot):
            if not isinstance(s, int):
                b.mdl.add_hint(s, int(hint[e]))

    got = _run(cp, b, budget, seed)
    if got is None:  # CP-SAT died (OR-Tools 9.15 segfaults now and then)
        return Solved("CRASHED", None, -1, 0, budget)
    name, values, bound, spent = got
    off = 2 + b.objective_offset
    if values is None:
        return Solved(name, None, -1, round(bound) + off, spent)
    model = _model_of(b, values)
    return Solved(name, model, model.n_nodes, round(bound) + off, spent)


def slots_of(model: PartitionModel) -> tuple[np.ndarray, np.ndarray]:
    """``(slot per event, nodes per type)`` of ``model``: each type's nodes numbered in
    the order of their first event (value precedence holds)."""
    log = model.log
    slot = np.zeros(log.n_events, dtype=np.int64)
    counts = np.zeros(len(log.types), dtype=np.int64)
    seen: dict[int, int] = {}
    for e, (p, t) in enumerate(zip(model.part.tolist(), log.codes.tolist())):
        k = seen.get(p)
        if k is None:
            k = seen[p] = int(counts[t])
            counts[t] += 1
        slot[e] = k
    return slot, counts


#: Deterministic seconds one neighbourhood of :func:`polish` may spend at most.
HOOD_BUDGET = 2.0
#: Deterministic seconds a neighbourhood is charged at least: a round's building and
#: presolve cost CPU that CP-SAT counts little (601 events: about 0.5 CPU s a round for
#: 0.04 deterministic s), so a budget also caps the rounds.
ROUND_COST = 0.1


def _try(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: float,
    seed: int,
    fixed: np.ndarray | None,
) -> tuple[PartitionModel | None, float]:
    """One CP-SAT run from ``model`` (caps: its nodes per type; hint: its slots; events
    with ``fixed[e]`` >= 0 stay in their slot): the model found when it passes the
    engine's checker and has no more nodes than ``model``, and the deterministic
    seconds spent."""
    slot, caps = slots_of(model)
    if fixed is not None:
        fixed = np.where(fixed, slot, -1)
    found = solve(model.log, codes, ticks, caps, budget, seed, slot, fixed)
    out = found.model
    if out is None or out.n_nodes > model.n_nodes or not valid(out, codes, ticks):
        return None, found.deterministic_time
    return out, found.deterministic_time


def polish(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: float,
    seed: int = 0,
    whole_events: int | None = None,
) -> PartitionModel:
    """A valid model with at most ``model``'s nodes (``model`` itself unless a smaller
    one is found) within ``budget`` deterministic seconds of CP-SAT (one worker, seed
    ``seed``): on logs of at most ``whole_events`` events (default: ``WHOLE_EVENTS``, or
    ``WHOLE_MAX_EVENTS`` when ``budget`` is at least ``WHOLE_SECONDS`` per event) one run
    of the whole formulation (caps: ``model``'s nodes per type, ``model`` as the hint); on larger
    logs, large-neighbourhood search: each round frees the events of up to
    ``HOOD_NODES`` nodes of one type (types drawn by their nodes, seeded), fixes every
    other event in its node and solves that for at most ``HOOD_BUDGET`` seconds; a
    result with no more nodes replaces the model.  Every model kept passes the engine's
    checker (:func:`valid`).  Deterministic for the seed and budget.  ValueError when
    the times do not fit (:func:`int_ticks`)."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    log = model.log
    if budget <= 0:
        return model
    if whole_events is None:
        n = log.n_events
        whole = n <= WHOLE_EVENTS or (n <= WHOLE_MAX_EVENTS and budget >= WHOLE_SECONDS * n)
    else:
        whole = log.n_events <= whole_events
    if whole:
        out, _ = _try(model, codes, ticks, budget, seed, None)
        return out if out is not None and out.n_nodes < model.n_nodes else model
    rng = np.random.default_rng(seed)
    best = model
    left = budget
    while left > 1e-3:
        counts = np.bincount(model.node_type[2:], minlength=len(log.types))
        if not (counts >= 2).any():
            break
        t = int(model.node_type[rng.integers(2, model.n_nodes)])
        same = np.nonzero(model.node_type == t)[0]
        if len(same) < 2:
            continue
        group = rng.choice(same, min(HOOD_NODES, len(same)), replace=False)
        fixed = ~np.isin(model.part, group)
        out, spent = _try(model, codes, ticks, min(HOOD_BUDGET, left), seed, fixed)
        left -= max(spent, ROUND_COST)
        if out is not None:
            model = out.compact()
            if model.n_nodes < best.n_nodes:
                best = model
    return best


def type_lows(log: EventLog, codes: TimedCodes, ticks: np.ndarray) -> np.ndarray:
    """Per type code a lower bound on its nodes in every valid model (the per-type part
    of :func:`~.timeconflicts.perfume_lower_bound`: time and cycle conflicts, untimed
    bounds), at least 1 for a type with events."""
    from .timeconflicts import perfume_type_bounds

    low = perfume_type_bounds(log, codes, ticks)
    present = log.type_counts > 0
    return np.where(present, np.maximum(low, 1), 0).astype(np.int64)


@dataclass(frozen=True)
class Proved:
    """:func:`proved_bound`'s answer: ``bound`` (on every valid model's nodes, INITIAL
    and TERMINAL included), ``capped`` (CP-SAT's bound over models with at most
    ``caps[t]`` nodes of each type), ``lows`` (the per-type bounds used), ``solved``."""

    bound: int
    capped: int
    caps: np.ndarray
    lows: np.ndarray
    solved: Solved


def proved_bound(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: float,
    seed: int = 0,
    slack: int | None = 0,
) -> Proved:
    """A lower bound on the nodes of every valid model of ``model.log``: CP-SAT's proven
    bound (``budget`` deterministic seconds, ``model`` as the hint) under caps of
    ``model``'s nodes per type (at least the per-type bounds of :func:`type_lows`) plus
    ``slack``, made a bound without caps by :func:`~.exact.uncapped_bound` (a model
    outside the caps has more than ``caps[t]`` nodes of some type and at least the
    per-type bound of every other).  ``slack`` None: caps ``lows[t] + g`` with ``g`` =
    ``model``'s nodes above the per-type bounds' sum, which cut off no model smaller than
    ``model`` (the capped bound then stands alone), at a harder proof."""
    from .exact import uncapped_bound

    log = model.log
    lows = type_lows(log, codes, ticks)
    slot, counts = slots_of(model)
    present = lows > 0
    if slack is None:
        gap = max(model.n_nodes - int(lows.sum()) - 2, 0)
        caps = np.where(present, lows + gap, 0)  # each type's count fits: lows are bounds
    else:
        caps = np.where(present, np.maximum(counts, lows) + slack, 0)
    solved = solve(log, codes, ticks, np.maximum(caps, 1), budget, seed, slot)
    capped = float("inf") if solved.status == "INFEASIBLE" else solved.bound
    bound = uncapped_bound(capped, caps, lows)
    return Proved(bound, int(min(capped, 10**9)), caps, lows, solved)


@dataclass(frozen=True)
class TypeBound:
    """:func:`type_relaxation_bound`'s answer: ``bound`` (on every valid model's nodes,
    INITIAL and TERMINAL included: ``sum(per_type) + 2``), ``levels`` (the nodes
    :func:`~.levelbound.level_bound` adds to ``per_type``: ``bound + levels`` is a bound
    too), ``per_type`` (per type code
    ``max(relaxed[t], lows[t])``), ``relaxed`` (the relaxation's bound per type: 0 where
    not solved), ``lows`` (:func:`type_lows`), ``status`` (CP-SAT's per solved type) and
    ``deterministic_time`` (seconds, all types)."""

    bound: int
    levels: int
    per_type: np.ndarray
    relaxed: np.ndarray
    lows: np.ndarray
    status: dict[int, str]
    deterministic_time: float


def own_slots(log: EventLog) -> np.ndarray:
    """Per event its rank among the events of its type: every event a node of its own."""
    slot = np.zeros(log.n_events, dtype=np.int64)
    for t in np.unique(log.codes).tolist():
        idx = np.nonzero(log.codes == t)[0]
        slot[idx] = np.arange(len(idx))
    return slot


def type_relaxation_bound(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    caps: np.ndarray,
    budget_per_type: float,
    seed: int = 0,
) -> TypeBound:
    """A lower bound on every valid model's nodes from one exact relaxation per type.

    Splitting a node of a valid model keeps it valid (every walk of the finer model is
    a walk of the coarser one with narrower edge ranges: "Model inference", step 9).  So
    from any valid model, splitting every node whose type is not ``t`` into one node per
    event gives a valid model with the same type-``t`` nodes: ``m_t``, the fewest
    type-``t`` nodes over valid models in which every other event is alone, is at most
    every valid model's type-``t`` nodes, and ``sum_t m_t + 2`` bounds every model.
    Per type, :func:`build` with every other event fixed in its own slot, ``t``'s
    events free (value precedence on them) and ``c`` slots: CP-SAT (one worker, seed
    ``seed``, a forked child) proves a bound ``B`` on the type-``t`` nodes of relaxed
    models with at most ``c`` of them, OPTIMAL or not.  Either ``m_t <= c``, then ``m_t
    >= B``, or ``m_t >= c + 1``: so ``m_t >= min(ceil(B), c + 1)`` whatever ``c``
    (INFEASIBLE: ``c + 1``).  ``c`` deepens from ``lows[t]`` to ``caps[t]`` while the
    answer is INFEASIBLE, within ``budget_per_type`` deterministic seconds per type
    (:func:`_type_relaxation`); with ``caps[t]`` a valid model's type-``t`` nodes no
    relaxed model at most that large is cut off.  Per type the larger of that and
    :func:`type_lows`; types with one event, or whose ``lows`` reach ``caps``, are not
    solved.  ``levels``: the levels argument of ``perfume_lower_bound`` from these
    per-type bounds (it holds from any valid per-type bounds).  A crashed child gives ``lows[t]``.  ValueError when the times do not fit
    (:func:`int_ticks`)."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    from .levelbound import level_bound

    iticks, bounds = fit
    lows = type_lows(log, codes, ticks)
    counts = log.type_counts
    own = own_slots(log)
    relaxed = np.zeros(len(lows), dtype=np.int64)
    status: dict[int, str] = {}
    spent = 0.0
    for t in np.nonzero(counts > 1)[0].tolist():
        top = int(min(max(int(caps[t]), 1), counts[t]))
        if lows[t] >= top:
            continue
        relaxed[t], status[t], det = _type_relaxation(
            log, iticks, codes, bounds, t, own, (int(lows[t]), top), budget_per_type, seed
        )
        spent += det
    per_type = np.maximum(relaxed, lows)
    extra = level_bound(log, codes, ticks, per_type)
    return TypeBound(int(per_type.sum()) + 2, extra, per_type, relaxed, lows, status, spent)


def _type_relaxation(
    log: EventLog,
    iticks: np.ndarray,
    codes: TimedCodes,
    bounds: np.ndarray,
    t: int,
    own: np.ndarray,
    caps: tuple[int, int],
    budget: float,
    seed: int,
) -> tuple[int, str, float]:
    """``(bound on m_t, last status, deterministic seconds)`` for type ``t``
    (:func:`type_relaxation_bound`), deepening: caps ``c`` from ``caps[0]`` (a valid
    per-type bound) up to ``caps[1]``; INFEASIBLE at ``c`` proves ``m_t >= c + 1`` and
    tries ``c + 1``; any other answer ends with ``min(ceil(B), c + 1)`` (``B``: CP-SAT's
    bound, OPTIMAL: ``m_t`` itself).  Each try is charged at least ``ROUND_COST``."""
    cp = cp_model()
    counts = log.type_counts
    free = log.codes == t
    fixed = np.where(free, -1, own)
    best, name, spent = caps[0], "UNKNOWN", 0.0
    for cap in range(max(caps[0], 1), caps[1] + 1):
        left = budget - spent
        if left <= 1e-3:
            break
        slots = counts.copy()
        slots[t] = cap
        b = build(log, codes, iticks, bounds, np.maximum(slots, 1), fixed)
        _value_precedence(b, np.nonzero(free)[0].tolist())
        got = _run(cp, b, left, seed)
        if got is None:
            return best, "CRASHED", spent
        name, _, bnd, det = got
        spent += max(det, ROUND_COST)
        if name == "INFEASIBLE":
            best = cap + 1
            continue
        if np.isfinite(bnd):
            best = max(best, min(int(np.ceil(bnd - 1e-6)), cap + 1))
        break
    return best, name, spent


def _value_precedence(b: _Builder, events: list[int]) -> None:
    """The first of ``events`` in slot 0, each next at most one above the largest
    before it (any partition of them renumbered by first appearance)."""
    prev: Any = None
    for e in events:
        s = b.slot[e]
        if prev is None:
            b.mdl.add(s == 0)
            prev = s
            continue
        b.mdl.add(s <= prev + 1)
        m = b.mdl.new_int_var(0, int(b.caps[int(b.log.codes[e])]) - 1, "")
        b.mdl.add_max_equality(m, [prev, s])
        prev = m
