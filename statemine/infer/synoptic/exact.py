"""Exact search over region bits with OR-Tools' CP-SAT: an optional polishing stage.

A model is sound iff some region bits obeying the rules of :mod:`.regions` (forced bits,
monotone free runs) are equal within each node, so the smallest model is the fewest
(type, vector) groups over all such bits.  As a CP-SAT model (:func:`build`): per event
and failing invariant a bit (a constant where forced), along each free run ``b[x] <=
b[x+1]`` (``>=`` for runs starting with 1s); per type ``K`` slots, each with a vector and
a used flag, every event in exactly one slot whose vector equals its bits; minimise the
used slots.  Events of one type whose bits are all forced and equal form one class (one
slot choice: putting them in one slot never costs a node).  OPTIMAL is the minimum among
models with at most ``K`` nodes per type.

:func:`polish` starts CP-SAT from a sound model (its region bits and groups as the
solver's hint), with one worker, a fixed seed and a *deterministic* time budget
(``max_deterministic_time``), so the result depends on the budget and the seed only; the
model it returns passes the engine's own check (every mined invariant holds) or the
input model is returned.  :func:`type_minimum` solves, per type, the relaxation where
every other event's bits are free: a lower bound per type at least the pairwise one of
:mod:`.bounds` (benchmarks/synoptic_exact.py prints both).

Needs ``pip install 'statemine[exact]'`` (OR-Tools); without it :func:`cp_model` raises
a one-line :class:`~statemine.errors.UsageError` naming the extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import UsageError
from .check import InvariantCodes, violated
from .log import EventLog
from .model import PartitionModel
from .regions import FreeRuns, _pack, free_runs, grouped, model_vectors

#: The one-line error when OR-Tools is missing.
MISSING = "the exact polishing stage (--exactBudget) needs OR-Tools: pip install 'statemine[exact]'"


def cp_model() -> Any:
    """OR-Tools' ``cp_model`` module; UsageError naming the ``exact`` extra when absent."""
    try:
        from ortools.sat.python import cp_model as module  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise UsageError(MISSING) from None
    return module


def one_worker(cp: Any, seed: int, budget: float) -> Any:
    """A CP-SAT solver (``cp``: :func:`cp_model`) on one worker with random seed
    ``seed`` and ``budget`` deterministic seconds (``max_deterministic_time``: the same
    answer for the same inputs, whatever the load)."""
    solver = cp.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = budget
    return solver


class SolverCrashWarning(RuntimeWarning):
    """CP-SAT's child process died; the model from before that step is kept (valid, but
    not polished by it).  The command line prints it as one line on stderr."""


def isolated(fn: Any) -> Any:
    """``fn()`` run in a forked child process, its result sent back through a pipe
    (in process where there is no ``fork``): None when the child dies (OR-Tools
    9.15.6755 segfaults now and then, google/or-tools#5025, seen in Perfume's
    neighbourhood runs) and a :class:`SolverCrashWarning` says so; an exception in
    ``fn`` is raised again in the parent as a RuntimeError naming it."""
    import multiprocessing as mp
    import warnings

    if "fork" not in mp.get_all_start_methods():
        return fn()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            got = (True, fn())
        except BaseException as exc:  # sent to the parent, which raises it again
            got = (False, f"{type(exc).__name__}: {exc}")
        send.send(got)
        send.close()

    proc = ctx.Process(target=child)
    proc.start()
    send.close()
    try:
        out = recv.recv()
    except EOFError:
        out = None
    proc.join()
    if out is None or proc.exitcode != 0:
        warnings.warn(
            f"CP-SAT's process died (exit status {proc.exitcode}); this step's model is kept",
            SolverCrashWarning,
            stacklevel=2,
        )
        return None
    ok, value = out
    if not ok:
        raise RuntimeError(f"the CP-SAT run failed in its child process: {value}")
    return value


@dataclass(frozen=True)
class Solved:
    """What CP-SAT returned: ``status`` (OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, ...),
    ``nodes`` (of the best model found, with INITIAL and TERMINAL; -1 when none),
    ``bound`` (the solver's lower bound under the caps, with INITIAL and TERMINAL),
    ``vectors`` (the best model's region bits per event, packed; None when none) and
    ``deterministic_time`` (CP-SAT's deterministic seconds spent)."""

    status: str
    nodes: int
    bound: int
    vectors: list[int] | None
    deterministic_time: float


