"""An estimate of the real Synoptic's model size on a log (no ``synoptic.jar`` here).

Re-implements, from the description of its algorithm in ``Bisimulation.java``
(ModelInference/synoptic; read for the algorithm only, no code taken) and the FSE 2011
paper, the two steps that fix the size of Synoptic's model:

* *refinement* (``splitUntilAllInvsSatisfied`` / ``splitOnce``): per step, one
  counterexample per violated invariant (a shortest path here: :func:`~check.counterexample`),
  in a seeded random order; for each, the candidate splits at the node where the path stops
  being realised by the traces (outgoing, then incoming: :func:`~refine.candidate_splits`),
  shuffled; every candidate that alone makes its invariant hold is recorded, candidates on
  one node combined into a multi-way split (the events' signature over the recorded
  splits); all recorded multi-splits are applied at once; when none resolves its invariant,
  the first candidate seen is applied.  Until every invariant holds.
* *coarsening* (``mergePartitions``, k = 0): node pairs of one label in creation order
  (split-off parts are new, later nodes), the first merge that keeps every invariant
  applied, then the scan restarts; a merge that failed fails in every coarser model, so
  one pass in that order gives the same result.

The counterexample Synoptic's model checker returns and its ``Random`` draws are not
reproduced, so the result is one sample of what Synoptic gives; run several seeds.

Run: ``python benchmarks/synoptic_estimate.py [--seeds N] [--captures N ...] [--events N ...]``
(two capture files merged by connection as in ``bench_synoptic.py --sizes``, and generated
event logs ``event_log(n, default_rng(n + 1000 k))``).  Prints per log and seed the
refined and the coarsened node counts, statemine's model and the lower bound.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from statemine.infer.synoptic.check import InvariantCodes, violated
from statemine.infer.synoptic.coarsen import _Grouping
from statemine.infer.synoptic.invariants import mine_invariants
from statemine.infer.synoptic.log import EventLog
from statemine.infer.synoptic.model import PartitionModel
from statemine.infer.synoptic.refine import apply_split, candidate_splits, counterexample_of


def _one(inv: InvariantCodes, i: int) -> InvariantCodes:
    return InvariantCodes(inv.kind[i : i + 1], inv.a[i : i + 1], inv.b[i : i + 1])


def _holds(model: PartitionModel, inv: InvariantCodes) -> bool:
    adj = model.edge_counts() > 0
    return not violated(adj, model.node_type, inv, len(model.log.types), trim=False).any()


def _multi_split(model: PartitionModel, node: int, masks: list[np.ndarray]) -> PartitionModel:
    """Split ``node`` by the events' signature over ``masks`` (each a subset of it): the
    fibers in the order Synoptic's multi-split builds them, the first keeping the id."""
    in_node = model.part == node
    fibers = [masks[0] & in_node, in_node & ~masks[0]]
    for m in masks[1:]:
        fibers = [f & ~m for f in fibers] + [f & m for f in fibers]
        fibers = [f for f in fibers if f.any()]
    part = model.part.copy()
    extra = 0
    for f in fibers[1:]:
        part[f] = model.n_nodes + extra
        extra += 1
    node_type = np.concatenate([model.node_type, np.full(extra, model.node_type[node])])
    return PartitionModel(model.log, part, node_type)


def synoptic_refine(
    model: PartitionModel, inv: InvariantCodes, rng: np.random.Generator
) -> tuple[PartitionModel, int]:
    """Synoptic's refinement (module doc); returns the model and the number of steps."""
    n_types = len(model.log.types)
    steps = 0
    while True:
        adj = model.edge_counts() > 0
        bad = np.nonzero(violated(adj, model.node_type, inv, n_types, trim=False))[0]
        if bad.size == 0:
            return model, steps
        arbitrary = None
        chosen: dict[int, list[np.ndarray]] = {}
        for i in bad[rng.permutation(bad.size)].tolist():
            path = counterexample_of(model, adj, inv, i)
            assert path is not None
            cands = candidate_splits(model, path)
            for k in rng.permutation(len(cands)).tolist():
                mask = cands[k]
                if arbitrary is None:
                    arbitrary = mask
                if _holds(apply_split(model, mask), _one(inv, i)):
                    node = int(model.part[np.argmax(mask)])
                    chosen.setdefault(node, []).append(mask)
        if not chosen:
            assert arbitrary is not None
            model = apply_split(model, arbitrary)
        else:
            for node, masks in chosen.items():
                model = _multi_split(model, node, masks)
        steps += 1


