"""Perfume models built from the lower bound's witness (issue 31, helper "seed18"): an
experiment, not an engine path.

Per type, the per-type bound (``timeconflicts.timed_type_bounds``) rests on a clique of
events that pairwise conflict (in time, or by closing a timed cycle): no two share a
node in any valid model.  The *witness partition* seeds one node per clique member (the
*anchors*) and gives every other event of the type to a node it has no conflict with:
events by DSATUR's rule (Brelaz, CACM 1979: the fewest nodes still free for it first,
ties by more conflicts), each into the free node whose side values (``Sides``: the
maxima of ``P``/``S`` per bound) grow least (scaled by each bound's limit), a new node
only when none is free.  That is a proper colouring of every type's conflict graph with
close to its clique number of colours, but it ignores the untimed invariants and walks
through several nodes, so it is then made valid with the engine's own machinery:
``refine_timed`` (Synoptic's refinement for the untimed invariants, IntrBy splits,
stitch splits of violating walks), ``coarsen_sided``, ``polish`` -- the repair of
``colour_attempt``, from the witness instead of from the untimed-refined graph.

Variants (``--paths``): ``witness`` (the witness of Synoptic's initial graph, repaired as
above), ``untimed`` (the witness colouring inside each node of the untimed-refined
graph, then the same repair: ``colour_attempt`` with the witness instead of a seeded
first fit), ``guided`` (valid throughout: from the trace graph, one node per event, the
events witness node by witness node, each merged into the node its witness mates went
to when that merge keeps every invariant, else first fit into its type's other nodes,
else a new node), ``checked`` (:func:`checked_fit`: the anchors as the first nodes and
every merge checked; ``--variant`` picks the order and node choice, "time,first,none"
being ``first_fit_model`` itself), ``main`` (``infer_perfume``).  Whole-log searches
(no pieces): ``checked`` and ``guided`` cost a few CPU minutes past 2,000 events.
Results (all lose to main): docs/synoptic-engine.md, "Models built from the lower
bound's witness".

Run: ``python benchmarks/perfume_witness.py --events 600 --seeds 1,2,3`` (the log is
``interleaved_log(events, default_rng(events))``; prints per stage the nodes and CPU
seconds, and main's model of the same log and seed).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_perfume import load_conn

from statemine.infer.synoptic.graphbounds import largest_clique
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.perfume_infer import (
    COARSEN_FAILURES,
    COLOUR_BATCH_EVENTS,
    UNTIMED_STEPS,
    _TimedMerges,
    coarsen_sided,
    elapsed_ticks,
    first_fit_order,
    infer_perfume,
    polish,
    polish_budget,
    refine_timed,
    short_traces,
)
from statemine.infer.synoptic.refine import refine
from statemine.infer.synoptic.timecheck import (
    TimedCodes,
    bound_violations,
    intr_violations,
    timed_graph,
)
from statemine.infer.synoptic.timeconflicts import (
    Sides,
    cycle_conflicts,
    pair_conflicts,
    timed_sides,
)


def type_conflicts(
    log: EventLog, codes: TimedCodes, ticks: np.ndarray, sides: Sides, ev: np.ndarray
) -> np.ndarray:
    """Bool matrix over the same-type events ``ev``: the pair conflicts in time or closes
    a timed cycle (``timeconflicts``: no valid model has both in one node)."""
    p, s = sides.p[:, ev].T, sides.s[:, ev].T
    adj = np.zeros((len(ev), len(ev)), dtype=bool)
    for k in range(len(sides.limit)):
        rows, cols = np.isfinite(p[:, k]), np.isfinite(s[:, k])
        if rows.any() and cols.any():
            adj[np.ix_(rows, cols)] |= p[rows, k][:, None] + s[cols, k][None, :] > sides.limit[k]
    adj |= adj.T
    adj |= cycle_conflicts(log, codes, sides, ev, ticks)
    np.fill_diagonal(adj, False)
    return adj


def anchors(adj: np.ndarray) -> list[int]:
    """A largest clique of ``adj`` (as far as ``largest_clique``'s budget proves it),
    searched on the false-twin quotient and mapped back to vertex indices."""
    if not len(adj):
        return []
    _, keep = np.unique(adj, axis=0, return_index=True)
    keep = np.sort(keep)
    members, _ = largest_clique(adj[np.ix_(keep, keep)])
    return [int(keep[m]) for m in members]


def witness_colouring(
    adj: np.ndarray, p: np.ndarray, s: np.ndarray, limit: np.ndarray
) -> np.ndarray:
    """Per vertex of ``adj`` (events of one type; side values ``p``, ``s``: events x
    bounds, -inf where undefined; ``limit`` per bound) its colour: the anchors
    (:func:`anchors`) colours 0..m-1, then DSATUR order (fewest free colours first,
    ties by degree), each into the free colour whose scaled side maxima grow least,
    else a new colour.  A proper colouring of ``adj``."""
    n = len(adj)
    colour = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return colour
    scale = np.maximum(np.abs(limit), 1.0)
    base_p = np.where(np.isfinite(p), p, np.inf).min(axis=0)
    base_s = np.where(np.isfinite(s), s, np.inf).min(axis=0)
    base_p = np.where(np.isfinite(base_p), base_p, 0.0)
    base_s = np.where(np.isfinite(base_s), base_s, 0.0)
    pf = np.where(np.isfinite(p), p, base_p) / scale
    sf = np.where(np.isfinite(s), s, base_s) / scale
    cp: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    blocked = np.zeros((n, 0), dtype=bool)

    def open_colour(v: int) -> None:
        nonlocal blocked
        cp.append(pf[v].copy())
        cs.append(sf[v].copy())
        blocked = np.concatenate([blocked, adj[:, v : v + 1]], axis=1)
        colour[v] = len(cp) - 1

    for v in anchors(adj):
        open_colour(v)
    degree = adj.sum(axis=1)
    while (colour < 0).any():
        left = np.nonzero(colour < 0)[0]
        free = blocked.shape[1] - blocked[left].sum(axis=1)
        key = np.lexsort((-degree[left], free))
        v = int(left[key[0]])
        ok = np.nonzero(~blocked[v])[0]
        if not ok.size:
            open_colour(v)
            continue
        cpa, csa = np.asarray(cp)[ok], np.asarray(cs)[ok]
        grow = (np.maximum(cpa, pf[v]) - cpa).sum(axis=1) + (np.maximum(csa, sf[v]) - csa).sum(
            axis=1
        )
        c = int(ok[int(np.argmin(grow))])
        np.maximum(cp[c], pf[v], out=cp[c])
        np.maximum(cs[c], sf[v], out=cs[c])
        blocked[:, c] |= adj[:, v]
        colour[v] = c
    return colour


def witness_model(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    base: PartitionModel | None = None,
) -> tuple[PartitionModel, list[int]]:
    """The witness partition (module doc): every node of ``base`` (default: one node per
    type, Synoptic's initial graph) split by :func:`witness_colouring` of its events'
    conflicts; and the anchors (clique sizes) per node of ``base``."""
    if base is None:
        base = PartitionModel.initial(log)
    part = np.empty(log.n_events, dtype=np.int64)
    node_type = [-1, -1]
    cliques = []
    for node in range(2, base.n_nodes):
        ev = np.nonzero(base.part == node)[0]
        if not ev.size:
            continue
        adj = type_conflicts(log, codes, ticks, sides, ev)
        col = witness_colouring(adj, sides.p[:, ev].T, sides.s[:, ev].T, sides.limit)
        cliques.append(len(anchors(adj)))
        part[ev] = len(node_type) + col
        node_type += [int(base.node_type[node])] * int(col.max() + 1)
    return PartitionModel(log, part, np.asarray(node_type, dtype=np.int64)).compact(), cliques


def untimed_base(log: EventLog, codes: TimedCodes, rng: np.random.Generator) -> PartitionModel:
    """Synoptic's initial graph refined until the untimed invariants hold (step 1 of the
    engine's Perfume, as ``colour_attempt`` starts)."""
    model = PartitionModel.initial(log)
    if len(codes.untimed):
        model = refine(model, codes.untimed, rng, max_steps=UNTIMED_STEPS, finish="targeted")
    return model


def repaired(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    seed: int,
    polish_checks: int,
) -> tuple[list[int], float]:
    """``model`` made valid (``refine_timed``, violated bounds in batches of events / 50
    as after ``colour_attempt``'s colouring), coarsened (``coarsen_sided``) and polished
    (``polish`` with ``polish_budget(events, nodes, polish_checks)`` checks); the nodes
    after each of the three steps and the CPU seconds.  Asserts the result valid."""
    log = model.log
    rng = np.random.default_rng(seed)
    c0 = time.process_time()
    refined = refine_timed(
        model, codes, ticks, rng, None, max(1, log.n_events // COLOUR_BATCH_EVENTS)
    )
    coarse = coarsen_sided(refined, codes, ticks, rng, sides, COARSEN_FAILURES)
    checks = polish_budget(log.n_events, coarse.n_nodes, polish_checks)
    polished = polish(coarse, codes, ticks, sides, rng, checks)
    cpu = time.process_time() - c0
    assert broken(polished, codes, ticks) == (0, 0)
    return [refined.n_nodes, coarse.n_nodes, polished.n_nodes], cpu


def broken(model: PartitionModel, codes: TimedCodes, ticks: np.ndarray) -> tuple[int, int]:
    """(time bounds broken, IntrBy broken) on ``model``."""
    g = timed_graph(model.part, model.node_type, model.log, ticks)
    return (
        int(bound_violations(g, codes, len(model.log.types)).sum()),
        int(intr_violations(g, codes).sum()),
    )


def guided(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    witness: PartitionModel,
) -> PartitionModel:
    """Guided first fit (module doc): valid by construction, every merge checked on the
    whole log's trace graph (no stages: for logs up to ~1,000 events)."""
    n = log.n_events
    fine = PartitionModel(log, np.arange(n) + 2, np.concatenate([[-1, -1], log.codes]))
    merges = _TimedMerges(fine, codes, ticks)
    pn, sn = sides.node_values(fine.part, fine.n_nodes)
    el = elapsed_ticks(log, ticks)
    order = np.lexsort((el, witness.part))
    target: dict[int, int] = {}  # witness node -> the model node its first event formed
    placed: list[list[int]] = [[] for _ in log.types]
    for e in order.tolist():
        p = e + 2
        t = int(log.codes[e])
        w = int(witness.part[e])
        tried = []
        q0 = target.get(w)
        if q0 is not None:
            q0 = int(merges.group[q0])
            tried.append(q0)
        tried += [q for q in placed[t] if q != q0]
        done = False
        for q in tried:
            if pair_conflicts(pn[[q]], sn[[q]], sides.limit, pn[p], sn[p])[0]:
                continue
            if merges.doomed(q, p):
                continue
            if merges.merge(q, p):
                np.maximum(pn[q], pn[p], out=pn[q])
                np.maximum(sn[q], sn[p], out=sn[q])
                done = True
                if q0 is None:
                    target[w] = q
                break
        if not done:
            placed[t].append(p)
            target.setdefault(w, p)
    return PartitionModel(log, merges.group[fine.part], fine.node_type).compact()


def checked_fit(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    max_checks: int | None = None,
    order: str = "dsatur",
    choice: str = "grow",
    seed_anchors: bool = True,
) -> tuple[PartitionModel, int]:
    """Witness fit with every merge checked (module doc): from the trace graph, one node
    per type's anchor; then the event with the fewest nodes of its type still open to it
    (no time or cycle conflict, no failed merge: merging only adds walks and widens
    ranges, so a failed merge stays failed), ties by more conflicts, is merged into the
    open node whose scaled side maxima grow least and whose merge keeps every invariant,
    else becomes a node of its own.  Valid by construction.  Returns the model and the
    merge checks spent; past ``max_checks`` every event left becomes its own node.
    Variants (to tell which rule costs nodes): ``order`` "time" takes the events in
    ``first_fit_order`` instead; ``choice`` "first" the open nodes in creation order
    instead of by growth; ``seed_anchors`` False starts with no node."""
    n = log.n_events
    fine = PartitionModel(log, np.arange(n) + 2, np.concatenate([[-1, -1], log.codes]))
    merges = _TimedMerges(fine, codes, ticks)
    scale = np.maximum(np.abs(sides.limit), 1.0)
    per_type = []
    for t in range(len(log.types)):
        ev = np.nonzero(log.codes == t)[0]
        adj = type_conflicts(log, codes, ticks, sides, ev)
        p, s = sides.p[:, ev].T, sides.s[:, ev].T
        bp = np.where(np.isfinite(p), p, np.inf).min(axis=0)
        bs = np.where(np.isfinite(s), s, np.inf).min(axis=0)
        pf = np.where(np.isfinite(p), p, np.where(np.isfinite(bp), bp, 0.0)) / scale
        sf = np.where(np.isfinite(s), s, np.where(np.isfinite(bs), bs, 0.0)) / scale
        per_type.append((ev, adj, pf, sf))
    # per type: node list (event index within the type of its founder), blocked matrix
    nodes: list[list[int]] = [[] for _ in log.types]
    vals: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in log.types]
    blocked = [np.zeros((len(ev), 0), dtype=bool) for ev, _, _, _ in per_type]
    placed = [np.zeros(len(ev), dtype=bool) for ev, _, _, _ in per_type]
    members: list[list[list[int]]] = [[] for _ in log.types]

    def open_node(t: int, i: int) -> None:
        ev, adj, pf, sf = per_type[t]
        nodes[t].append(int(ev[i]) + 2)
        vals[t].append((pf[i].copy(), sf[i].copy()))
        members[t].append([i])
        blocked[t] = np.concatenate([blocked[t], adj[:, i : i + 1]], axis=1)
        placed[t][i] = True

    if seed_anchors:
        for t, (_, adj, _, _) in enumerate(per_type):
            for i in anchors(adj):
                open_node(t, i)
    degree = [adj.sum(axis=1) for _, adj, _, _ in per_type]
    index = np.zeros(n, dtype=np.int64)
    for ev, _, _, _ in per_type:
        index[ev] = np.arange(len(ev))
    timed_order = iter(first_fit_order(log, ticks, short_traces(log)).tolist())
    checks = 0
    while True:
        best = None
        if order == "time":
            for e in timed_order:
                t = int(log.codes[e])
                if not placed[t][index[e]]:
                    best = ((0, 0), t, int(index[e]))
                    break
        for t in range(len(per_type)):
            if order == "time":
                break
            left = np.nonzero(~placed[t])[0]
            if not left.size:
                continue
            free = blocked[t].shape[1] - blocked[t][left].sum(axis=1)
            j = int(np.lexsort((-degree[t][left], free))[0])
            key = (int(free[j]), -int(degree[t][left[j]]))
            if best is None or key < best[0]:
                best = (key, t, int(left[j]))
        if best is None:
            break
        _, t, i = best
        ev, adj, pf, sf = per_type[t]
        ok = np.nonzero(~blocked[t][i])[0]
        if max_checks is not None and checks >= max_checks:
            ok = ok[:0]
        grow = [
            float((np.maximum(vals[t][c][0], pf[i]) - vals[t][c][0]).sum())
            + float((np.maximum(vals[t][c][1], sf[i]) - vals[t][c][1]).sum())
            for c in ok.tolist()
        ]
        done = False
        if choice == "grow":
            ok = ok[np.argsort(grow, kind="stable")]
        for c in ok.tolist():
            q, e = int(merges.group[nodes[t][c]]), int(ev[i]) + 2
            if merges.doomed(q, e):
                blocked[t][i, c] = True
                continue
            checks += 1
            if merges.merge(q, e):
                np.maximum(vals[t][c][0], pf[i], out=vals[t][c][0])
                np.maximum(vals[t][c][1], sf[i], out=vals[t][c][1])
                blocked[t][:, c] |= adj[:, i]
                placed[t][i] = True
                members[t][c].append(i)
                done = True
                break
            blocked[t][i, c] = True
        if not done:
            open_node(t, i)
    return PartitionModel(log, merges.group[fine.part], fine.node_type).compact(), checks


def polished_line(
    model: PartitionModel,
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    seed: int,
    per_event: int,
) -> str:
    """``model`` polished as the engine does (``per_event`` checks per event, seed ``seed``),
    checked valid: "polished N (C CPU s)"."""
    c0 = time.process_time()
    checks = polish_budget(model.log.n_events, model.n_nodes, per_event)
    out = polish(model, codes, ticks, sides, np.random.default_rng(seed), checks)
    cpu = time.process_time() - c0
    assert broken(out, codes, ticks) == (0, 0)
    return f"polished {out.n_nodes} ({cpu:.1f} CPU s)"


def load(events: int) -> tuple[EventLog, TimedCodes, np.ndarray]:
    """``interleaved_log(events, default_rng(events))`` read as the benchmark does."""
    log, _, codes, ticks = load_conn(events)
    return log, codes, ticks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=600, help="interleaved_log's n")
    ap.add_argument("--seeds", default="1")
    ap.add_argument(
        "--paths",
        default="witness,untimed,main",
        help="comma list of: witness (the witness of the initial graph, repaired), "
        "untimed (the witness inside the untimed-refined nodes, repaired), "
        "checked (checked witness fit, --variant), guided (guided first fit), "
        "main (infer_perfume)",
    )
    ap.add_argument(
        "--variant", default="dsatur,grow,anchors", help="checked: order,choice,anchors|none"
    )
    ap.add_argument("--polish", type=int, default=8, help="polishing checks per event")
    args = ap.parse_args()
    paths = args.paths.split(",")
    log, codes, ticks = load(args.events)
    sides = timed_sides(log, codes, ticks)
    witness, cliques = witness_model(log, codes, ticks, sides)
    print(
        f"{log.n_events} events: cliques {sum(cliques)} {cliques}; witness {witness.n_nodes} "
        f"nodes, broken (time bounds, IntrBy) {broken(witness, codes, ticks)}"
    )
    for seed in [int(x) for x in args.seeds.split(",")]:
        if "witness" in paths:
            nodes, cpu = repaired(witness, codes, ticks, sides, seed, args.polish)
            print(f"seed {seed} witness: refined / coarsened / polished {nodes}, {cpu:.1f} CPU s")
        if "untimed" in paths:
            c0 = time.process_time()
            base = untimed_base(log, codes, np.random.default_rng(seed))
            inside, _ = witness_model(log, codes, ticks, sides, base)
            cpu0 = time.process_time() - c0
            nodes, cpu = repaired(inside, codes, ticks, sides, seed, args.polish)
            print(
                f"seed {seed} untimed: base {base.n_nodes}, witness inside {inside.n_nodes} "
                f"(broken {broken(inside, codes, ticks)}), refined / coarsened / polished "
                f"{nodes}, {cpu0 + cpu:.1f} CPU s"
            )
        if "checked" in paths:
            order, choice, seeded = args.variant.split(",")
            c0 = time.process_time()
            cf, spent = checked_fit(
                log, codes, ticks, sides, None, order, choice, seeded == "anchors"
            )
            c1 = time.process_time()
            line = polished_line(cf, codes, ticks, sides, seed, args.polish)
            print(
                f"seed {seed} checked {args.variant}: {cf.n_nodes} ({spent} checks, "
                f"{c1 - c0:.1f} CPU s), {line}"
            )
        if "guided" in paths:
            c0 = time.process_time()
            gf = guided(log, codes, ticks, sides, witness)
            c1 = time.process_time()
            line = polished_line(gf, codes, ticks, sides, seed, args.polish)
            print(f"seed {seed} guided: {gf.n_nodes} ({c1 - c0:.1f} CPU s), {line}")
        if "main" in paths:
            c0 = time.process_time()
            m = infer_perfume(log, codes, ticks, seed)
            print(f"seed {seed} main: {m.n_nodes}, {time.process_time() - c0:.1f} CPU s")


if __name__ == "__main__":
    main()
