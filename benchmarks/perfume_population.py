"""A population of Perfume models bred by crossover (issue 31, session 28): an experiment,
not an engine path.

Polishing (``perfume_infer.polish``) is a walk over models of one size with rare exits;
with 21-85x the default's checks it stalls (docs/synoptic-engine.md, "How far the
search goes with more checks").  Here a small population of the engine's models (seeds
``seed`` to ``seed + population - 1``) is bred, as in Galinier and Hao's hybrid search
for graph colouring (J. Comb. Optim. 3, 1999): each generation crosses two members drawn
at random, polishes the child, and the child replaces the largest member when it has no
more nodes and is not a copy of one.

A crossover gives groups of events, each meant to be one node
(:func:`type_groups`, :func:`gpx_groups`).  The child (:func:`child`) starts from the
trace graph (one node per event: every invariant holds), merges each group's events
into its first one, each merge checked (``_TimedMerges``) and skipped when it breaks an
invariant, then places the events left over by first fit: valid by construction.

Run: ``python benchmarks/perfume_population.py --events 2000 --seed 1 --generations 10``
(the log is ``interleaved_log(events, default_rng(events))``; prints each generation's
nodes and the CPU seconds so far).  Results: docs/synoptic-engine.md, "A population with
crossover".
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_perfume import load_conn

from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.perfume_infer import (
    _Dissolved,
    _fit,
    first_fit_rank,
    infer_perfume,
    polish,
    polish_budget,
)
from statemine.infer.synoptic.timecheck import TimedCodes
from statemine.infer.synoptic.timeconflicts import Sides, timed_sides

Groups = Callable[[EventLog, PartitionModel, PartitionModel, np.random.Generator], list[np.ndarray]]


def type_groups(
    log: EventLog, a: PartitionModel, b: PartitionModel, rng: np.random.Generator
) -> list[np.ndarray]:
    """Per event type (in code order), every node of that type of one parent (``a`` with
    probability 1/2, one draw per type), as the arrays of their events, largest first.
    A node holds events of one type, so the groups cover every event once."""
    groups: list[np.ndarray] = []
    for t in range(len(log.types)):
        parent = a if rng.random() < 0.5 else b
        events = np.nonzero(log.codes == t)[0]
        nodes = parent.part[events]
        groups.extend(events[nodes == q] for q in np.unique(nodes))
    groups.sort(key=len, reverse=True)
    return groups


def gpx_groups(
    log: EventLog, a: PartitionModel, b: PartitionModel, rng: np.random.Generator
) -> list[np.ndarray]:
    """Galinier and Hao's greedy partition crossover on nodes: from the two parents in
    turn (the first drawn), the node with the most events not yet in a group gives those
    events as the next group, until no node has two.  Events left out are in no group.

    >>> from statemine.infer.synoptic.log import EventLog
    >>> log = EventLog.from_sequences([["x", "x", "x", "x"]])
    >>> a = PartitionModel(log, np.array([2, 2, 2, 3]), np.array([-1, -1, 0, 0]))
    >>> b = PartitionModel(log, np.array([2, 3, 3, 3]), np.array([-1, -1, 0, 0]))
    >>> [g.tolist() for g in gpx_groups(log, a, b, np.random.default_rng(0))]  # b first
    [[1, 2, 3]]
    """
    free = np.ones(log.n_events, dtype=bool)
    parts = (a.part, b.part)
    size = max(a.n_nodes, b.n_nodes)
    turn = int(rng.integers(2))
    groups: list[np.ndarray] = []
    while free.any():
        part = parts[turn]
        counts = np.bincount(part[free], minlength=size)
        q = int(counts.argmax())
        if counts[q] < 2:
            break
        events = np.nonzero(free & (part == q))[0]
        groups.append(events)
        free[events] = False
        turn ^= 1
    return groups


CROSSOVERS: dict[str, Groups] = {"type": type_groups, "gpx": gpx_groups}


def child(
    parent: PartitionModel,
    groups: list[np.ndarray],
    codes: TimedCodes,
    ticks: np.ndarray,
    sides: Sides,
    rank: np.ndarray,
) -> PartitionModel:
    """A valid model of ``parent``'s log built from ``groups`` (disjoint arrays of
    same-type events): from one node per event, each group's events (by ``rank``) merged
    into its first event's node where no time conflict and no invariant forbids it, in
    the groups' order; then the events left alone, by ``rank``, first fit into their
    type's nodes (groups' nodes first, in order) or kept as new nodes.  Every merge is
    checked, so the model is valid."""
    log = parent.log
    hood = _Dissolved.of(parent, codes, ticks, sides, np.arange(2, parent.n_nodes), rank)
    merges, pn, sn = hood.merges, hood.pn, hood.sn
    node = np.empty(log.n_events, dtype=np.int64)  # each event's node in ``hood``
    node[hood.events] = parent.n_nodes + np.arange(len(hood.events))
    placed: list[list[int]] = [[] for _ in log.types]
    alone = np.ones(log.n_events, dtype=bool)
    for events in groups:
        events = events[np.argsort(rank[events], kind="stable")]
        head = int(node[events[0]])
        placed[int(log.codes[events[0]])].append(head)
        alone[events[0]] = False
        for e in events[1:].tolist():
            alone[e] = not _fit(int(node[e]), [head], merges, pn, sn, sides.limit)
    rest = np.nonzero(alone)[0]
    for e in rest[np.argsort(rank[rest], kind="stable")].tolist():
        p = int(node[e])
        nodes = placed[int(log.codes[e])]
        if not _fit(p, nodes, merges, pn, sn, sides.limit):
            nodes.append(p)
    return hood.result()


def evolve(
    log: EventLog,
    codes: TimedCodes,
    ticks: np.ndarray,
    seed: int,
    population: int,
    generations: int,
    polish_checks: int,
    crossover: Groups,
    report: Callable[[str], None] | None = None,
) -> PartitionModel:
    """The smallest model of a population bred for ``generations`` generations: the
    members are ``infer_perfume`` with seeds ``seed`` on and ``polish_checks`` checks
    per event; each generation crosses two members (``crossover``), builds the
    :func:`child`, polishes it with ``polish_checks`` checks per event, and puts it in
    place of the largest member when it has no more nodes and is not a copy of one.
    Deterministic for a seed (the search's generator: ``default_rng(seed + 1000)``).
    ``report``: called with a line per member and generation."""
    sides = timed_sides(log, codes, ticks)
    rank = first_fit_rank(log, ticks)
    c0 = time.process_time()
    members = []
    for s in range(seed, seed + population):
        members.append(infer_perfume(log, codes, ticks, s, polish_checks=polish_checks))
        if report:
            report(f"seed {s}: {members[-1].n_nodes} ({time.process_time() - c0:.1f} CPU s)")
    if population < 2:
        return members[0]
    rng = np.random.default_rng(seed + 1000)
    for gen in range(1, generations + 1):
        i, j = rng.choice(population, 2, replace=False)
        sizes = [members[i].n_nodes, members[j].n_nodes]
        made = child(
            members[i], crossover(log, members[i], members[j], rng), codes, ticks, sides, rank
        )
        checks = polish_budget(log.n_events, made.n_nodes, polish_checks)
        new = polish(made, codes, ticks, sides, rng, checks)
        worst = max(range(population), key=lambda k: members[k].n_nodes)
        copy = any(np.array_equal(m.part, new.part) for m in members)
        if new.n_nodes <= members[worst].n_nodes and not copy:
            members[worst] = new
        if report:
            report(
                f"generation {gen}: {sizes[0]} x {sizes[1]} -> child {made.n_nodes}, "
                f"polished {new.n_nodes}; population {sorted(m.n_nodes for m in members)} "
                f"({time.process_time() - c0:.1f} CPU s)"
            )
    return min(members, key=lambda m: m.n_nodes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1000, help="interleaved_log's n")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--population", type=int, default=4)
    ap.add_argument("--generations", type=int, default=10)
    ap.add_argument("--polish", type=int, default=96, help="polishing checks per event")
    ap.add_argument("--crossover", choices=sorted(CROSSOVERS), default="type")
    ap.add_argument("--json", type=Path, help="write the best model's model.json here")
    args = ap.parse_args()
    log, frame, codes, ticks = load_conn(args.events)
    best = evolve(
        log,
        codes,
        ticks,
        args.seed,
        args.population,
        args.generations,
        args.polish,
        CROSSOVERS[args.crossover],
        lambda line: print(line, flush=True),
    )
    print(f"{log.n_events} events: best {best.n_nodes} nodes")
    if args.json:
        from statemine.infer.synoptic.formats import to_json

        args.json.write_text(to_json(best, frame))


if __name__ == "__main__":
    main()