def synoptic_coarsen(model: PartitionModel, inv: InvariantCodes) -> PartitionModel:
    """Synoptic's coarsening: same-label pairs in creation order, one pass (module doc)."""
    grouping = _Grouping(model, inv)
    nt = model.node_type
    for p in range(model.n_nodes):
        if nt[p] < 0 or grouping.group[p] != p:
            continue
        for q in np.nonzero(nt[p + 1 :] == nt[p])[0] + p + 1:
            if grouping.group[q] == q:
                grouping.try_merge(p, int(q))
    part = grouping.group[model.part]
    return PartitionModel(model.log, part, model.node_type.copy()).compact()


def estimate(log: EventLog, inv: InvariantCodes, seed: int) -> tuple[int, int, int, float]:
    """(refined nodes, coarsened nodes, refinement steps, CPU s) of one Synoptic run."""
    t0 = time.process_time()
    rng = np.random.default_rng(seed)
    refined, steps = synoptic_refine(PartitionModel.initial(log), inv, rng)
    model = synoptic_coarsen(refined, inv)
    assert _holds(model, inv)
    return refined.n_nodes, model.n_nodes, steps, time.process_time() - t0


def parse(args: list[str]) -> EventLog:
    """The log a ``statemine infer --engine synoptic`` command line reads."""
    from statemine.infer.synoptic.command import run_command

    return run_command("synoptic", [*args, "--noRefinement"]).result.log


def capture_log(n_events: int) -> EventLog:
    """The log of ``bench_synoptic.py --sizes``' two capture files of about ``n_events``."""
    import bench_synoptic as bench

    with tempfile.TemporaryDirectory() as tmp:
        paths = bench.write_captures(n_events, np.random.default_rng(n_events), Path(tmp))
        return parse(["-r", bench.CAPTURE_REGEX, "-m", bench.CAPTURE_MAPPING, *map(str, paths)])


def oracle_logs(names: list[str]) -> list[tuple[str, EventLog, int]]:
    """(case, log, the real Synoptic's nodes) of the shared oracle's cases ``names``."""
    import json

    from statemine.infer.synoptic.formats import read_dot

    oracle = Path(__file__).resolve().parents[2] / "shared" / "synoptic-oracle"
    out = []
    for name in names:
        case = oracle / name
        args = json.loads((case / "case.json").read_text())["args"]
        args = [str(case / a) if (case / a).is_file() else a for a in args]
        keep = [a for a, b in zip(args, ["", *args]) if a != "-o" and b != "-o"]
        out.append((name, parse(keep), read_dot(case / "model.dot").number_of_nodes()))
    return out


def main() -> None:
    import bench_synoptic as bench

    from statemine.infer.synoptic import infer_log
    from statemine.infer.synoptic.bounds import node_lower_bound

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--captures", type=int, nargs="*", default=[1_000, 3_000, 6_000])
    parser.add_argument("--events", type=int, nargs="*", default=[])
    parser.add_argument("--k", type=int, nargs="*", default=[0, 1, 2, 3])
    parser.add_argument("--oracle", nargs="*", default=[], help="shared oracle case names")
    opts = parser.parse_args()
    logs = [(f"two-captures-{n}", capture_log(n), -1) for n in opts.captures]
    for n in opts.events:
        for k in opts.k:
            traces = bench.event_log(n, np.random.default_rng(n + 1000 * k))
            logs.append((f"event-log-{n}-k{k}", EventLog.from_sequences(traces), -1))
    logs += oracle_logs(opts.oracle)
    print(
        f"{'log':22s} {'events':>7s} {'ours':>5s} {'bound':>5s} {'real':>5s}  "
        "synoptic estimate per seed: nodes (refined, steps, CPU s)"
    )
    for name, log, real in logs:
        inv = InvariantCodes.from_frame(
            mine_invariants(log), {t: i for i, t in enumerate(log.types)}
        )
        ours = infer_log(log, seed=1).model.n_nodes
        bound = node_lower_bound(log, inv)
        runs = [estimate(log, inv, s) for s in range(opts.seeds)]
        text = " ".join(f"{c}({r}r,{st}st,{t:.0f}s)" for r, c, st, t in runs)
        shown = "-" if real < 0 else str(real)
        print(
            f"{name:22s} {log.n_events:>7d} {ours:>5d} {bound:>5d} {shown:>5s}  {text}", flush=True
        )


if __name__ == "__main__":
    main()