def event_classes(log: EventLog, runs: FreeRuns) -> list[list[int]]:
    """The events (log positions) grouped into classes that share one slot choice: an
    event with a free bit alone, events of one type whose bits are all forced and equal
    together; classes in order of their first event."""
    free: list[bool] = np.any(runs.forced < 0, axis=1).tolist()
    keys = _pack(runs.forced > 0)
    classes: dict[tuple[int, int], list[int]] = {}
    out: list[list[int]] = []
    for x, (t, k, f) in enumerate(zip(log.codes.tolist(), keys, free)):
        if f:
            out.append([x])
            continue
        cls = classes.get((t, k))
        if cls is None:
            cls = classes[t, k] = []
            out.append(cls)
        cls.append(x)
    return out


def build(
    log: EventLog,
    runs: FreeRuns,
    caps: np.ndarray,
    hint: list[int] | None = None,
    floor: int = 0,
    type_floors: np.ndarray | None = None,
) -> tuple[Any, dict[tuple[int, int], Any], list[Any]]:
    """The CP-SAT model of the module doc over ``runs`` (the :func:`~.regions.free_runs`
    of the failing invariants) with ``caps[t]`` slots per type: (model, the bit of each
    (event, invariant) that is free, the used flags).  ``hint``: region bits per event
    (packed, obeying the rules) given as the solver's first solution, at most ``caps``
    groups per type; ``floor``: a known lower bound on the used slots; ``type_floors``:
    known lower bounds per type (e.g. :func:`~.bounds.clique_bounds`; at most ``caps``),
    each added as a constraint on that type's used slots."""
    cp = cp_model()
    n, m = runs.forced.shape
    mdl = cp.CpModel()
    forced = runs.forced.tolist()
    bits: dict[tuple[int, int], Any] = {}
    for x in range(n):
        for j in range(m):
            if forced[x][j] < 0:
                bits[x, j] = mdl.new_bool_var("")
                if hint is not None:
                    mdl.add_hint(bits[x, j], bool(hint[x] >> j & 1))
    lo = runs.lo
    for j in range(m):
        same = np.nonzero((lo[:-1, j] >= 0) & (lo[:-1, j] == lo[1:, j]))[0].tolist()
        up = runs.first[j] == 0
        for x in same:  # x and x + 1 in one free run: monotone
            a, b = (bits[x, j], bits[x + 1, j]) if up else (bits[x + 1, j], bits[x, j])
            mdl.add_implication(a, b)
    codes = log.codes.tolist()
    used_all: list[Any] = []
    by_type: dict[int, list[list[int]]] = {}
    for cls in event_classes(log, runs):
        by_type.setdefault(codes[cls[0]], []).append(cls)
    for t, classes in sorted(by_type.items()):
        k = int(caps[t])
        vec = [[mdl.new_bool_var("") for _ in range(m)] for _ in range(k)]
        used = [mdl.new_bool_var("") for _ in range(k)]
        for s in range(k - 1):
            mdl.add_implication(used[s + 1], used[s])
        used_all += used
        if type_floors is not None:
            # holds for every model, so it cuts off none; it only guides the search
            # (1,024 events: 68 nodes from 4 of 5 seeds' models within 20 deterministic
            # s instead of 3 of 5)
            mdl.add(sum(used) >= min(k, int(type_floors[t])))
        slot_of: dict[int, int] = {}  # the hint's vector -> its slot (order of first event)
        if hint is not None:
            for cls in classes:
                slot_of.setdefault(hint[cls[0]], len(slot_of))
            if len(slot_of) > k:
                raise ValueError(f"the hint has {len(slot_of)} groups of type {t}, caps {k}")
            vectors = list(slot_of) + [0] * (k - len(slot_of))  # spare slots: unused
            for s, v in enumerate(vectors):
                for j in range(m):
                    mdl.add_hint(vec[s][j], bool(v >> j & 1))
            for s in range(k):
                mdl.add_hint(used[s], s < len(slot_of))
        for i, cls in enumerate(classes):
            x = cls[0]
            slot = [mdl.new_bool_var("") for _ in range(k)]
            mdl.add_exactly_one(slot)
            if i == 0:
                mdl.add(slot[0] == 1)
            mine = slot_of.get(hint[x], -1) if hint is not None else -1
            for s in range(k):
                if hint is not None:
                    mdl.add_hint(slot[s], s == mine)
                mdl.add_implication(slot[s], used[s])
                for j in range(m):
                    f = forced[x][j]
                    if f == 1:
                        mdl.add_implication(slot[s], vec[s][j])
                    elif f == 0:
                        mdl.add_implication(slot[s], vec[s][j].Not())
                    else:
                        b = bits[x, j]
                        mdl.add_bool_or([slot[s].Not(), vec[s][j].Not(), b])
                        mdl.add_bool_or([slot[s].Not(), vec[s][j], b.Not()])
    if floor > 0:
        mdl.add(sum(used_all) >= floor)
    mdl.minimize(sum(used_all))
    return mdl, bits, used_all


