"""The exact CP-SAT formulation (:mod:`.perfume_cpsat`) told what the boxes know
(:mod:`.boxbound`): settling Perfume's minimum by deepening on the total (issue 31).

A *target* ``N`` asks: is there a valid model with at most ``N`` nodes (INITIAL and
TERMINAL included)?  Per-type budgets ``caps`` (at most ``caps[t]`` nodes of type ``t``)
get a CP-SAT model: :func:`~.perfume_cpsat.build` with every event free and these cuts,
each of which keeps every valid model within the budgets (up to renumbering each type's
nodes), so INFEASIBLE proves that no such model exists:

* *narrowed boxes*: :func:`~.boxbound.fix_point` under the budgets gives per event a
  box (one interval per walk-value system) holding its node's values in every valid
  model within them; None (refuted) settles the question without CP-SAT;
* *apart*: two events of one type whose narrowed boxes are disjoint in some system, or
  that conflict (:func:`~.jointbound.conflict_pairs`), lie in distinct nodes of every
  such model; per type a clique ``C`` of them (:func:`~.graphbounds.largest_clique`);
  ``|C| > caps[t]`` refutes the budgets;
* *anchors* (symmetry): the ``i``-th member of ``C`` in slot ``i``, value precedence on
  the other events above ``|C| - 1`` (:func:`~.perfume_cpsat._objective`): any model
  renumbered so that an anchor's node takes the anchor's slot and every other node the
  next free slot at its first event satisfies it, within ``caps[t]`` slots;
* *forbidden slots*: an event apart from anchor ``i`` is not in slot ``i`` (the anchor's
  node, after that renumbering); pairs of non-anchor events apart are not in one slot.

Two ways to ask a target (:func:`settle`, ``split``):

* *whole* (:func:`target_model`): ``caps[t] = per_type[t] + N - 2 - sum(per_type)``
  (``per_type``: :func:`~.boxbound.box_bound`'s per-type bounds, each a bound on every
  valid model: a model of at most ``N`` nodes has at least ``per_type[u]`` of every type
  ``u``, so at most ``caps[t]`` of type ``t``), floors ``per_type[t]`` on each type's
  used slots and ``N - 2`` on their sum;
* *split* (:func:`survivors`, :func:`case_model`): every model of at most ``N`` nodes
  lies below one of the budgets of ``N - 2`` nodes in all with each type at its bound
  (:func:`maximal_vectors`); the boxes refute most of them (:func:`~.boxbound.refuted`);
  each survivor is its own CP-SAT model with its budgets as caps, narrower boxes and
  larger anchor cliques.  Since the deepening asks ``N`` only once every smaller total
  is refuted, a model of at most ``N`` nodes has exactly ``N``, so below a budget of
  ``N - 2`` in all it *equals* it: each type's used slots are fixed to its budget.

Cheaper cases (session 19): the formulation does not depend on the case but through
its caps, anchors and counts, so :func:`case_base` builds it once per target (caps the
largest of its cases', no symmetry breaking) and :func:`case_on_base` adds a case's
caps, anchors, value precedence, cuts and counts to a copy (the same valid models as
:func:`case_model`'s).  *The tree* (:func:`tree_target`, ``settle(tree=True)``): the
cases' counts fixed one type at a time, each partial case (exact counts on the types
fixed, :func:`case_model`'s semantics) asked of CP-SAT first; INFEASIBLE closes every
case below it, so a target costs the nodes CP-SAT cannot close rather than every case.

:func:`settle` raises ``N`` from the boxes' bound while every answer is INFEASIBLE (or
the cuts alone refute it); a model found is checked by the engine's checker
(:func:`~.perfume_cpsat.valid`) and is then the minimum.  Any other answer stops with the
interval.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .boxbound import CLIQUE_STEPS, _State, _state, box_bound, disjoint, fix_point, refuted
from .exact import cp_model
from .graphbounds import largest_clique
from .log import EventLog
from .model import PartitionModel
from .perfume_cpsat import ROUND_COST, _model_of, _objective, _run, build, int_ticks, valid
from .timecheck import TimedCodes


@dataclass(frozen=True)
class Cuts:
    """What the boxes prove about every valid model with at most ``caps[t]`` nodes of
    each type ``t`` (module doc): ``refuted`` (no such model), per type its ``anchors``
    (events in pairwise distinct nodes, in slot order), ``forbidden`` (event, slot)
    pairs and ``apart`` event pairs (never in one node)."""

    refuted: bool
    anchors: dict[int, list[int]] = field(default_factory=dict)
    forbidden: list[tuple[int, int]] = field(default_factory=list)
    apart: list[tuple[int, int]] = field(default_factory=list)


def box_state(log: EventLog, codes: TimedCodes, ticks: np.ndarray) -> _State:
    """What :func:`box_cuts` shares between budgets (:func:`~.boxbound._state`: systems,
    initial boxes, conflicts).  ValueError when the times do not fit
    (:func:`~.perfume_cpsat.int_ticks`)."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    return _state(log, codes, ticks, *fit)


