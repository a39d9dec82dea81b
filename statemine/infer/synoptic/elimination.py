"""Group elimination: drop one (type, region vector) group and re-assign whole traces.

A model in region terms (:mod:`.regions`) is one bit vector per event; the nodes are the
(type, vector) groups.  Given per type a set of allowed vectors, whether every trace can
take vectors from those sets is a chain problem along each trace: an event's vector must
agree with its forced bits, and two consecutive events in one free run of an invariant
must keep that run monotone (0s then 1s, or 1s then 0s).  Nothing else ties events
together, so a dynamic programme over each trace's events (states: the allowed vectors
of the event's type) decides it exactly, and finds the assignment that changes the
fewest events.

:func:`eliminate` uses that as a move: for each group (smallest first), forbid its
vector for its type and re-assign every trace holding one of its events; when every
such trace has an assignment, the group is gone (and others may empty on the way).  The
events of a trace may move to any allowed vector, not only along the bits one group
move forces (:func:`~.regions.regroup`), which is what the two-capture logs need: at
6,010 events the engine's 66-node model goes to 62 and at 10,027 events 57 to 53 in
0.1 CPU s (docs/synoptic-engine.md).  :func:`grow` goes further: while one group is
forbidden, every type may take any vector some group uses (new groups cost more), and
elimination follows; it trades groups of some types for more of others (20,023 events:
54 -> 50 nodes).  :func:`recombine` mixes two models trace by trace (the rules tie only
events of one trace) and eliminates: 1,010 events 71-72 -> 68-70 nodes.  Every state
obeys the rules, so every model is sound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .check import InvariantCodes
from .log import EventLog
from .model import PartitionModel
from .regions import (
    FreeRuns,
    _pack,
    grouped,
    model_vectors,
    neighbourhood_search,
    regroup_coarsen,
)


@dataclass(frozen=True)
class Chain:
    """Per event, packed over the invariants (bit j = invariant j): ``mask`` (bits
    forced), ``value`` (their values), ``up`` / ``down`` (invariants whose free run
    holds this event and the one before it, with 0s then 1s / 1s then 0s: the previous
    event's bit at most / at least this one's); the log's type codes, trace offsets and
    each event's trace as lists."""

    mask: list[int]
    value: list[int]
    up: list[int]
    down: list[int]
    codes: list[int]
    starts: list[int]
    trace_of: list[int]


def chain(log: EventLog, runs: FreeRuns) -> Chain:
    """The :class:`Chain` of ``log`` under ``runs`` (:func:`~.regions.free_runs`)."""
    free = runs.forced < 0
    same = np.zeros_like(free)
    same[1:] = free[1:] & free[:-1] & (runs.lo[1:] == runs.lo[:-1])
    rising = (runs.first == 0)[None, :]
    return Chain(
        _pack(runs.forced >= 0),
        _pack(runs.forced > 0),
        _pack(same & rising),
        _pack(same & ~rising),
        log.codes.tolist(),
        log.starts.tolist(),
        log.trace_of.tolist(),
    )


#: :func:`assign_trace`'s costs of moving an event to a vector its type's groups use and
#: to one they do not (a new group: :func:`grow`); 2 : 3 reached 50 nodes on the
#: 20,023-event two-capture log where 10 : 1 and 100 : 1 stopped at 52.
CHANGE_COST = 2
OPEN_COST = 3
#: :func:`grow` skips a move that opens more new groups than this (at 20,023 events
#: the moves that paid opened 3 and 8; none of the 9 that opened more gained, and
#: they cost most of the pass).
GROW_MAX_NEW = 8


def assign_trace(
    ch: Chain,
    vec: list[int],
    allowed: list[set[int]],
    k: int,
    present: list[set[int]] | None = None,
) -> list[int] | None:
    """Vectors for trace ``k``'s events from ``allowed`` (per type) obeying the rules,
    changing the fewest of ``vec`` (ties: the smallest vectors); None when none exists.
    With ``present`` (per type, the vectors its groups use) a change costs
    ``CHANGE_COST`` into a present vector and ``OPEN_COST`` into another one, and the
    cost is minimised.  Exact: a dynamic programme along the trace."""
    lo, hi = ch.starts[k], ch.starts[k + 1]
    layers: list[dict[int, tuple[int, int]]] = []
    prev: dict[int, tuple[int, int]] = {}
    options: dict[int, list[int]] = {}  # per type, its allowed vectors in order
    ranked: list[tuple[int, int]] = []  # ``prev``'s vectors and costs, by cost (stable)
    for x in range(lo, hi):
        mask, value, up, down = ch.mask[x], ch.value[x], ch.up[x], ch.down[x]
        cur: dict[int, tuple[int, int]] = {}
        t = ch.codes[x]
        if t not in options:
            options[t] = sorted(allowed[t])
        for v in options[t]:
            if v & mask != value:
                continue
            if present is None:
                cost = int(v != vec[x])
            else:
                cost = 0 if v == vec[x] else CHANGE_COST if v in present[t] else OPEN_COST
            if x == lo:
                cur[v] = (cost, -1)
                continue
            for u, c in ranked:  # by cost, then order: the first that fits is the best
                if not (u & ~v & up or v & ~u & down):  # else a free run would fall (rise)
                    cur[v] = (c + cost, u)
                    break
        if not cur:
            return None
        layers.append(cur)
        prev = cur
        ranked = sorted(((u, c) for u, (c, _) in prev.items()), key=lambda uc: uc[1])
    v = min(prev, key=lambda u: (prev[u][0], u))
    out = []
    for layer in reversed(layers):
        out.append(v)
        v = layer[v][1]
    return out[::-1]


