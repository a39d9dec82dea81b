"""Region bits: a model as one bit vector per event, and a local search over them.

For an invariant that fails on the initial model (one node per type), a refined model
satisfies it iff some set of its nodes, the invariant's *region*, exists with:

* ``a AlwaysPrecedes b``: INITIAL's successors that are no ``a`` node are in it, it is
  closed under edges into non-``a`` nodes, and holds no ``a`` or ``b`` node (the nodes
  INITIAL reaches avoiding ``a`` nodes are such a set, and any such set contains them);
* ``a AlwaysFollowedBy b`` (``a`` may be INITIAL): TERMINAL's non-``b`` predecessors are
  in it, it is closed under edges from non-``b`` nodes, and holds no ``b`` node and no
  successor of an ``a`` node (the nodes reaching TERMINAL avoiding ``b`` nodes);
* ``a NeverFollowedBy b``: the successors of ``a`` nodes are in it, it is closed under
  edges, and holds no ``b`` node (the nodes reached from an ``a`` node in one step or more).

Give every event its node's region bit per invariant.  Then along each trace the bits
obey local rules: some events' bits are forced (``forced``: an ``a AP b`` event with no
``a`` before it is in the region, one with a ``b`` later and no ``a`` in between is not,
...), and between forced events, in *free runs* that never cross a reset (an ``a`` event
for AP, a ``b`` for AFby), the bits are monotone (AP, NFby: 0s then 1s; AFby: 1s then
0s), because the region is closed along the trace's edges.  Conversely, any bits obeying
the rules that are equal on the events of a node give regions satisfying every
invariant, so the model with one node per (type, bit vector) is sound, and no model of the
log has fewer nodes than the fewest (type, vector) pairs over all such bit assignments.
Model search thus becomes a search over bit assignments: :func:`regroup` moves every event
of one (type, vector) group to another vector of its type, setting the bits the rules
then force in the same free runs, when that lowers the number of groups.  Every
intermediate state is a sound model: no repair step is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .bounds import _Occurrences
from .check import InvariantCodes
from .log import EventLog
from .model import INIT_NODE, TERM_NODE, PartitionModel
from .refine import _reach


@dataclass(frozen=True)
class FreeRuns:
    """Per event and invariant (``(n_events, m)`` arrays): ``forced`` (0 / 1, -1 when the
    bit is free), ``lo``/``hi`` (the event's free run ``[lo, hi)`` in log positions, -1
    when forced); per invariant ``first``, the bit value the runs start with (0: 0s then
    1s, 1: 1s then 0s)."""

    forced: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    first: np.ndarray


def free_runs(log: EventLog, inv: InvariantCodes) -> FreeRuns:
    """The forced bits and free runs of every event under every invariant of ``inv``
    (invariants that fail on the initial model; module doc)."""
    occ = _Occurrences(log)
    n, m = log.n_events, len(inv)
    codes = log.codes
    forced = np.full((n, m), -1, dtype=np.int8)
    first = np.zeros(m, dtype=np.int8)
    for i in range(m):
        kind, a, b = int(inv.kind[i]), int(inv.a[i]), int(inv.b[i])
        col = forced[:, i]
        if kind == 2:  # a AP b: region = reached from INITIAL avoiding a
            col[occ.prev(a) < 0] = 1
            col[(occ.next(b) < occ.next(a)) & (occ.next(b) < n)] = 0
            col[(codes == a) | (codes == b)] = 0
        elif kind == 0:  # a AFby b: region = reaches TERMINAL avoiding b
            prev_b = occ.prev(b)
            col[(prev_b < 0) if a < 0 else (occ.prev(a) > prev_b) | (codes == a)] = 0
            col[occ.next(b) >= n] = 1
            col[codes == b] = 0
            first[i] = 1
        else:  # a NFby b: region = reached from an a in >= 1 step
            col[occ.next(b) < n] = 0
            col[codes == b] = 0
            col[occ.prev(a) >= 0] = 1
    free = forced < 0
    pos = np.arange(n)[:, None]
    opens = free.copy()
    opens[1:] &= ~free[:-1]
    opens[log.starts[:-1]] = free[log.starts[:-1]]
    closes = free.copy()
    closes[:-1] &= ~free[1:]
    closes[log.starts[1:] - 1] = free[log.starts[1:] - 1]
    lo = np.maximum.accumulate(np.where(opens, pos, -1), axis=0)
    hi = np.minimum.accumulate(np.where(closes, pos + 1, n + 1)[::-1], axis=0)[::-1]
    return FreeRuns(forced, np.where(free, lo, -1), np.where(free, hi, -1), first)


def region_bits(model: PartitionModel, inv: InvariantCodes) -> np.ndarray:
    """``(n_nodes, m)`` bool: each node's membership in each invariant's region (the
    smallest region of the module doc; the model must satisfy every invariant)."""
    adj = model.edge_counts() > 0
    succ = [np.nonzero(row)[0].tolist() for row in adj]
    pred = [np.nonzero(col)[0].tolist() for col in adj.T]
    nt = model.node_type
    out = np.zeros((model.n_nodes, len(inv)), dtype=bool)
    for i in range(len(inv)):
        kind, a, b = int(inv.kind[i]), int(inv.a[i]), int(inv.b[i])
        if kind == 2:
            out[:, i] = _reach(succ, [INIT_NODE], nt == a, include_starts=False)
        elif kind == 0:
            out[:, i] = _reach(pred, [TERM_NODE], nt == b, include_starts=False)
        else:
            starts = np.nonzero(nt == a)[0].tolist()
            out[:, i] = _reach(succ, starts, np.zeros(len(nt), dtype=bool), include_starts=False)
    out[[INIT_NODE, TERM_NODE]] = False
    return out


def _pack(bits: np.ndarray) -> list[int]:
    """Each row of a bool matrix as a Python int (bit j = column j)."""
    out = [0] * len(bits)
    for lo in range(0, bits.shape[1], 62):
        chunk = bits[:, lo : lo + 62].astype(np.int64) @ (
            1 << np.arange(min(62, bits.shape[1] - lo))
        )
        out = [x | (int(c) << lo) for x, c in zip(out, chunk.tolist())]
    return out


def grouped(log: EventLog, vectors: list[int]) -> PartitionModel:
    """The model with one node per (type, vector) of the events (nodes numbered in order
    of their first event)."""
    n_types = len(log.types)
    groups: dict[int, list[int]] = {}
    for x, (v, t) in enumerate(zip(vectors, log.codes.tolist())):
        groups.setdefault(v * n_types + t, []).append(x)
    return _model_of(log, groups)


def _model_of(log: EventLog, groups: dict[int, list[int]]) -> PartitionModel:
    """The model whose nodes are the event lists of ``groups`` (numbered in order of
    their first event; a key's type is ``key % n_types``)."""
    n_types = len(log.types)
    keys = sorted(groups, key=lambda k: min(groups[k]))
    part = np.empty(log.n_events, dtype=np.int64)
    for node, key in enumerate(keys):
        part[groups[key]] = node + 2
    node_type = np.array([-1, -1] + [k % n_types for k in keys], dtype=np.int64)
    return PartitionModel(log, part, node_type)


def regroup_coarsen(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    rng: np.random.Generator,
    runs: FreeRuns | None = None,
) -> PartitionModel:
    """:func:`regroup` (over the invariants of ``inv`` that ``failing`` marks: those that
    fail on the initial model; ``runs``: their :func:`free_runs` when known) and
    :func:`~.coarsen.coarsen` in turn, while they lower the node count.  ``model`` must
    satisfy every invariant; the result does too, with no more nodes."""
    from .coarsen import coarsen

    sub = inv.select(failing)
    if runs is None:
        runs = free_runs(model.log, sub)
    coarsened = False
    while True:
        regrouped, moves = _regroup(model, sub, rng, runs)
        if coarsened and moves == 0 and regrouped.n_nodes == model.n_nodes:
            return model  # the same coarsened partition: coarsening merges nothing
        nxt = coarsen(regrouped, inv, rng)
        coarsened = True
        if nxt.n_nodes >= model.n_nodes:
            return model
        model = nxt


class _Search:
    """The state of :func:`regroup`: per event its vector, per (vector, type) key its
    events."""

    def __init__(
        self,
        model: PartitionModel,
        inv: InvariantCodes,
        runs: FreeRuns,
        vectors: list[int] | None = None,
    ):
        log = self.log = model.log
        self.n_types = len(log.types)
        self.codes = log.codes.tolist()
        self.forced = runs.forced >= 0
        self.lo, self.hi, self.first = runs.lo, runs.hi, runs.first.tolist()
        self._cols: dict[int, tuple[list[int], list[int]]] = {}
        if vectors is not None:
            self._from_vectors(vectors)
            return
        # nodes with one (type, vector) form one group (vectors per node, then per event)
        node_vec = np.array(_pack(region_bits(model, inv)), dtype=object)
        node_key = node_vec * self.n_types + model.node_type
        self.vec: list[int] = node_vec[model.part].tolist()
        order = np.argsort(model.part, kind="stable")
        bounds = np.searchsorted(model.part[order], np.arange(model.n_nodes + 1))
        node_fixed = _pack(np.logical_or.reduceat(self.forced[order], bounds[2:-1], axis=0))
        self.members: dict[int, list[int]] = {}
        #: per group, the bits forced for some of its events (dropped when it changes)
        self._fixed: dict[int, int] = {}
        for node in range(2, model.n_nodes):
            key = int(node_key[node])
            self.members.setdefault(key, []).extend(order[bounds[node] : bounds[node + 1]].tolist())
            self._fixed[key] = self._fixed.get(key, 0) | node_fixed[node - 2]
        self._index_types()

    def _from_vectors(self, vectors: list[int]) -> None:
        """One group per (type, vector) of the events' ``vectors`` (bits obeying the
        rules of the module doc)."""
        self.vec = list(vectors)
        self.members = {}
        self._fixed = {}
        for x, (v, t) in enumerate(zip(self.vec, self.codes)):
            self.members.setdefault(v * self.n_types + t, []).append(x)
        self._index_types()

    def _index_types(self) -> None:
        self.by_type: dict[int, set[int]] = {}
        for k in self.members:
            self.by_type.setdefault(k % self.n_types, set()).add(k)

    def fixed_bits(self, key: int) -> int:
        """The bits forced for some event of group ``key``."""
        if key not in self._fixed:
            rows = self.forced[self.members[key]]
            self._fixed[key] = _pack(np.any(rows, axis=0, keepdims=True))[0]
        return self._fixed[key]

    def run(self, j: int) -> tuple[list[int], list[int]]:
        """Free-run bounds of invariant ``j`` as lists (cached)."""
        if j not in self._cols:
            self._cols[j] = (self.lo[:, j].tolist(), self.hi[:, j].tolist())
        return self._cols[j]

    def move(self, src: int, dst: int) -> dict[int, int] | None:
        """New vectors of the other events that change when group ``src`` takes ``dst``'s
        vector (the bits its free runs then force), None when a forced bit would change."""
        events = self.members[src]
        target = dst // self.n_types
        diff = (src // self.n_types) ^ target
        if self.fixed_bits(src) & diff:
            return None
        new: dict[int, int] = {}
        vec, codes, n_types = self.vec, self.codes, self.n_types
        for j in range(diff.bit_length()):
            if not diff >> j & 1:
                continue
            bit = 1 << j
            val = target >> j & 1
            lo, hi = self.run(j)
            later = val != self.first[j]
            for x in events:
                span = range(x + 1, hi[x]) if later else range(x - 1, lo[x] - 1, -1)
                for y in span:
                    if (vec[y] >> j & 1) == val:
                        break  # the run is monotone: the rest already has val
                    if vec[y] * n_types + codes[y] == src:
                        continue  # a member: it takes the target vector
                    cur = new.get(y, vec[y])
                    if (cur >> j & 1) != val:
                        new[y] = cur ^ bit
        return new

    def _changes(self, src: int, dst: int, new: dict[int, int]) -> dict[int, int]:
        """Change in size per group when ``src`` joins ``dst`` and ``new`` applies."""
        size = len(self.members[src])
        change = {src: -size, dst: size}
        for x, v in new.items():
            t = self.codes[x]
            old = self.vec[x] * self.n_types + t
            key = v * self.n_types + t
            if old != key:
                change[old] = change.get(old, 0) - 1
                change[key] = change.get(key, 0) + 1
        return change

    def gain(self, src: int, dst: int, new: dict[int, int]) -> tuple[int, int]:
        """(change in groups, minus the change in the sum of squared group sizes) when
        ``src`` joins ``dst`` and the events of ``new`` take their new vectors."""
        groups = squares = 0
        for key, d in self._changes(src, dst, new).items():
            c = len(self.members.get(key, ()))
            groups += (c + d > 0) - (c > 0)
            squares += (c + d) ** 2 - c**2
        return groups, -squares

    def apply(self, src: int, dst: int, new: dict[int, int]) -> None:
        """Move group ``src`` into ``dst`` and give the events of ``new`` their new
        vectors."""
        fixed = self.fixed_bits(dst) | self.fixed_bits(src)
        target = dst // self.n_types
        events = self.members.pop(src)
        del self._fixed[src]
        self.by_type[src % self.n_types].discard(src)
        for x in events:
            self.vec[x] = target
        self.members[dst].extend(events)
        self._fixed[dst] = fixed
        for x, v in new.items():
            t = self.codes[x]
            old = self.vec[x] * self.n_types + t
            key = v * self.n_types + t
            self._fixed.pop(old, None)
            self._fixed.pop(key, None)
            self.members[old].remove(x)
            if not self.members[old]:
                del self.members[old]
                self.by_type[t].discard(old)
            if key not in self.members:
                self.members[key] = []
                self.by_type[t].add(key)
            self.members[key].append(x)
            self.vec[x] = v


def regroup(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator,
    max_sweeps: int = 50,
    runs: FreeRuns | None = None,
) -> PartitionModel:
    """Local search over region bits (module doc) from ``model``, which must satisfy every
    invariant of ``inv`` (the invariants failing on the initial model): in sweeps over the
    (type, vector) groups in a seeded order, move a group to the vector of another group
    of its type that lowers the number of groups most (ties: the largest gain in the sum
    of squared group sizes, which gathers events into fewer groups), while some move
    gains.  Returns the model with one node per group: sound, and with no more nodes than
    ``model`` (``runs``: the invariants' :func:`free_runs` when known).  Deterministic for
    ``rng``."""
    return _regroup(
        model, inv, rng, free_runs(model.log, inv) if runs is None else runs, max_sweeps
    )[0]


def random_vectors(runs: FreeRuns, rng: np.random.Generator) -> list[int]:
    """Region bits obeying the rules (module doc), packed per event: forced bits as
    forced, and every free bit of invariant ``j`` equal to one seeded coin per invariant
    (a constant run is monotone).  A start for :func:`regroup_vectors` far from the
    smallest regions a refined model gives (on a 619-event two-capture log the best of
    20 such starts has 51 nodes, the exact minimum, where every refined start gave 55)."""
    coins = np.asarray(rng.integers(0, 2, size=(1, runs.forced.shape[1])), dtype=np.int8)
    return _pack(np.where(runs.forced >= 0, runs.forced, coins).astype(bool))


def regroup_vectors(
    log: EventLog,
    inv: InvariantCodes,
    runs: FreeRuns,
    vectors: list[int],
    rng: np.random.Generator,
    max_sweeps: int = 50,
) -> PartitionModel:
    """:func:`regroup` from the one-node-per-(type, vector) model of ``vectors`` (bits
    obeying the rules of ``runs``, the :func:`free_runs` of ``inv``): sound, with no more
    nodes than that model.  Deterministic for ``rng``."""
    state = _Search(PartitionModel.initial(log), inv, runs, vectors)
    return _search_moves(state, rng, max_sweeps)[0]


def _regroup(
    model: PartitionModel,
    inv: InvariantCodes,
    rng: np.random.Generator,
    runs: FreeRuns,
    max_sweeps: int = 50,
) -> tuple[PartitionModel, int]:
    """:func:`regroup`'s model and the number of moves it made."""
    return _search_moves(_Search(model, inv, runs), rng, max_sweeps)


def _search_moves(
    state: _Search, rng: np.random.Generator, max_sweeps: int
) -> tuple[PartitionModel, int]:
    """:func:`regroup`'s sweeps from ``state``: the model of its final groups and the
    number of moves made."""
    moves = 0
    for _ in range(max_sweeps):
        improved = False
        keys = sorted(state.members)
        for k in rng.permutation(len(keys)).tolist():
            src = keys[k]
            if src not in state.members:
                continue
            best: tuple[tuple[int, int], int, dict[int, int]] | None = None
            for dst in sorted(state.by_type[src % state.n_types]):
                if dst == src:
                    continue
                new = state.move(src, dst)
                if new is None:
                    continue
                score = state.gain(src, dst, new)
                if best is None or score < best[0]:
                    best = (score, dst, new)
            if best is not None and best[0] < (0, 0):
                state.apply(src, best[1], best[2])
                improved = True
                moves += 1
        if not improved:
            break
    return _model_of(state.log, state.members), moves


def model_vectors(model: PartitionModel, inv: InvariantCodes) -> list[int]:
    """Per event, its node's region bits under ``inv`` (packed, bit j = invariant j;
    ``model`` satisfies every invariant of ``inv``): bits obeying the rules."""
    return np.array(_pack(region_bits(model, inv)), dtype=object)[model.part].tolist()


def perturbed_vectors(
    model: PartitionModel, inv: InvariantCodes, runs: FreeRuns, rng: np.random.Generator, k: int
) -> list[int]:
    """The region bits of ``model`` (which satisfies every invariant of ``inv``, the
    invariants of ``runs``) per event, with ``k`` seeded columns replaced: forced bits
    as forced, each free run constant (one coin per run).  Each column obeys the rules
    alone (module doc), so the result does too."""
    bits = region_bits(model, inv)[model.part]
    cols = rng.choice(bits.shape[1], size=min(k, bits.shape[1]), replace=False)
    forced = runs.forced[:, cols]
    # one coin per free run (a run is named by its first position; constant is monotone)
    table = rng.integers(0, 2, size=(bits.shape[0], len(cols))).astype(bool)
    coins = np.take_along_axis(table, np.maximum(runs.lo[:, cols], 0), axis=0)
    bits[:, cols] = np.where(forced >= 0, forced > 0, coins)
    return _pack(bits)


def neighbourhood_search(
    model: PartitionModel,
    inv: InvariantCodes,
    failing: np.ndarray,
    runs: FreeRuns,
    rng: np.random.Generator,
    rounds: int,
    bound: int = 0,
    finish: Callable[[PartitionModel], PartitionModel] | None = None,
) -> PartitionModel:
    """A large-neighbourhood search from ``model`` (which satisfies every invariant of
    ``inv``; ``failing``: those failing on the initial model, ``runs`` their
    :func:`free_runs`): for ``rounds`` rounds, replace one to three seeded invariants'
    columns of the current model's region bits (:func:`perturbed_vectors`), regroup
    (:func:`regroup_vectors`), coarsen and :func:`regroup_coarsen`, and keep the result
    when it has no more nodes than the current model (equal sizes move along a
    plateau); stops at ``bound`` nodes.  ``finish``: a last step for each round's model
    (sound in, sound out, e.g. :func:`~.elimination.eliminate_coarsen`).  Sound, never
    larger than ``model``; deterministic for ``rng``."""
    from .coarsen import coarsen

    sub = inv.select(failing)
    best = model
    for _ in range(rounds):
        if best.n_nodes <= bound:
            break
        k = int(rng.integers(1, 4))
        vectors = perturbed_vectors(best, sub, runs, rng, k)
        found = coarsen(regroup_vectors(best.log, sub, runs, vectors, rng), inv, rng)
        found = regroup_coarsen(found, inv, failing, rng, runs)
        if finish is not None:
            found = finish(found)
        if found.n_nodes <= best.n_nodes:
            best = found
    return best