def box_cuts(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    caps: np.ndarray,
    max_apart: int,
    st: _State | None = None,
) -> Cuts:
    """The cuts of the module doc for the budget ``caps`` (per type code; every type with
    events limited): boxes narrowed by :func:`~.boxbound.fix_point`, per type a clique of
    events apart as anchors, the slots they forbid, and at most ``max_apart`` pairs of
    non-anchor events apart (per type, the pairs in event order).  ValueError when the
    times do not fit (:func:`~.perfume_cpsat.int_ticks`).  ``st``: :func:`box_state` of
    the same log, made once for many budgets (it does not depend on ``caps``)."""
    if st is None:
        st = box_state(log, codes, ticks)
    budget = {t: int(caps[t]) for t in st.events}
    got = fix_point(st, budget, st.lo, st.hi)
    if got is None:
        return Cuts(True)
    lo, hi = got
    anchors: dict[int, list[int]] = {}
    forbidden: list[tuple[int, int]] = []
    apart: list[tuple[int, int]] = []
    for t, ev in st.events.items():
        adj = disjoint(lo[:, ev], hi[:, ev]) | st.confs[t]
        np.fill_diagonal(adj, False)
        members = sorted(largest_clique(adj, CLIQUE_STEPS)[0])
        if len(members) > budget[t]:
            return Cuts(True)
        if len(members) < 2:
            continue
        anchors[t] = [int(ev[i]) for i in members]
        rest = np.setdiff1d(np.arange(len(ev)), members)
        for i, a in enumerate(members):
            for j in rest[adj[rest, a]].tolist():
                forbidden.append((int(ev[j]), i))
        sub = np.triu(adj[np.ix_(rest, rest)], 1)
        for x, y in zip(*np.nonzero(sub)):
            if len(apart) >= max_apart:
                break
            apart.append((int(ev[rest[x]]), int(ev[rest[y]])))
    return Cuts(False, anchors, forbidden, apart)


def target_caps(per_type: np.ndarray, present: np.ndarray, target: int) -> np.ndarray:
    """Per type the most nodes a model of at most ``target`` nodes (INITIAL and TERMINAL
    included) can have when every type ``u`` with events has at least ``per_type[u]``:
    ``per_type[t] + target - 2 - sum(per_type)`` (0 for types without events)."""
    per = np.where(present, np.maximum(per_type, 1), 0).astype(np.int64)
    return np.where(present, per + target - 2 - int(per.sum()), 0).astype(np.int64)


def cut_model(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    caps: np.ndarray,
    max_apart: int,
    st: _State | None = None,
) -> tuple[Any, Cuts] | None:
    """``(builder, cuts)``: the exact formulation under ``caps`` (nodes per type) with the
    boxes' cuts (:func:`box_cuts`: anchors in fixed slots, forbidden slots, events apart),
    no objective; None when the boxes or a clique refute the caps.  The callers add their
    totals.  ``st`` (here and in :func:`target_model`, :func:`case_model`): the log's
    :func:`box_state`, made once when many caps are asked."""
    cuts = box_cuts(log, codes, ticks, caps, max_apart, st)
    return None if cuts.refuted else _built_with(log, codes, ticks, caps, cuts)