def eliminate(ch: Chain, vectors: list[int], memory: dict[int, int] | None = None) -> list[int]:
    """``vectors`` (bits obeying the rules, per event) with groups dropped while one can
    be: per type in order, its groups smallest first (ties: the smaller vector), forbid
    the group's vector and re-assign every trace holding one of its events
    (:func:`assign_trace`); keep the change when all have an assignment.  Passes repeat
    until one drops nothing.  ``memory``: per group key, the trace whose re-assignment
    failed last (tried first next time: the outcome does not depend on the order, only
    the cost), kept between calls by the caller.  Deterministic; never more (type,
    vector) groups."""
    vec = list(vectors)
    n_types = max(ch.codes) + 1
    memory = {} if memory is None else memory
    groups = _Groups.of(ch, vec, n_types)
    while True:
        dropped = False
        for t in range(n_types):
            while _drop_one(ch, vec, t, groups, memory):
                dropped = True
        if not dropped and not _drop_pair(ch, vec, groups, n_types, memory):
            return vec


@dataclass
class _Groups:
    """The groups of a state: per type the vectors its events use (``allowed``) and per
    type, per vector, its events (``members``)."""

    allowed: list[set[int]]
    members: list[dict[int, set[int]]]

    @classmethod
    def of(cls, ch: Chain, vec: list[int], n_types: int) -> _Groups:
        members: list[dict[int, set[int]]] = [{} for _ in range(n_types)]
        for x, (c, v) in enumerate(zip(ch.codes, vec)):
            members[c].setdefault(v, set()).add(x)
        return cls([set(m) for m in members], members)

    def write(self, ch: Chain, vec: list[int], k: int, new: list[int]) -> None:
        """Give trace ``k``'s events the vectors ``new`` in ``vec`` (in place) and in
        the groups."""
        lo = ch.starts[k]
        for x, v in enumerate(new, lo):
            old = vec[x]
            if old == v:
                continue
            c = ch.codes[x]
            by_vector = self.members[c]
            by_vector[old].discard(x)
            if not by_vector[old]:
                del by_vector[old]
                self.allowed[c].discard(old)
            by_vector.setdefault(v, set()).add(x)
            self.allowed[c].add(v)
            vec[x] = v


def _reassign(
    ch: Chain,
    vec: list[int],
    groups: _Groups,
    traces: set[int],
    memory: dict[int, int],
    key: int,
) -> bool:
    """Re-assign every trace of ``traces`` under ``groups.allowed``
    (:func:`assign_trace`): when each has an assignment, write them into ``vec`` and
    ``groups`` (in place) and return True; else leave both as they were and return
    False (``memory[key]``: the trace that failed, tried first next time)."""
    order = sorted(traces)
    if memory.get(key, -1) in traces:
        order.remove(memory[key])
        order.insert(0, memory[key])
    new = {}
    for k in order:
        got = assign_trace(ch, vec, groups.allowed, k)
        if got is None:
            memory[key] = k
            return False
        new[k] = got
    for k, got in new.items():
        groups.write(ch, vec, k, got)
    return True


