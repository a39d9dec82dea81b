"""Where a Perfume model's nodes come from (issue 31): a census of the engine's model of
one of ``bench_perfume``'s connection logs (``interleaved_log(n, default_rng(n))``).

Per type: events, nodes, the per-type lower bound (``timed_type_bounds``: cliques and
colourings of the time and cycle conflicts, or the untimed bound when larger), nodes of
one and of two events.  Per pair of same-type nodes, why merging the two alone (every
other node kept) fails: a *time conflict* (two of their events conflict, the pairwise
argument the bound counts), a merge that must fail (``_TimedMerges.doomed``) or one the
engine's merge check refutes; for the last two, which invariants the merged model breaks
(the engine's checker, every row): upper bounds timed from ``Init`` (AlwaysPrecedes,
first ``a`` only; AlwaysFollowedBy), AlwaysPrecedes upper bounds from other types, lower
bounds, IntrBy (its bounds or its untimed form), the untimed AFby/AP/NFby forms.  Pairs
that merge are counted too (the model is then not merge-minimal).

Run: ``python benchmarks/perfume_census.py --events 2000 --seed 1`` (about 30 CPU s at
2,000 events, 90 at 5,003).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_perfume import interleaved_log, read_conn

from statemine.infer.synoptic.bounds import type_lower_bounds
from statemine.infer.synoptic.check import violated_edges
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.perfume_infer import (
    _merge_state,
    _restore,
    _TimedMerges,
    infer_perfume,
)
from statemine.infer.synoptic.timecheck import (
    TimedCodes,
    bound_violations,
    intr_violations,
    timed_graph,
)
from statemine.infer.synoptic.timeconflicts import pair_conflicts, timed_sides, timed_type_bounds


def bound_kinds(frame, codes: TimedCodes) -> list[str]:
    """Per time bound of ``codes``: its census class (module doc)."""
    out = [""] * len(codes.bound_a)
    for i, row in enumerate(frame.to_dict("records")):
        k = int(codes.row_bound[i])
        if k < 0:
            continue
        if "Intr" in row["kind"]:
            out[k] = "IntrBy bound"
        elif row["bound"] != "upperbound":
            out[k] = "lower bound"
        else:
            kind = "AP" if "Prec" in row["kind"] else "AFby"
            out[k] = f"upper {kind} from {'Init' if row['first'] == 'Init' else 'other'}"
    return out


def broken(
    model: PartitionModel, part: np.ndarray, codes: TimedCodes, ticks: np.ndarray, kinds: list[str]
) -> set[str]:
    """The census classes (``kinds``: per time bound) of the invariants that the partition
    ``part`` of ``model``'s log (its node types; times ``ticks``) breaks."""
    log = model.log
    g = timed_graph(part, model.node_type, log, ticks)
    out: set[str] = set()
    n_types = len(log.types)
    if violated_edges(g.n, g.src, g.dst, g.node_type, codes.untimed, n_types).any():
        out.add("untimed")
    if intr_violations(g, codes).any():
        out.add("IntrBy untimed")
    out.update(kinds[k] for k in np.nonzero(bound_violations(g, codes, n_types))[0])
    return out


def census(
    log: EventLog, model: PartitionModel, frame, codes: TimedCodes, ticks: np.ndarray
) -> None:
    """Print the census of ``model`` of ``log`` (its invariants ``frame``, coded
    ``codes``; times ``ticks``; module doc)."""
    sides = timed_sides(log, codes, ticks)
    per_type = np.maximum(
        timed_type_bounds(log, sides, codes, ticks), type_lower_bounds(log, codes.untimed)
    )
    sizes = np.bincount(model.part, minlength=model.n_nodes)
    print("| type | events | nodes | per-type bound | 1-event nodes | 2-event nodes |")
    print("|---|---|---|---|---|---|")
    for t, name in enumerate(log.types):
        s = sizes[model.node_type == t]
        print(
            f"| {name} | {int((log.codes == t).sum())} | {len(s)} | {per_type[t]} "
            f"| {(s == 1).sum()} | {(s == 2).sum()} |"
        )
    kinds = bound_kinds(frame, codes)
    pn, sn = sides.node_values(model.part, model.n_nodes)
    merges = _TimedMerges(model, codes, ticks)
    pairs: Counter = Counter()
    why: Counter = Counter()
    alone: Counter = Counter()
    for t in range(len(log.types)):
        nodes = np.nonzero(model.node_type == t)[0].tolist()
        for i, p in enumerate(nodes):
            for q in nodes[i + 1 :]:
                if pair_conflicts(pn[[q]], sn[[q]], sides.limit, pn[p], sn[p])[0]:
                    pairs["time conflict"] += 1
                    continue
                doomed = merges.doomed(p, q)
                state = _merge_state(merges)
                if merges.merge(p, q):
                    _restore(merges, state)
                    pairs["merge holds"] += 1
                    continue
                pairs["must fail (doomed)" if doomed else "check refutes"] += 1
                merged = np.where(model.part == q, p, model.part)
                classes = broken(model, merged, codes, ticks, kinds)
                why.update(classes)
                if len(classes) == 1:
                    alone.update(classes)
    print("same-type pairs:", dict(pairs))
    print("refuted pairs breaking each class (a pair may break several):", dict(why))
    print("... breaking that class alone:", dict(alone))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    log, frame, codes, ticks = read_conn(
        interleaved_log(args.events, np.random.default_rng(args.events))
    )
    c0 = time.process_time()
    model = infer_perfume(log, codes, ticks, args.seed)
    cpu = time.process_time() - c0
    print(f"{log.n_events} events, seed {args.seed}: {model.n_nodes} nodes, {cpu:.1f} CPU s")
    census(log, model, frame, codes, ticks)


if __name__ == "__main__":
    main()