def _built_with(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, caps: np.ndarray, cuts: Cuts
) -> tuple[Any, Cuts]:
    """:func:`cut_model`'s answer for ``cuts`` (not refuted: :func:`box_cuts` under
    ``caps``): the formulation built under ``caps`` with the anchors, forbidden slots
    and events apart, no objective."""
    fit = int_ticks(ticks, codes)
    assert not isinstance(fit, str)  # box_cuts raised otherwise
    b = build(log, codes, *fit, np.maximum(caps, 1), anchors=cuts.anchors)
    _add_cuts(b, cuts)
    b.mdl.clear_objective()
    return b, cuts


def target_model(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    per_type: np.ndarray,
    target: int,
    max_apart: int = 20_000,
    st: _State | None = None,
) -> tuple[Any, Cuts] | None:
    """``(builder, cuts)``: the CP-SAT model of "a valid model with at most ``target``
    nodes" with every cut of the module doc (``per_type``: per-type bounds on every
    valid model); None when the cuts alone refute the target (its caps are below the
    per-type bounds, or the boxes or a clique refute them)."""
    present = log.type_counts > 0
    caps = target_caps(per_type, present, target)
    if (caps[present] < 1).any() or (caps < per_type)[present].any():
        return None
    made = cut_model(log, codes, ticks, caps, max_apart, st)
    if made is None:
        return None
    b, cuts = made
    for t, term in b.type_terms.items():
        b.mdl.add(term >= int(max(per_type[t], 1)))
    b.mdl.add(sum(b.type_terms.values()) <= target - 2)
    return b, cuts


def maximal_vectors(
    per_type: np.ndarray, types: list[int], target: int
) -> Iterator[dict[int, int]]:
    """Every per-type budget (on ``types``) of ``target - 2`` nodes in all with at least
    ``per_type[t]`` of each type ``t``, in a fixed order: every model of at most
    ``target`` nodes (each type at its bound or more) lies below one of them."""
    extra = target - 2 - sum(int(per_type[t]) for t in types)
    if extra < 0:
        return
    for combo in itertools.combinations_with_replacement(types, extra):
        budget = {t: int(per_type[t]) for t in types}
        for t in combo:
            budget[t] += 1
        yield budget


