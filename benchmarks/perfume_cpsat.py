"""CP-SAT on Perfume's models (statemine/infer/synoptic/perfume_cpsat.py, issue 31).

Per connection log of ``bench_perfume.interleaved_log`` (seed = its size, the benchmark's
logs): events, ``perfume_lower_bound``, the engine's nodes (seed 1) and CPU seconds,
then per ``--budgets`` value the nodes after ``perfume_cpsat.polish`` from the engine's
model (``--exactBudget``; deterministic seconds) and its CPU seconds, each model checked
by the engine's checker; with ``--proof S``, CP-SAT's proven bound on the whole problem
within S deterministic seconds: under the caps of the engine's nodes per type
(``capped``) and made valid without caps (``bound``, :func:`perfume_cpsat.proved_bound`);
with ``--exact``, the caps of ``proved_bound(slack=None)`` instead, which cut off no
model smaller than the engine's, so an OPTIMAL answer is the exact minimum; with
``--type-bound S``, :func:`perfume_cpsat.type_relaxation_bound` (S deterministic seconds
per type, caps: the engine's nodes per type): its bound, the larger of it and
``perfume_lower_bound``, its per-type figures and CPU seconds; with ``--joint S``,
:func:`jointbound.joint_bound` from ``perfume_lower_bound`` (S deterministic seconds in
all; ``--joint-mode conflicts`` adds the conflict pairs, ``full`` deepens the exact
formulation instead; after ``--type-bound``, from its bound and per-type bounds): its
bound, the answers per total tried and CPU seconds; with ``--box``,
:func:`boxbound.box_bound` from ``perfume_lower_bound``'s per-type bounds (no solver):
its bound, the per-type bounds it raised, the extra nodes refuted, whether the search
finished, the budget vectors checked and CPU seconds (``--box-probes N``: shaving with
``N`` splits per vector that propagation does not refute); with ``--settle S``,
:func:`boxcuts.settle` (no engine): deepening on the total from the boxes' bound with
CP-SAT told what the boxes know, S deterministic seconds in all, up to ``--settle-high``
(the best valid model known; default the engine's), printing each target's answer
(``--box-probes``: shaving for the starting bound; ``--settle-depth K``: cases fix the
counts of the first K types only; ``--settle-low``: start from a bound proved before;
``--settle-cases``: most cases per target; ``--settle-old``: every case built alone;
``--settle-tree S``: :func:`boxcuts.tree_target`, S deterministic seconds per node above
the last level; ``--at-most N``: instead,
:func:`boxcuts.model_at_most` with N nodes, S deterministic seconds).  ``--lab FOLDER``: the shipped lab
folder's log of that size instead (``bench_perfume.lab_log``, seeded by its size, traces
of at most ``--max-trace`` events).

Run: ``python benchmarks/perfume_cpsat.py --sizes 601,1000 --budgets 10,30 --proof 30``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_perfume import TRACES, interleaved_log, lab_log, read_conn

from statemine.infer.synoptic import boxbound, boxcuts, jointbound, perfume_cpsat
from statemine.infer.synoptic.perfume_infer import infer_perfume
from statemine.infer.synoptic.timeconflicts import perfume_lower_bound


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (each CP-SAT run is a
    forked child: ``perfume_cpsat.isolated``)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def row(
    n: int,
    budgets: list[float],
    proof: float,
    exact: bool,
    type_bound: float = 0.0,
    joint: float = 0.0,
    joint_mode: str = "plain",
    lab: str = "",
    max_trace: int = 40,
    box: bool = False,
    box_probes: int = 0,
    settle: float = 0.0,
    settle_high: int = 0,
    settle_depth: int | None = None,
    settle_low: int | None = None,
    settle_cases: int = 400,
    at_most: int = 0,
    settle_old: bool = False,
    settle_tree: float = 0.0,
) -> str:
    """One log's figures as text (module doc); ``lab``: a lab folder's log."""
    rng = np.random.default_rng(n)
    text = lab_log(TRACES / lab, n, rng, max_trace) if lab else interleaved_log(n, rng)
    log, _, codes, ticks = read_conn(text)
    bound = perfume_lower_bound(log, codes, ticks)
    if box:
        from statemine.infer.synoptic.timeconflicts import perfume_type_bounds

        c0 = cpu()
        timed = perfume_type_bounds(log, codes, ticks)
        bb = boxbound.box_bound(log, codes, ticks, timed, probes=box_probes)
        spent = cpu() - c0
        raised = int(bb.per_type.sum() - np.maximum(timed, bb.per_type > 0).sum())
        return (
            f"{log.n_events:>6d} {bound:>5d} | box {bb.bound:>4d} (+{raised} per type, "
            f"+{bb.extra} extra) complete={bb.complete} checks {bb.checks} {spent:>7.2f}"
        )
    if settle > 0 and at_most > 0:
        c0 = cpu()
        name, found, det = boxcuts.model_at_most(log, codes, ticks, at_most, settle, 1)
        nodes = -1 if found is None else found.n_nodes
        return (
            f"{log.n_events:>6d} {bound:>5d} | at most {at_most}: {name}, model {nodes},"
            f" {det:.1f} det s, {cpu() - c0:>7.2f} cpu_s"
        )
    if settle > 0:
        c0 = cpu()
        high = settle_high or infer_perfume(log, codes, ticks, 1).n_nodes
        sett = boxcuts.settle(
            log,
            codes,
            ticks,
            high,
            settle,
            1,
            probes=box_probes,
            depth=settle_depth,
            report=lambda s: print(f"{s}, {cpu() - c0:.1f} cpu_s so far", flush=True),
            low=settle_low,
            max_cases=settle_cases,
            cheap=not settle_old,
            tree=settle_tree > 0,
            node_budget=settle_tree or 10.0,
        )
        spent = cpu() - c0
        asked = "nodes" if settle_tree > 0 else "budgets"  # the tree's or the list's cases
        tried = "; ".join(
            f"{n}: {k} {asked}, {ans}, {det:.0f} det s" for n, k, ans, det in sett.tries
        )
        return (
            f"{log.n_events:>6d} {bound:>5d} | settle [{sett.low}, {sett.high}] from high {high}"
            f" {spent:>7.2f} cpu_s [{tried}]"
        )
    c0 = cpu()
    model = infer_perfume(log, codes, ticks, 1)
    out = [f"{log.n_events:>6d} {bound:>5d} {model.n_nodes:>6d} {cpu() - c0:>7.2f}"]
    for budget in budgets:
        c0 = cpu()
        got = perfume_cpsat.polish(model, codes, ticks, budget, 1)
        spent = cpu() - c0
        ok = "" if perfume_cpsat.valid(got, codes, ticks) else " INVALID"
        out.append(f"{got.n_nodes:>5d} {spent:>7.2f}{ok}")
    if proof > 0:
        c0 = cpu()
        p = perfume_cpsat.proved_bound(model, codes, ticks, proof, 1, None if exact else 0)
        spent = cpu() - c0
        out.append(
            f"{p.solved.status:>8s} best {p.solved.nodes:>4d} capped {p.capped:>4d} "
            f"bound {p.bound:>4d} {spent:>7.2f}"
        )
    lows = None
    start = bound
    if type_bound > 0:
        c0 = cpu()
        _, counts = perfume_cpsat.slots_of(model)
        tb = perfume_cpsat.type_relaxation_bound(log, codes, ticks, counts, type_bound, 1)
        spent = cpu() - c0
        per = ",".join(f"{k}/{lo}/{c}" for k, lo, c in zip(tb.per_type, tb.lows, counts))
        out.append(f"type {tb.bound:>4d} max {max(tb.bound, bound):>4d} {spent:>7.2f} [{per}]")
        lows, start = tb.per_type, max(bound, tb.bound + tb.levels)
    if joint > 0:
        c0 = cpu()
        jb = jointbound.joint_bound(
            log,
            codes,
            ticks,
            joint,
            start,
            1,
            conflicts=joint_mode == "conflicts",
            full=joint_mode == "full",
            lows=lows,
        )
        spent = cpu() - c0
        tried = ",".join(f"{c}:{name}" for c, name in jb.status)
        out.append(f"joint {joint_mode} {jb.bound:>4d} {spent:>7.2f} [{tried}]")
    return " | ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="601,1000", help="events per log")
    parser.add_argument("--budgets", default="10,30", help="--exactBudget values (det. s)")
    parser.add_argument("--proof", type=float, default=0.0, help="det. s for the bound")
    parser.add_argument("--exact", action="store_true", help="caps that keep every smaller model")
    parser.add_argument("--type-bound", type=float, default=0.0, help="det. s per type")
    parser.add_argument("--joint", type=float, default=0.0, help="det. s for the joint bound")
    parser.add_argument("--joint-mode", default="plain", choices=["plain", "conflicts", "full"])
    parser.add_argument("--box", action="store_true", help="boxbound.box_bound only (no engine)")
    parser.add_argument("--box-probes", type=int, default=0, help="--box: shaving splits")
    parser.add_argument("--settle", type=float, default=0.0, help="det. s: boxcuts.settle")
    parser.add_argument("--settle-high", type=int, default=0, help="--settle: best model known")
    parser.add_argument("--settle-depth", type=int, default=None, help="--settle: types split")
    parser.add_argument("--settle-low", type=int, default=None, help="--settle: a proved bound")
    parser.add_argument("--settle-cases", type=int, default=400, help="--settle: cases at most")
    parser.add_argument(
        "--settle-old", action="store_true", help="--settle: build every case alone"
    )
    parser.add_argument(
        "--settle-tree", type=float, default=0.0, help="--settle: tree, det. s per node"
    )
    parser.add_argument("--at-most", type=int, default=0, help="--settle: model_at_most(N)")
    parser.add_argument("--lab", default="", help="a shipped lab folder (traces/FOLDER)")
    parser.add_argument("--max-trace", type=int, default=40, help="lab: longest trace taken")
    opts = parser.parse_args()
    budgets = [float(x) for x in opts.budgets.split(",") if x]
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        "events bound engine cpu_s | per budget: nodes cpu_s | proof"
        " | type bound, max, cpu_s [per type: bound/lows/engine]"
        " | joint mode, bound, cpu_s [total tried: answer]"
    )
    for n in [int(x) for x in opts.sizes.split(",")]:
        got = row(
            n,
            budgets,
            opts.proof,
            opts.exact,
            opts.type_bound,
            opts.joint,
            opts.joint_mode,
            opts.lab,
            opts.max_trace,
            opts.box,
            opts.box_probes,
            opts.settle,
            opts.settle_high,
            opts.settle_depth,
            opts.settle_low,
            opts.settle_cases,
            opts.at_most,
            opts.settle_old,
            opts.settle_tree,
        )
        print(got, flush=True)
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