def solve(
    log: EventLog,
    runs: FreeRuns,
    caps: np.ndarray,
    budget: float,
    seed: int = 0,
    hint: list[int] | None = None,
    floor: int = 0,
    type_floors: np.ndarray | None = None,
) -> Solved:
    """:func:`build` solved by CP-SAT on one worker with random seed ``seed`` within
    ``budget`` deterministic seconds (``max_deterministic_time``: the same answer for
    the same inputs, whatever the load); ``floor``: a known lower bound on the nodes
    (with INITIAL and TERMINAL); ``type_floors``: per type (see :func:`build`)."""
    cp = cp_model()
    mdl, bits, _ = build(log, runs, caps, hint, max(0, floor - 2), type_floors)

    def run() -> Solved:
        solver = one_worker(cp, seed, budget)
        # presolve spends 15-30 s of CPU at 6,010 events counting almost no deterministic
        # time, then the budget, before any search; the search alone proves 59 nodes there
        solver.parameters.cp_model_presolve = False
        status = solver.solve(mdl)
        vectors = None
        nodes = -1
        if status in (cp.OPTIMAL, cp.FEASIBLE):
            out = runs.forced > 0
            for (x, j), b in bits.items():
                out[x, j] = bool(solver.boolean_value(b))
            vectors = _pack(out)
            nodes = round(solver.objective_value) + 2
        bound = round(solver.best_objective_bound) + 2
        return Solved(solver.status_name(status), nodes, bound, vectors, solver.deterministic_time)

    got = isolated(run)
    if got is None:  # CP-SAT died: no model, and only the bound known before
        return Solved("CRASHED", -1, max(floor, 2), None, budget)
    solved: Solved = got
    return solved


def is_valid(model: PartitionModel, inv: InvariantCodes) -> bool:
    """The engine's check: every invariant of ``inv`` holds on ``model`` (a partition of
    the log's events into single-type nodes, which accepts every trace by construction)."""
    adj = model.edge_counts() > 0
    bad = violated(adj, model.node_type, inv, len(model.log.types), trim=False)
    return not bool(bad.any())


#: Slots per type beyond the starting model's groups of that type (room for CP-SAT to
#: split a node where a smaller model needs it).  Two cost about the CPU of one on the
#: two-capture logs and reach 68 nodes at 1,024 events for seeds 3 and 5, where one
#: stops at 70 and 69 even with twice the budget (docs/synoptic-engine.md).
SLACK = 2


def polish(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    budget: float,
    seed: int = 0,
    bound: int = 0,
    slack: int = SLACK,
    type_bounds: np.ndarray | None = None,
) -> PartitionModel:
    """A model with at most ``model``'s nodes: CP-SAT (:func:`solve`) from ``model``'s
    region bits (``model`` satisfies every invariant of ``inv``; ``failing``: those that
    fail on the initial model) with at most its groups per type plus ``slack``, within
    ``budget`` deterministic seconds, then coarsened.  Kept only when it is smaller and
    passes :func:`is_valid`; otherwise ``model`` is returned.  ``bound``: a lower bound
    on the nodes (:func:`~.bounds.node_lower_bound`); ``type_bounds``: its per-type
    parts (:func:`~.bounds.clique_bounds`), given to CP-SAT as per-type floors.
    Deterministic for the seed and budget."""
    from .coarsen import coarsen

    log = model.log
    sub = inv.select(failing)
    if not len(sub) or budget <= 0 or model.n_nodes <= bound:
        return model
    runs = free_runs(log, sub)
    hint = model_vectors(model, sub)
    start = grouped(log, hint)  # one node per (type, vector): at most model's nodes
    caps = np.bincount(start.node_type[2:], minlength=len(log.types)) + slack
    found = solve(log, runs, caps, budget, seed, hint, bound, type_bounds)
    if found.vectors is None:
        return model
    out = coarsen(grouped(log, found.vectors), inv, np.random.default_rng(seed))
    if out.n_nodes >= model.n_nodes or not is_valid(out, inv):
        return model
    return out