def survivors(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    per_type: np.ndarray,
    target: int,
    probes: int = 0,
    depth: int | None = None,
    max_cases: int = 20_000,
) -> list[dict[int, int]] | None:
    """The *cases* of ``target`` (every smaller total refuted): per-type node counts of
    the first ``depth`` types (in code order; None: all, the budgets of
    :func:`maximal_vectors`) that :func:`~.boxbound.refuted` (``probes`` shaving splits)
    does not refute, each type at least ``per_type[t]`` and ``target - 2`` nodes in
    all.  Every valid model of ``target`` nodes has the counts of one case on those
    types.  Searched type by type: a budget on the first types only (the others
    unlimited) that is refuted refutes every case that agrees with it there, and so does
    any smaller count (budgets are "at most"), so each type's count is tried from the
    largest down until refuted.  None when more than ``max_cases`` cases are found."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    st = _state(log, codes, ticks, *fit)
    types = sorted(st.events)
    extra = target - 2 - sum(int(per_type[t]) for t in types)
    if extra < 0:
        return []
    split = len(types) if depth is None else max(1, min(depth, len(types)))
    out: list[dict[int, int]] = []

    def grow(budget: dict[int, int], level: int, left: int) -> bool:
        # ``budget`` fixes types[:level] (not refuted); False when too many cases
        t = types[level]
        last = level == len(types) - 1
        for x in range(left, -1, -1) if not last else [left]:
            nxt = {**budget, t: int(per_type[t]) + x}
            if refuted(st, nxt, probes=probes):
                break  # below a refuted budget every budget is refuted
            if level + 1 == split:
                out.append(nxt)
                if len(out) > max_cases:
                    return False
            elif not grow(nxt, level + 1, left - x):
                return False
        return True

    return out if grow({}, 0, extra) else None


def case_model(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: dict[int, int],
    target: int,
    per_type: np.ndarray,
    max_apart: int = 20_000,
    st: _State | None = None,
) -> tuple[Any, Cuts] | None:
    """``(builder, cuts)``: the CP-SAT model of "a valid model of exactly ``target``
    nodes with exactly ``budget[t]`` nodes of each type ``t`` of ``budget``, at least
    ``per_type[u]`` of every other type ``u``" with every cut of the module doc under
    the caps ``budget`` and, for the other types, ``per_type[u]`` plus the nodes left;
    None when the counts do not add up or the boxes or a clique refute the caps.
    (Exactly, not at most: :func:`settle` asks ``target`` only once every smaller total
    is refuted.)"""
    got = _case_cuts(log, codes, ticks, budget, target, per_type, max_apart, st)
    if got is None:
        return None
    b, cuts = _built_with(log, codes, ticks, *got)
    _case_counts(b, budget, target, per_type)
    return b, cuts


def _case_cuts(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: dict[int, int],
    target: int,
    per_type: np.ndarray,
    max_apart: int,
    st: _State | None,
    limit: np.ndarray | None = None,
) -> tuple[np.ndarray, Cuts] | None:
    """The steps :func:`case_model` and :func:`case_on_base` share: the case's caps
    (:func:`case_caps`), then the boxes' cuts under them (:func:`box_cuts`); ``(caps,
    cuts)``, or None when the counts do not add up or the cuts refute the caps.
    ``limit`` (per type code, a base model's caps): ValueError, before the cuts, when a
    type with events gets more slots (``max(caps, 1)``) than it."""
    caps = case_caps(log, budget, target, per_type)
    if caps is None:
        return None
    if limit is not None:
        present = log.type_counts > 0
        if (np.maximum(caps, 1) > limit)[present].any():
            raise ValueError("a case's caps exceed its base model's")
    cuts = box_cuts(log, codes, ticks, caps, max_apart, st)
    return None if cuts.refuted else (caps, cuts)


def case_caps(
    log: EventLog, budget: dict[int, int], target: int, per_type: np.ndarray
) -> np.ndarray | None:
    """Per type code the nodes a case of :func:`case_model` allows: ``budget[t]`` on
    its types, ``max(per_type[u], 1)`` plus the nodes left on every other type ``u``
    with events, 0 on types without events; None when the counts exceed ``target - 2``."""
    present = log.type_counts > 0
    rest = [t for t in np.nonzero(present)[0].tolist() if t not in budget]
    left = target - 2 - sum(budget.values()) - sum(max(int(per_type[t]), 1) for t in rest)
    if left < 0:
        return None
    caps = np.zeros(len(log.types), dtype=np.int64)
    for t, m in budget.items():
        caps[t] = m
    for t in rest:
        caps[t] = max(int(per_type[t]), 1) + left
    return caps


def _case_counts(b: Any, budget: dict[int, int], target: int, per_type: np.ndarray) -> None:
    """A case's totals on ``b`` (its ``type_terms`` made): exactly ``budget[t]`` used
    slots of each type of ``budget``, at least ``max(per_type[u], 1)`` of every other
    type and, when there are such types, ``target - 2`` in all."""
    for t, term in b.type_terms.items():
        if t in budget:
            b.mdl.add(term == budget[t])
        else:
            b.mdl.add(term >= max(int(per_type[t]), 1))
    if any(t not in budget for t in b.type_terms):
        b.mdl.add(sum(b.type_terms.values()) == target - 2)


def _add_cuts(b: Any, cuts: Cuts) -> None:
    """``cuts``' forbidden slots and events apart on ``b`` (anchors: :func:`build` or
    :func:`~.perfume_cpsat._objective`)."""
    for e, k in cuts.forbidden:
        b.mdl.add(b.slot[e] != k)
    for e, f in cuts.apart:
        b.mdl.add(b.slot[e] != b.slot[f])


def case_base(log: EventLog, codes: TimedCodes, ticks: np.ndarray, caps: np.ndarray) -> Any:
    """The part of every case's model that does not depend on the case: the exact
    formulation (:func:`~.perfume_cpsat.build`) under ``caps`` (per type code, at least
    every case's caps: :func:`case_caps`) without symmetry breaking or objective
    (``order=False``).  Built once per target; :func:`case_on_base` copies it per
    case.  ValueError when the times do not fit (:func:`~.perfume_cpsat.int_ticks`)."""
    fit = int_ticks(ticks, codes)
    if isinstance(fit, str):
        raise ValueError(fit)
    return build(log, codes, *fit, np.maximum(caps, 1), order=False)


def case_on_base(
    base: Any,
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    budget: dict[int, int],
    target: int,
    per_type: np.ndarray,
    max_apart: int = 20_000,
    st: _State | None = None,
) -> tuple[Any, Cuts] | None:
    """:func:`case_model`'s question on a copy of ``base`` (:func:`case_base`, caps at
    least the case's): the same valid models, found without building the formulation
    again.  On the copy: each free slot below the case's cap (node values of the slots
    above are then in no constraint but their own bounds, so they change nothing), the
    anchors and value precedence (:func:`~.perfume_cpsat._objective` with the case's
    caps), the forbidden slots and events apart, the case's counts.  None when the
    counts do not add up or the boxes or a clique refute the caps; ValueError when a
    case's cap exceeds the base's."""
    got = _case_cuts(log, codes, ticks, budget, target, per_type, max_apart, st, base.caps)
    if got is None:
        return None
    caps, cuts = got
    cap1 = np.maximum(caps, 1)
    b = copy.copy(base)
    b.mdl = base.mdl.clone()
    b.caps = cap1
    b.slot = [
        s if isinstance(s, int) else b.mdl.get_int_var_from_proto_index(s.index) for s in base.slot
    ]
    for s, t in zip(b.slot, log.codes.tolist()):
        if not isinstance(s, int) and cap1[t] < base.caps[t]:
            b.mdl.add(s <= int(cap1[t]) - 1)
    _objective(b, log.codes, cuts.anchors)
    b.mdl.clear_objective()
    _add_cuts(b, cuts)
    _case_counts(b, budget, target, per_type)
    return b, cuts


def _base_for(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    cases: list[dict[int, int]],
    target: int,
    per_type: np.ndarray,
) -> Any:
    """:func:`case_base` under the per-type largest of the ``cases``' caps
    (:func:`case_caps`); None when no case's counts add up."""
    caps = [c for v in cases if (c := case_caps(log, v, target, per_type)) is not None]
    if not caps:
        return None
    return case_base(log, codes, ticks, np.max(np.stack(caps), axis=0))