def _drop_pair(
    ch: Chain,
    vec: list[int],
    groups: _Groups,
    n_types: int,
    memory: dict[int, int],
) -> bool:
    """Drop two groups at once from ``vec`` (in place; ``groups``: its groups, left as
    they were): a group and the group that most often holds the event right after one
    of its events, when that is at least half of them (``tlp`` then ``TailLossProbe``:
    one cannot go without the other); whether a pair was dropped."""
    keys: list[int] = []  # per dense group id, its key (vector * n_types + type)
    ids = np.empty(len(vec), dtype=np.int64)
    members: dict[int, set[int]] = {}
    for t, by_vector in enumerate(groups.members):
        for v, xs in by_vector.items():
            members[v * n_types + t] = xs
            ids[list(xs)] = len(keys)
            keys.append(v * n_types + t)
    inside = np.ones(max(len(vec) - 1, 0), dtype=bool)  # event x and x + 1 in one trace
    inside[np.asarray(ch.starts[1:-1], dtype=np.int64) - 1] = False
    both, counts = np.unique(ids[:-1][inside] * len(keys) + ids[1:][inside], return_counts=True)
    follow: dict[int, dict[int, int]] = {}
    for code, count in zip(both.tolist(), counts.tolist()):
        follow.setdefault(keys[code // len(keys)], {})[keys[code % len(keys)]] = count
    allowed = groups.allowed
    for g in sorted(members, key=lambda u: (len(members[u]), u)):
        if not follow.get(g):
            continue
        h = max(follow[g], key=lambda u: (follow[g][u], -u))
        if h == g or 2 * follow[g][h] < len(members[g]):
            continue
        pair = [(g % n_types, g // n_types), (h % n_types, h // n_types)]
        if any(len(allowed[t]) <= 1 for t, _ in pair) or pair[0][0] == pair[1][0]:
            continue
        for t, v in pair:
            allowed[t].discard(v)
        traces = {ch.trace_of[x] for x in members[g] | members[h]}
        if _reassign(ch, vec, groups, traces, memory, -1 - g):
            return True
        for t, v in pair:
            allowed[t].add(v)
    return False


def _drop_one(
    ch: Chain,
    vec: list[int],
    t: int,
    groups: _Groups,
    memory: dict[int, int],
) -> bool:
    """Drop one group of type ``t`` from ``vec`` and ``groups`` (in place) as
    :func:`eliminate` does; whether one was dropped."""
    members, allowed = groups.members[t], groups.allowed
    if len(members) <= 1:
        return False
    for v in sorted(members, key=lambda u: (len(members[u]), u)):
        allowed[t].discard(v)
        if _reassign(
            ch, vec, groups, {ch.trace_of[x] for x in members[v]}, memory, v * len(allowed) + t
        ):
            return True
        allowed[t].add(v)
    return False


def grow(ch: Chain, vectors: list[int]) -> list[int]:
    """``vectors`` (bits obeying the rules, per event) after one pass of a move that may
    *add* groups to drop more: for each group (smallest first, ties: the smaller key),
    forbid its vector for its type and re-assign the traces holding its events, every
    type allowed its own vectors and any vector some group of the model uses (new
    groups cost more than existing ones: :func:`assign_trace` with ``present``), then
    :func:`eliminate`; kept when the (type, vector) groups fall.  At 20,023 events
    (two capture files) the engine's 52 groups go to 48: one more of Init and
    SlowStart, fewer of six other types, the trade CP-SAT's 50-node model makes.
    Deterministic; never more groups."""
    vec = list(vectors)
    n_types = max(ch.codes) + 1
    groups = _Groups.of(ch, vec, n_types)
    size = sum(len(m) for m in groups.members)
    memory: dict[int, int] = {}
    order = [(t, v) for t, m in enumerate(groups.members) for v in m]
    order.sort(key=lambda g: (len(groups.members[g[0]][g[1]]), g[1] * n_types + g[0]))
    for t, v in order:
        events = groups.members[t].get(v)
        if events is None:
            continue  # gone with an earlier move
        present = groups.allowed
        anywhere = set().union(*present)
        allowed = [p | anywhere for p in present]
        allowed[t].discard(v)
        new = list(vec)
        opened: set[tuple[int, int]] = set()
        for k in sorted({ch.trace_of[x] for x in events}):
            got = assign_trace(ch, vec, allowed, k, present)
            if got is None:
                break
            lo = ch.starts[k]
            new[lo : ch.starts[k + 1]] = got
            opened.update(
                (c, w) for c, w in zip(ch.codes[lo : lo + len(got)], got) if w not in present[c]
            )
        else:
            if len(opened) > GROW_MAX_NEW:
                continue  # never recovered on the two-capture logs (costly to try)
            out = eliminate(ch, new, memory)
            if len(set(zip(out, ch.codes))) < size:
                vec, groups = out, _Groups.of(ch, out, n_types)
                size = sum(len(m) for m in groups.members)
    return vec


def grow_coarsen(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    runs: FreeRuns,
    rng: np.random.Generator,
) -> PartitionModel:
    """One :func:`grow` pass from ``model``'s region bits after :func:`eliminate`
    (arguments as :func:`eliminate_coarsen`), coarsened and finished by
    :func:`eliminate_coarsen`; kept when smaller (a second pass gained nothing at
    20,023 events for as much CPU again).  Sound, never larger than ``model``;
    deterministic for ``rng``."""
    from .coarsen import coarsen

    ch = chain(model.log, runs)
    vec = eliminate(ch, model_vectors(model, inv.select(failing)))
    out = grow(ch, vec)
    if out == vec:
        return model
    found = coarsen(grouped(model.log, out), inv, rng)
    found = eliminate_coarsen(found, inv, failing, runs, rng)
    return found if found.n_nodes < model.n_nodes else model


def eliminate_coarsen(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    runs: FreeRuns,
    rng: np.random.Generator,
) -> PartitionModel:
    """:func:`eliminate` from ``model``'s region bits (``model`` satisfies every
    invariant of ``inv``; ``failing``: those failing on the initial model, ``runs``
    their :func:`~.regions.free_runs`), coarsen, :func:`~.regions.regroup_coarsen`, and
    again while the node count falls.  Sound, never larger than ``model``;
    deterministic for ``rng``."""
    from .coarsen import coarsen

    sub = inv.select(failing)
    ch = chain(model.log, runs)
    while True:
        vec = model_vectors(model, sub)
        found = coarsen(grouped(model.log, eliminate(ch, vec)), inv, rng)
        found = regroup_coarsen(found, inv, failing, rng, runs)
        if found.n_nodes >= model.n_nodes:
            return model
        model = found


def elimination_search(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    runs: FreeRuns,
    rng: np.random.Generator,
    rounds: int,
    bound: int = 0,
) -> PartitionModel:
    """:func:`eliminate_coarsen` from ``model``, then ``rounds`` rounds of
    :func:`~.regions.neighbourhood_search` (one to three seeded invariants' columns
    re-drawn, regrouped, coarsened), each round's model finished by
    :func:`eliminate_coarsen`; stops at ``bound`` nodes.  Sound, never larger than
    ``model``; deterministic for ``rng``."""
    best = eliminate_coarsen(model, inv, failing, runs, rng)
    return neighbourhood_search(
        best,
        inv,
        failing,
        runs,
        rng,
        rounds,
        bound,
        lambda found: eliminate_coarsen(found, inv, failing, runs, rng),
    )


def mixed(ch: Chain, vectors: list[int], other: list[int], take: np.ndarray) -> list[int]:
    """``vectors`` with the events of every trace ``k`` where ``take[k]`` given
    ``other``'s vectors (both obeying the rules: the rules tie only events of one
    trace, so the mixture obeys them too)."""
    out = list(vectors)
    for k in np.flatnonzero(take).tolist():
        lo, hi = ch.starts[k], ch.starts[k + 1]
        out[lo:hi] = other[lo:hi]
    return out


def recombine(
    model: PartitionModel,
    others: list[PartitionModel],
    inv: InvariantCodes,
    failing: np.ndarray,
    runs: FreeRuns,
    rng: np.random.Generator,
    rounds: int,
    bound: int = 0,
) -> PartitionModel:
    """Recombination: for ``rounds`` rounds, give a seeded share of the traces
    (30-70%) of the current model's region bits those of a seeded partner from
    ``others`` (sound models of the same log), :func:`eliminate` (the mixture has the
    groups of both; most go), coarsen and :func:`eliminate_coarsen`; the result
    replaces the current model when it has no more nodes (a plateau move) and joins the
    partners.  Stops at ``bound`` nodes.  Returns the last current model when it is
    smaller than ``model``, else ``model`` itself (at 20,023 events a plateau move left
    grow at 52 nodes on seed 4, where it reaches 50 from ``model``).  Sound, never larger
    than ``model``; deterministic for ``rng``."""
    from .coarsen import coarsen

    sub = inv.select(failing)
    log = model.log
    ch = chain(log, runs)
    partners = [model_vectors(m, sub) for m in others]
    best = model
    vec = model_vectors(best, sub)
    for _ in range(rounds):
        if best.n_nodes <= bound or not partners:
            break
        other = partners[int(rng.integers(len(partners)))]
        take = rng.random(log.n_traces) < rng.uniform(0.3, 0.7)
        out = eliminate(ch, mixed(ch, vec, other, take))
        found = coarsen(grouped(log, out), inv, rng)
        found = eliminate_coarsen(found, inv, failing, runs, rng)
        partners.append(model_vectors(found, sub))
        if found.n_nodes <= best.n_nodes:
            best, vec = found, partners[-1]
    return best if best.n_nodes < model.n_nodes else model