def type_minimum(log: EventLog, runs: FreeRuns, t: int, cap: int, limit: float) -> tuple[str, int]:
    """(status, lower bound) of the fewest vectors the events of type ``t`` can take
    when every other event's bits are left free (only the rules bind them), within
    ``limit`` deterministic seconds on one worker: a relaxation of the exact problem, so
    its optimum summed over the types plus INITIAL and TERMINAL is a lower bound on
    every model's nodes.  Other events then only carry the monotone order of a free run,
    so consecutive ``t`` events of one run must be monotone; ``cap`` slots (an upper
    bound: e.g. the engine's nodes of that type)."""
    cp = cp_model()
    events = np.nonzero(log.codes == t)[0].tolist()
    m = runs.forced.shape[1]
    mdl = cp.CpModel()
    bits: dict[tuple[int, int], Any] = {}
    for x in events:
        for j in range(m):
            f = int(runs.forced[x, j])
            bits[x, j] = f if f >= 0 else mdl.new_bool_var("")
    for j in range(m):
        last: dict[int, int] = {}  # free run (its first position) -> its last t event
        for x in events:
            lo = int(runs.lo[x, j])
            if lo < 0:
                continue
            if lo in last:
                a, b = (last[lo], x) if runs.first[j] == 0 else (x, last[lo])
                mdl.add(bits[a, j] <= bits[b, j])
            last[lo] = x
    vec = [[mdl.new_bool_var("") for _ in range(m)] for _ in range(cap)]
    used = [mdl.new_bool_var("") for _ in range(cap)]
    for s in range(cap - 1):
        mdl.add(used[s] >= used[s + 1])
    for i, x in enumerate(events):
        slot = [mdl.new_bool_var("") for _ in range(cap)]
        mdl.add_exactly_one(slot)
        if i == 0:
            mdl.add(slot[0] == 1)
        for s in range(cap):
            mdl.add_implication(slot[s], used[s])
            for j in range(m):
                mdl.add(vec[s][j] == bits[x, j]).only_enforce_if(slot[s])
    mdl.minimize(sum(used))
    solver = one_worker(cp, 1, limit)  # 1: CP-SAT's default seed
    status = solver.solve(mdl)
    return solver.status_name(status), round(solver.best_objective_bound)


def relaxed_type_bounds(
    log: EventLog, runs: FreeRuns, lows: np.ndarray, caps: np.ndarray, limit: float
) -> np.ndarray:
    """Per type code, the larger of ``lows[t]`` (a valid lower bound, e.g. the pairwise
    one of :mod:`.bounds`) and CP-SAT's proven bound on :func:`type_minimum` within
    ``limit`` deterministic seconds per type.  ``caps[t]`` must be at least the nodes of
    type ``t`` in some model (e.g. the engine's): the relaxation's optimum is then at
    most the cap, so the cap cuts off no optimum and the bound under it is a bound
    without it.  0 for types with no event."""
    out = lows.astype(np.int64).copy()
    for t in np.nonzero(log.type_counts > 0)[0].tolist():
        status, low = type_minimum(log, runs, t, int(caps[t]), limit)
        if status != "INFEASIBLE":  # a cap below a model's nodes: caps[t] broke the rule
            out[t] = max(int(out[t]), low)
    return out


def uncapped_bound(capped: float, caps: np.ndarray, lows: np.ndarray) -> int:
    """A lower bound on every model's nodes (INITIAL and TERMINAL included) from
    ``capped``, a proven lower bound over the models with at most ``caps[t]`` nodes of
    each type ``t`` (``inf`` when there is none), and valid per-type lower bounds
    ``lows``: a model outside the caps has more than ``caps[t]`` nodes of some type
    ``t`` and at least ``lows[u]`` of every other, so at least ``sum(lows) + 3 +
    caps[t] - lows[t]`` nodes; every model has at least the smaller of the two.
    ``caps[t] >= lows[t]`` for every type with events (``lows[t] > 0``)."""
    present = lows > 0
    outside = int(lows.sum()) + 3 + int((caps - lows)[present].min())
    return int(min(capped, outside))