#: A tree node's verdict that leaves its branch open.
OPEN = ("UNKNOWN", "CRASHED", "MODEL_INVALID", "NOT TRIED")


def tree_target(
    st: _State,
    per_type: np.ndarray,
    target: int,
    ask: Callable[[dict[int, int], bool], str],
    probes: int = 0,
) -> tuple[dict[str, int], bool]:
    """Target ``target`` refuted by a tree of partial cases (every smaller total
    refuted): the first level fixes the count of the first type (code order), each
    level below one more, as :func:`survivors` does; a node is first put to the boxes
    (:func:`~.boxbound.refuted`, ``probes`` shaving splits: a budget refuted there
    refutes every smaller count of its last type too, as budgets are "at most"), then
    to ``ask(counts, last)`` (``last``: every type counted): "INFEASIBLE" or "CUTS"
    closes the node's branch, "FOUND" (a model) stops the tree, any other answer
    splits the node into its children, or at the last level leaves the target open.
    Every valid model of ``target`` nodes has each type's count in one child of every
    node it lies below (:func:`case_model`'s cases: exact counts on the types fixed),
    so all branches closed refutes the target.  ``(answers, done)``: per verdict the
    nodes that got it ("SPLIT": answered otherwise and split; "BOXES": refuted by the
    boxes) and whether the tree ran to its end (False: a model was found)."""
    types = sorted(st.events)
    answers: dict[str, int] = {}
    extra = target - 2 - sum(int(per_type[t]) for t in types)

    def note(key: str) -> None:
        answers[key] = answers.get(key, 0) + 1

    def grow(budget: dict[int, int], level: int, left: int) -> bool:
        # False when a model was found
        t = types[level]
        last = level == len(types) - 1
        for x in range(left, -1, -1) if not last else [left]:
            nxt = {**budget, t: int(per_type[t]) + x}
            if refuted(st, nxt, probes=probes):
                note("BOXES")
                break  # below a refuted budget every budget is refuted
            got = ask(nxt, last)
            if got == "FOUND":
                note(got)
                return False
            if got in ("INFEASIBLE", "CUTS") or last:
                note(got)
                continue
            note("SPLIT")
            if not grow(nxt, level + 1, left - x):
                return False
        return True

    if extra < 0 or not types:
        return answers, True
    return answers, grow({}, 0, extra)


@dataclass
class _Asker:
    """:func:`tree_target`'s ``ask`` for one target of :func:`settle`: the partial case
    on a copy of ``base`` (:func:`case_on_base`) solved within ``budgets`` (deterministic
    seconds: per node above the last level, per node at the last, in all); a model found
    is checked by the engine's checker (AssertionError otherwise: a cut would be unsound)
    and kept in ``found``.  ``spent``: deterministic seconds charged (at least
    ``ROUND_COST`` a run), ``det``: spent by CP-SAT."""

    base: Any
    data: tuple[EventLog, TimedCodes, np.ndarray]
    target: int
    per_type: np.ndarray
    st: _State
    budgets: tuple[float, float, float]
    max_apart: int
    seed: int
    spent: float = 0.0
    det: float = 0.0
    found: PartitionModel | None = None

    def __call__(self, counts: dict[int, int], last: bool) -> str:
        log, codes, ticks = self.data
        node, leaf, total = self.budgets
        if total - self.spent <= 1e-3:
            return "NOT TRIED"
        got = case_on_base(
            self.base,
            log,
            codes,
            ticks,
            counts,
            self.target,
            self.per_type,
            self.max_apart,
            self.st,
        )
        if got is None:
            return "CUTS"
        b, _ = got
        run = _run(cp_model(), b, min(leaf if last else node, total - self.spent), self.seed)
        if run is None:
            return "CRASHED"
        name, values, _, det = run
        self.spent += max(det, ROUND_COST)
        self.det += det
        if values is None:
            return name
        model = _model_of(b, values)
        if not valid(model, codes, ticks) or model.n_nodes != self.target:
            raise AssertionError("CP-SAT's model contradicts the cuts: one is unsound")
        self.found = model
        return "FOUND"


@dataclass(frozen=True)
class Settled:
    """:func:`settle`'s answer: every valid model has at least ``low`` nodes and
    ``high`` is the smallest valid model known (``model``: it, checked; None when only
    the given one); ``low == high``: the minimum.  ``tries``: per target ``(target,
    budgets the boxes leave, answers per budget ("INFEASIBLE: 3, UNKNOWN: 1", "CUTS":
    the cuts alone), deterministic seconds)``; ``per_type``: the per-type bounds used."""

    low: int
    high: int
    model: PartitionModel | None
    tries: list[tuple[int, int, str, float]]
    per_type: np.ndarray