@dataclass(frozen=True)
class Proved:
    """What :func:`proved_bound` found: ``bound`` (a lower bound on every model's
    nodes, INITIAL and TERMINAL included), ``type_bounds`` (the per-type bounds it
    started from), ``caps`` (the slots per type CP-SAT had), ``solved`` (CP-SAT's
    answer under those caps)."""

    bound: int
    type_bounds: np.ndarray
    caps: np.ndarray
    solved: Solved


def proved_bound(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    lows: np.ndarray,
    budget: float,
    seed: int = 0,
    type_limit: float = 0.0,
    slack: int | None = SLACK,
) -> Proved:
    """A lower bound on the nodes of every model of ``model.log`` (which satisfies
    every invariant of ``inv``; ``failing``: those that fail on the initial model):
    ``lows`` (valid per-type bounds, e.g. :func:`~.bounds.type_lower_bounds`), raised by
    :func:`relaxed_type_bounds` when ``type_limit`` > 0 (deterministic seconds per
    type), then CP-SAT's proven bound on the exact problem (:func:`solve`, ``budget``
    deterministic seconds, ``model``'s region bits as the hint) under per-type caps,
    made valid without them by :func:`uncapped_bound`.  Caps: ``model``'s (type, vector)
    groups (at least ``lows``) plus ``slack``; None: ``lows[t] + g``, ``g`` =
    ``model``'s nodes above ``sum(lows) + 2``, which cut off no model smaller than
    ``model`` (so the capped bound stands), but are harder to prove anything under (at
    1,024 events: slack 2 proves 64, 3 and 4 prove 62 and 61 in 40 deterministic s, no
    cap 61, the relaxed bound).  Deterministic for the seed and budgets."""
    log = model.log
    sub = inv.select(failing)
    runs = free_runs(log, sub)
    present = log.type_counts > 0
    low = np.where(present, np.maximum(lows, 1), 0).astype(np.int64)
    if type_limit > 0:
        mine = np.bincount(model.node_type[2:], minlength=len(log.types))
        low = relaxed_type_bounds(log, runs, low, mine, type_limit)
    gap = model.n_nodes - int(low.sum()) - 2
    if slack is None:
        caps = np.where(present, low + max(gap, 0), 0)
    else:  # tighter caps: an easier proof, but uncapped_bound may lower it
        groups = np.bincount(
            grouped(log, model_vectors(model, sub)).node_type[2:], minlength=len(low)
        )
        caps = np.where(present, np.maximum(groups, low) + slack, 0)
    if gap <= 0 or not len(sub):
        solved = Solved("OPTIMAL", model.n_nodes, model.n_nodes, None, 0.0)
        return Proved(model.n_nodes, low, caps, solved)
    solved = solve(log, runs, caps, budget, seed, model_vectors(model, sub), int(low.sum()) + 2)
    capped = float("inf") if solved.status == "INFEASIBLE" else solved.bound
    return Proved(uncapped_bound(capped, caps, low), low, caps, solved)


def raised_bound(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    lows: np.ndarray,
    budget: float,
    seed: int = 0,
    type_limit: float = 0.0,
    slack: int = SLACK,
    max_slack: int = 8,
) -> Proved:
    """The largest of :func:`proved_bound` (same arguments) with ``slack``, ``slack + 1``,
    ... ``max_slack`` spare slots per type (each a valid bound): more slots raise the
    part :func:`uncapped_bound` gives the models outside the caps by one node each,
    while CP-SAT may still prove its capped optimum.  Stops once the bound reaches the
    smallest model known (``model`` or CP-SAT's): it is then the minimum.  At 1,024
    events (two capture files) slack 2 proves 64, slack 6 proves 68, the minimum.  The
    per-type bounds are relaxed once."""
    best: Proved | None = None
    for s in range(slack, max(slack, max_slack) + 1):
        got = proved_bound(model, inv, failing, lows, budget, seed, type_limit, s)
        lows, type_limit = got.type_bounds, 0.0
        if best is None or got.bound > best.bound:
            best = got
        known = [model.n_nodes] + ([got.solved.nodes] if got.solved.nodes > 0 else [])
        if best.bound >= min(known):
            break
    assert best is not None
    return best