def settle(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    high: int,
    budget: float,
    seed: int = 0,
    per_type: np.ndarray | None = None,
    probes: int = 0,
    case_budget: float = 60.0,
    max_cases: int = 400,
    max_apart: int = 20_000,
    split: bool = True,
    depth: int | None = None,
    report: Callable[[str], None] | None = None,
    low: int | None = None,
    cheap: bool = True,
    tree: bool = False,
    node_budget: float = 10.0,
) -> Settled:
    """Deepening on the total (module doc) from :func:`~.boxbound.box_bound`'s bound
    (from ``per_type``, default :func:`~.perfume_cpsat.type_lows`; ``probes`` shaving
    splits, also for the budgets) up to ``high - 1`` (``high``: a valid model's nodes),
    within ``budget`` deterministic seconds of CP-SAT (one worker, seed ``seed``; at
    most ``case_budget`` per budget, each charged at least ``ROUND_COST``).  Per target
    ``N`` (every smaller one refuted): the budgets of :func:`survivors` (at most
    ``max_cases``, else stop), each asked by :func:`case_model`; all INFEASIBLE (or
    refuted by the cuts) raises the bound to ``N + 1``; a model found (the engine's
    checker must pass it, else AssertionError: a cut would be unsound) is the minimum;
    otherwise the search stops there (the other budgets are still tried for a model).
    ``depth``: the cases fix the counts of that many types only (:func:`survivors`).
    ``split`` False: one :func:`target_model` per target instead (``case_budget`` each).
    ``report``: called with a line per target answered (progress).  ``low``: a bound
    proved before (every valid model has at least that many nodes), to start from when
    above the boxes' bound.  ``cheap`` (split only): each target's formulation is built
    once (:func:`case_base`, caps the largest of its cases') and every case asked on a
    copy (:func:`case_on_base`, the same valid models as :func:`case_model`'s); False:
    :func:`case_model` builds it again per case.  ``tree``: each target by
    :func:`tree_target` instead of the list of cases (``split``, ``depth``, ``max_cases``
    and ``cheap`` unused): partial cases on one base model per target (caps
    :func:`target_caps`), at most ``node_budget`` deterministic seconds per node above
    the last level (``case_budget`` at the last); ``tries`` then counts the nodes asked
    and their verdicts ("SPLIT", "BOXES": :func:`tree_target`)."""
    bb = box_bound(log, codes, ticks, per_type, probes=probes)
    per = np.asarray(bb.per_type, dtype=np.int64)
    low = bb.bound if low is None else max(low, bb.bound)
    run = _Run((log, codes, ticks), per, box_state(log, codes, ticks), seed, max_apart, report)
    if tree:
        low, found = _settle_tree(run, low, high, budget, probes, node_budget, case_budget)
    else:
        low, found = _settle_cases(
            run, low, high, budget, probes, case_budget, max_cases, split, depth, cheap
        )
    high = high if found is None else found.n_nodes
    return Settled(low, high, found, run.tries, per)


@dataclass
class _Run:
    """What :func:`settle`'s two ways share: the log (``data``), the per-type bounds
    ``per``, its :func:`box_state` ``st`` (every case's boxes start from it), CP-SAT's
    ``seed``, ``max_apart``, ``report`` and the ``tries`` made (:class:`Settled`)."""

    data: tuple[EventLog, TimedCodes, np.ndarray]
    per: np.ndarray
    st: _State
    seed: int
    max_apart: int
    report: Callable[[str], None] | None
    tries: list[tuple[int, int, str, float]] = field(default_factory=list)

    def note(self, target: int, asked: int, answers: dict[str, int], det: float, what: str) -> None:
        """Records target ``target``'s ``answers`` (``asked`` cases or nodes, ``det``
        deterministic seconds) in ``tries`` and reports it."""
        text = ", ".join(f"{k}: {n}" for k, n in sorted(answers.items()))
        self.tries.append((target, asked, text, det))
        if self.report is not None:
            self.report(f"target {target}: {asked} {what}, {text}, {det:.1f} det s")


def _settle_tree(
    run: _Run,
    low: int,
    high: int,
    budget: float,
    probes: int,
    node_budget: float,
    case_budget: float,
) -> tuple[int, PartitionModel | None]:
    """:func:`settle` with ``tree``: targets from ``low`` by :func:`tree_target`, each on
    one base model (caps :func:`target_caps`); ``(bound, a model found or None)``."""
    log, codes, ticks = run.data
    present = log.type_counts > 0
    spent = 0.0
    while low < high and budget - spent > 1e-3:
        ask = _Asker(
            case_base(log, codes, ticks, np.maximum(target_caps(run.per, present, low), 1)),
            run.data,
            low,
            run.per,
            run.st,
            (node_budget, case_budget, budget - spent),
            run.max_apart,
            run.seed,
        )
        verdicts, _ = tree_target(run.st, run.per, low, ask, probes)
        spent += ask.spent
        run.note(low, sum(verdicts.values()), verdicts, ask.det, "nodes")
        if ask.found is not None:
            return low, ask.found
        if not set(verdicts) <= {"INFEASIBLE", "CUTS", "SPLIT", "BOXES"}:
            break
        low += 1
    return low, None


def _settle_cases(
    run: _Run,
    low: int,
    high: int,
    budget: float,
    probes: int,
    case_budget: float,
    max_cases: int,
    split: bool,
    depth: int | None,
    cheap: bool,
) -> tuple[int, PartitionModel | None]:
    """:func:`settle` without ``tree``: targets from ``low``, each by the list of its
    cases (:func:`survivors`; one :func:`target_model` when not ``split``); ``(bound, a
    model found or None)``."""
    log, codes, ticks = run.data
    per, st, max_apart = run.per, run.st, run.max_apart
    cp = cp_model()
    spent = 0.0
    while low < high and budget - spent > 1e-3:
        cases: list[dict[int, int]] | None = [{}]
        if split:
            cases = survivors(log, codes, ticks, per, low, probes, depth, max_cases)
        if cases is None or len(cases) > max_cases:
            run.tries.append((low, -1 if cases is None else len(cases), "TOO MANY", 0.0))
            break
        answers: dict[str, int] = {}
        det_here = 0.0
        base = None
        if split and cheap:
            base = _base_for(log, codes, ticks, cases, low, per)
        for v in cases:
            if budget - spent <= 1e-3:
                answers["NOT TRIED"] = answers.get("NOT TRIED", 0) + 1
                continue
            if base is not None:
                got = case_on_base(base, log, codes, ticks, v, low, per, max_apart, st)
            elif split:
                got = case_model(log, codes, ticks, v, low, per, max_apart, st)
            else:
                got = target_model(log, codes, ticks, per, low, max_apart, st)
            if got is None:
                answers["CUTS"] = answers.get("CUTS", 0) + 1
                continue
            b, _ = got
            solved = _run(cp, b, min(case_budget, budget - spent), run.seed)
            name = "CRASHED" if solved is None else solved[0]
            answers[name] = answers.get(name, 0) + 1
            if solved is None:
                continue
            _, values, _, det = solved
            spent += max(det, ROUND_COST)
            det_here += det
            if values is not None:
                model = _model_of(b, values)
                if not valid(model, codes, ticks) or model.n_nodes != low:
                    raise AssertionError("CP-SAT's model contradicts the cuts: one is unsound")
                run.note(low, len(cases), answers, det_here, "budgets")
                return low, model
        run.note(low, len(cases), answers, det_here, "budgets")
        if not set(answers) <= {"INFEASIBLE", "CUTS"}:
            break
        low += 1
    return low, None


def model_at_most(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    target: int,
    budget: float,
    seed: int = 0,
    per_type: np.ndarray | None = None,
    max_apart: int = 20_000,
) -> tuple[str, PartitionModel | None, float]:
    """``(CP-SAT's answer, a valid model of at most target nodes or None, deterministic
    seconds)``: :func:`target_model` (no assumption on smaller totals, so INFEASIBLE
    proves every valid model above ``target``) solved on one worker (seed ``seed``,
    ``budget`` deterministic seconds); "CUTS" when the cuts alone refute it.  The
    search side of the gap: a model found is checked by the engine's checker
    (AssertionError otherwise)."""
    per = np.asarray(box_bound(log, codes, ticks, per_type).per_type, dtype=np.int64)
    got = target_model(log, codes, ticks, per, target, max_apart)
    if got is None:
        return "CUTS", None, 0.0
    b, _ = got
    run = _run(cp_model(), b, budget, seed)
    if run is None:
        return "CRASHED", None, 0.0
    name, values, _, det = run
    if values is None:
        return name, None, det
    model = _model_of(b, values)
    if not valid(model, codes, ticks) or model.n_nodes > target:
        raise AssertionError("CP-SAT's model fails the checker")
    return name, model, det
